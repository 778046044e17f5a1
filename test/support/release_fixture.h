// etcd release tarballs for tests, without network: the binaries of the etcd under test (Debian's
// 3.4.23, or 3.5+ built from Go modules: see etcd_versions.h) packed the way the etcd project
// publishes them, in a directory that a file:// release URL points at:
//
//   <dir>/v3.6.16/etcd-v3.6.16-linux-amd64.tar.gz   (etcd-v3.6.16-linux-amd64/{README.md,etcd,etcdctl,etcdutl})
//   <dir>/v3.6.16/SHA256SUMS                         ("<hex>  etcd-v3.6.16-linux-amd64.tar.gz")
//
// Usage:
//   auto rel = test::make_local_release(tmp / "releases");
//   ReleaseSpec spec;
//   spec.release_url = rel.base_url;   // or spec.tarball = rel.tarball
//   spec.version = rel.version;
//   spec.cache_dir = tmp / "cache";
//   spec.progress = false;
//   install_release(spec, tmp / "bin");
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "test/support/etcd_versions.h"

namespace etcdadm::test {

struct LocalRelease {
  std::string base_url;  // file://<dir>: ReleaseSpec::release_url
  std::string dir;       // the directory given to make_local_release
  std::string version;   // "3.6.16" (what the packed etcd reports)
  std::string arch;      // this machine's, in etcd's naming ("amd64")
  std::string tarball;   // full path of <dir>/v<ver>/etcd-v<ver>-linux-<arch>.tar.gz
  std::string sha256;    // its SHA-256 (hex), also in <dir>/v<ver>/SHA256SUMS
};

// Packs the etcd under test's etcd, etcdctl (and etcdutl, 3.5+) as a release under `dir` (created
// when missing). The tarball is packed once for all test processes and runs (0.5 s for 3.4, a few
// seconds for 3.5+), in a cache keyed by the SHA-256 of its contents (ETCDADM_TEST_RELEASE_CACHE,
// default ~/.cache/etcdadm/test-releases), and copied for each call, so each call gets its own
// files that a test may modify or delete. Throws when the binaries are missing.
LocalRelease make_local_release(const std::string& dir);
// The same for the binaries of `etcd` (another pinned minor): several releases may share `dir`,
// as they share etcd's release URL (<dir>/v<ver>/...).
LocalRelease make_local_release(const std::string& dir, const EtcdRelease& etcd);

// One entry of a tar.gz written by write_tar_gz.
struct TarEntry {
  enum class Type { kFile, kDirectory, kSymlink, kHardlink };
  std::string path;  // stored as given, hostile ones included ("../etcd", "/etcd")
  Type type = Type::kFile;
  std::string source_file;  // kFile: the contents of this file...
  std::string contents;     // ...or these bytes when source_file is empty
  std::string link_target;  // kSymlink, kHardlink
  mode_t mode = 0755;

  static TarEntry file(std::string path, std::string contents, mode_t mode = 0755);
  static TarEntry copy_of(std::string path, std::string source_file);  // mode 0755
  static TarEntry directory(std::string path);
  static TarEntry symlink(std::string path, std::string target);
  static TarEntry hardlink(std::string path, std::string target);
};

// Writes a gzip'd (level 1) tar holding exactly `entries`, in order, with libarchive.
void write_tar_gz(const std::string& path, const std::vector<TarEntry>& entries);

// Writes <dir>/v<version>/etcd-v<version>-linux-<arch>.tar.gz holding `entries` (give paths under
// "etcd-v<version>-linux-<arch>/" for a well-formed release) and its SHA256SUMS, and returns the
// release's description. For broken or mislabelled releases (e.g. 3.4.23 binaries named 3.5.17).
LocalRelease write_release(const std::string& dir, const std::string& version, const std::string& arch,
                           const std::vector<TarEntry>& entries);

// Hex SHA-256 of a file.
std::string file_sha256(const std::string& path);

}  // namespace etcdadm::test
