// Getting etcd's binaries onto the machine (`etcdadm download`, init/join's install phase):
//   * a release tarball `etcd-v<ver>-linux-<arch>.tar.gz` fetched from <release-url>/v<ver>/ over
//     https, http or file:// (etcdadm's URL scheme), or a local tarball (air-gapped installs),
//     verified against a given SHA-256 or the release's SHA256SUMS file, kept in a cache;
//   * or binaries that already exist in a directory (Debian packages, a golden image).
// Extraction uses libarchive; etcd, etcdctl and etcdutl (when present) are installed into the
// install dir atomically (temp name + rename, mode 0755), and each installed binary's version is
// checked against the requested one.
#pragma once

#include <string>
#include <vector>

#include "common/http_client.h"

namespace etcdadm {

// The etcd project's release location (etcdadm's default, without the trailing /v<ver>).
inline constexpr const char* kDefaultReleaseUrl = "https://github.com/etcd-io/etcd/releases/download";
inline constexpr const char* kDefaultEtcdVersion = "3.5.17";

struct ReleaseSpec {
  std::string version = kDefaultEtcdVersion;     // "3.5.17"; a leading 'v' is accepted
  std::string release_url = kDefaultReleaseUrl;  // https://, http:// or file:// base
  std::string tarball;                           // a local release tarball: used instead of release_url
  std::string binaries_dir;                      // existing etcd/etcdctl[/etcdutl]: used instead of any tarball
  std::string sha256;                            // expected tarball SHA-256 (hex); empty = look it up in SHA256SUMS
  // No SHA256SUMS lookup, and an unverified tarball is accepted (the user asked for it explicitly);
  // an explicit sha256 is still checked.
  bool skip_checksum = false;
  std::string cache_dir = "/var/cache/etcdadm";
  std::string arch;  // amd64, arm64, ppc64le, s390x; empty = this machine's
  HttpOptions http;
  bool progress = true;  // show the download as common/progress.h shows long work (--progress, --log-format)
};

struct InstalledRelease {
  std::string version;                // as the installed etcd reports it
  std::vector<std::string> binaries;  // full paths installed (etcd, etcdctl, etcdutl when present)
  std::string source;                 // URL, tarball or directory they came from
  bool from_cache = false;            // the tarball was already in the cache (verified again, against
                                      // the digest recorded in the cache when offline)
};

// "3.5.17" from "v3.5.17" / "3.5.17"; throws kInvalidArgument for anything not N.N.N[-suffix].
std::string normalise_version(const std::string& version);

// This machine's architecture in etcd's release naming (uname: x86_64 -> amd64, aarch64 -> arm64).
std::string host_arch();

// etcd-v<ver>-linux-<arch>.tar.gz
std::string release_tarball_name(const std::string& version, const std::string& arch);

// <release_url>/v<ver>/etcd-v<ver>-linux-<arch>.tar.gz
std::string release_tarball_url(const ReleaseSpec& spec);

// <cache_dir>/etcd/v<ver>/etcd-v<ver>-linux-<arch>.tar.gz
std::string cached_tarball_path(const ReleaseSpec& spec);

// Makes sure a verified tarball is in the cache and returns its path. A cached tarball is
// re-verified (a corrupt cache entry is replaced, never used). Nothing unverified ever appears
// under the cache name (download to a temp name, check, rename).
// The expected SHA-256: spec.sha256, else the line for the tarball in <release_url>/v<ver>/SHA256SUMS
// (for spec.tarball: a SHA256SUMS file beside it). Throws kNotFound when there is none (unless
// skip_checksum) or the tarball does not exist (HTTP 404), kCorrupt on a mismatch, kUnavailable /
// kTimeout / kTls when the server cannot be reached (transient failures are retried first).
//
// Offline re-installs: a verified cache entry gets `<cached tarball>.sha256` ("<hex>  <name>"), the
// digest it was verified against. When the SHA256SUMS cannot be had (it does not exist, or its server
// is kUnavailable / kTimeout) and spec.sha256 is empty, a cached tarball is re-verified against that
// recorded digest instead (logged) — for a release URL, or a spec.tarball that is the cache entry
// itself; never for another local tarball. A cached tarball that no longer matches it is then
// deleted and kCorrupt thrown (nothing can verify a new copy). With a checksum source, the record
// never overrides it: spec.sha256 always wins, and a SHA256SUMS that disagrees with the record makes
// the entry be deleted and fetched again (logged). A SHA256SUMS without a line for the tarball is
// still kNotFound. With skip_checksum, a recorded digest is still checked (a mismatch -> fetched
// again) and an unverified download gets no record.
std::string download_release(const ReleaseSpec& spec);

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
