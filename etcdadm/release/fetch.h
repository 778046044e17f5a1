// Fetching an etcd release (`etcdadm download`, the first half of init/join's install phase): a
// release tarball `etcd-v<ver>-linux-<arch>.tar.gz` from <release-url>/v<ver>/ over https, http or
// file:// (etcdadm's URL scheme), or a local tarball (air-gapped installs), verified against a
// given SHA-256 or the release's SHA256SUMS file, and kept in a cache. Putting its binaries in
// place is etcdadm/release/install.h.
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

// The tarball download_release put in the cache, and where it came from.
struct FetchedTarball {
  std::string path;    // in the cache
  std::string source;  // URL or local tarball
  bool from_cache = false;
};
FetchedTarball fetch_release(const ReleaseSpec& spec);

// spec.arch checked against etcd's release naming, or this machine's (host_arch).
std::string release_arch(const ReleaseSpec& spec);

// Throws kInvalidArgument for a release URL of another scheme, kNotFound when the release source
// says it has no tarball for the spec (a HEAD, or a stat for file://); passes when it has one or
// cannot say now (unreachable: the fetch retries and says why it failed).
void check_release_source(const ReleaseSpec& spec);

// The SHA-256 (hex) of a regular file; kNotFound when there is none.
std::string sha256_of_file(const std::string& path);

}  // namespace etcdadm
