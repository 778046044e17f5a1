# The Debian package: `cpack -G DEB` in the build dir (scripts/package.sh) makes
# etcdadm_<version>_amd64.deb with the binary, its manual page and bash completion (generated from
# the built binary's command tree), the templated sidecar unit, the docs and the examples.
# Runtime dependencies come from dpkg-shlibdeps, so `apt-get install ./etcdadm_*.deb` pulls exactly
# the libraries the binary links. Checked by test/package/deb_test.sh (control fields, file list,
# lintian, `etcdadm version` from an unpacked root).
include(GNUInstallDirs)

set(_generated ${CMAKE_BINARY_DIR}/packaging)
# Generated after the binary is linked: the man page and completion are what that binary says.
add_custom_command(
  OUTPUT ${_generated}/etcdadm.1.gz ${_generated}/etcdadm.bash ${_generated}/changelog.gz
  COMMAND ${CMAKE_COMMAND} -DETCDADM=$<TARGET_FILE:etcdadm> -DSOURCE=${CMAKE_SOURCE_DIR} -DOUT=${_generated}
          -P ${CMAKE_SOURCE_DIR}/packaging/generate_docs.cmake
  DEPENDS etcdadm ${CMAKE_SOURCE_DIR}/packaging/changelog ${CMAKE_SOURCE_DIR}/packaging/generate_docs.cmake
  COMMENT "etcdadm(1), bash completion and changelog for the package")
add_custom_target(package_docs ALL DEPENDS ${_generated}/etcdadm.1.gz ${_generated}/etcdadm.bash ${_generated}/changelog.gz)

set(_doc ${CMAKE_INSTALL_DATAROOTDIR}/doc/etcdadm)
install(FILES ${_generated}/etcdadm.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${_generated}/etcdadm.bash DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME etcdadm)
# Where Debian 12 packages put units (dh_installsystemd), whatever the install prefix.
install(FILES ${CMAKE_SOURCE_DIR}/docs/deploy/systemd/etcdadm-backup-sidecar@.service ${CMAKE_SOURCE_DIR}/docs/deploy/systemd/etcdadm-auto.service
        DESTINATION /lib/systemd/system)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright ${_generated}/changelog.gz DESTINATION ${_doc})
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${_doc})
file(GLOB _docs ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${_docs} DESTINATION ${_doc})
install(FILES ${CMAKE_SOURCE_DIR}/docs/deploy/systemd/sidecar.env.example ${CMAKE_SOURCE_DIR}/docs/deploy/cron/etcdadm-backup
              ${CMAKE_SOURCE_DIR}/docs/deploy/kubernetes/etcd-static-pod-with-backup-sidecar.yaml
              ${CMAKE_SOURCE_DIR}/docs/deploy/systemd/auto.env.example ${CMAKE_SOURCE_DIR}/docs/deploy/kubernetes/etcdadm-auto-static-pod.yaml
        DESTINATION ${_doc}/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME etcdadm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "etcdadm maintainers <etcdadm@lists.etcdadm.dev>")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/etcdadm/etcdadm")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Restores start etcd, and init/join install it (`etcdadm download`); neither is needed to back up.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "etcd-server, etcd-client, age")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "etcd backups, point-in-time restores and member lifecycle")
set(CPACK_PACKAGE_DESCRIPTION "etcdadm streams snapshots of a running etcd cluster over etcd's
Maintenance API into a versioned backup store (a local directory, S3, GCS,
Azure Blob or OpenStack Swift) that kops' etcd-manager can share, keeps a
change log for point-in-time restores, verifies, inspects and restores
backups without Go tools, and manages etcd members (init, join, reset).
It ships a templated systemd unit for the backup sidecar.")
include(CPack)
