#!/usr/bin/env bash
# Installs everything etcdadm needs to build and test on Debian 12, from Debian packages only.
# Idempotent: safe to run again; apt-get skips what is already there.
# --with-test-servers also installs what the tests run against: Swift (S3), the AWS CLI, age (the
# oracle for our age encryption), and the npm packages of the GCS emulator and Azurite.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
packages=(
  # toolchain; dpkg-dev's dpkg-shlibdeps gives the Debian package its dependencies (scripts/package.sh);
  # ccache keeps compiled objects between clones (CMakeLists.txt)
  build-essential cmake pkg-config git ca-certificates dpkg-dev ccache
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcurl4-openssl-dev libxml2-dev libssl-dev zlib1g-dev libzstd-dev libisal-dev libarchive-dev libyaml-cpp-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev libsqlite3-dev libcli11-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev
  # real etcd for the tests and the quick start, plus tools the tests use as oracles
  etcd-server etcd-client openssl procps python3 gzip zstd curl
)
with_test_servers=false
[ "${1:-}" = "--with-test-servers" ] && with_test_servers=true
if $with_test_servers; then
  # a real S3 server that verifies SigV4 (OpenStack Swift + s3api, with memcached for tempauth)
  # and the AWS CLI as an interop and signing oracle; python3-swiftclient's `swift` CLI is the
  # oracle of Swift's own API
  packages+=(python3-swift python3-swiftclient swift swift-proxy swift-account swift-container swift-object memcached awscli systemd age)
  # the Prometheus project's own text-format parser reads the sidecar's /metrics in the tests, and
  # its promtool evaluates the alert rules docs/sidecar.md gives (the server it brings is stopped below)
  packages+=(python3-prometheus-client prometheus)
  # Debian's package checker and the manual page renderer check the .deb (test/package/deb_test.sh)
  packages+=(lintian groff-base)
  # the container image made from it without a daemon (packaging/oci-image.sh: mmdebstrap, umoci)
  # and run by an OCI runtime (crun); the manifests read with PyYAML (test/package/oci_image_test.sh)
  packages+=(mmdebstrap umoci crun python3-yaml)
  # the format check (scripts/check-format.sh): .clang-format as Debian 12's clang-format 14 reads it
  packages+=(clang-format)
  # the robustness harness: hosts in network namespaces (ip), a skewed clock (libfaketime)
  packages+=(iproute2 libfaketime)
  # Node.js runs the GCS emulator (test/support/gcs_emulator); keep a Node.js the machine already has.
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all packages present"
else
  echo "install-deps.sh: installing ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Packages may enable services; tests start their own servers on free ports and want none of these.
if command -v systemctl >/dev/null 2>&1; then
  for svc in etcd memcached swift-proxy swift-account swift-container swift-object prometheus; do
    systemctl is-active --quiet "$svc" 2>/dev/null && systemctl stop "$svc" || true
  done
fi

$with_test_servers || exit 0
# npm packages of the test servers, pinned by their package-lock.json (skipped when already
# installed): the GCS emulator, and Azurite with Microsoft's Azure SDK as its oracle.
for npm_dir in gcs_emulator azurite; do
  emulator_dir="$(cd "$(dirname "$0")/.." && pwd)/test/support/$npm_dir"
  if [ ! -f "$emulator_dir/node_modules/.package-lock.json" ] ||
     [ "$emulator_dir/package-lock.json" -nt "$emulator_dir/node_modules/.package-lock.json" ]; then
    echo "install-deps.sh: npm ci in $emulator_dir"
    (cd "$emulator_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
done
