// Putting etcd's binaries in place (init/join's install phase, `backup drill`'s etcd): from a
// release tarball fetched and verified by etcdadm/release/fetch.h, or from binaries that already
// exist in a directory (Debian packages, a golden image). Extraction uses libarchive; etcd,
// etcdctl and etcdutl (when present) are installed into the install dir atomically (temp name +
// rename, mode 0755), and each installed binary's version is checked against the requested one.
#pragma once

#include <string>
#include <vector>

#include "etcdadm/release/fetch.h"

namespace etcdadm {

struct InstalledRelease {
  std::string version;                // as the installed etcd reports it
  std::vector<std::string> binaries;  // full paths installed (etcd, etcdctl, etcdutl when present)
  std::string source;                 // URL, tarball or directory they came from
  bool from_cache = false;            // the tarball was already in the cache (verified again, against
                                      // the digest recorded in the cache when offline)
};

// Checks, without fetching or writing anything, that install_release(spec, install_dir) has
// something to install: binaries_dir holds etcd and etcdctl, the tarball exists, the cache or
// install_dir (its manifest) holds the release, or the release source has its tarball (a HEAD,
// or a stat for file://). Throws kNotFound naming the version and where it looked; a source that
// cannot answer now (unreachable) passes, since the install retries and says why it failed.
void check_release_available(const ReleaseSpec& spec, const std::string& install_dir);

// Download (unless binaries_dir is set) + extract + install into install_dir + version check.
// The binaries are written and version-checked in a staging dir inside install_dir
// (.etcdadm-install-<random>), then renamed into place one by one (a running etcd keeps its old
// file), so a failed install leaves install_dir as it was. Staging dirs that a killed install left
// behind are removed first (logged) once untouched for an hour; younger ones may be a concurrent
// install's. binaries_dir == install_dir only checks. spec.version may be empty with binaries_dir
// ("whatever is there"). Throws kCorrupt for a bad tarball or a release whose binaries report
// another version, kInvalidArgument when binaries_dir holds another version, kNotFound when
// binaries_dir lacks etcd or etcdctl, and what download_release throws.
InstalledRelease install_release(const ReleaseSpec& spec, const std::string& install_dir);

// The version a binary reports (`etcd --version` -> "etcd Version: 3.4.23", `etcdctl version` ->
// "etcdctl version: 3.4.23", `etcdutl version`). Throws kExternalTool when it cannot be run.
std::string binary_version(const std::string& path);

// An etcd server binary of a given minor already on this machine, for commands that start a
// private member (`backup drill`).
struct LocalEtcd {
  std::string path;
  std::string version;  // as it reports it
  std::string source;   // "--etcd-binary", "PATH", or the cached tarball it was extracted from
};
// Looks, in this order, at `explicit_path` (taken whatever its version: the caller checks that etcd
// may start on its data), the `etcd` on PATH, and the release cache under `cache_dir`: the
// `wanted` version's verified tarball, else the newest cached patch of the same minor, extracted
// into `extract_dir` (which must exist; the caller removes it). Throws kNotFound naming the
// version, where it looked and what it found there, with the commands that fix it.
LocalEtcd find_local_etcd(const std::string& wanted, const std::string& explicit_path, const std::string& cache_dir,
                          const std::string& extract_dir);

}  // namespace etcdadm
