#include "etcdadm/release/fetch.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/progress.h"
#include "common/retry.h"
#include "common/sha256.h"
#include "common/text.h"

namespace etcdadm {

namespace {

namespace stdfs = std::filesystem;

const char* const kChecksumHint = "pass --release-sha256 <hex>, or --skip-release-checksum to install unverified";

using ByteFn = std::function<void(const char* data, size_t size)>;

std::string base_name(const std::string& path) { return stdfs::path(strip_trailing_slashes(path)).filename().string(); }

}  // namespace

std::string release_arch(const ReleaseSpec& spec) {
  if (spec.arch.empty()) return host_arch();
  static const std::regex re("^[a-z0-9_]+$");
  if (!std::regex_match(spec.arch, re)) {
    throw Error(ErrorKind::kInvalidArgument, "invalid architecture '" + spec.arch + "'",
                "use etcd's release naming: amd64, arm64, ppc64le or s390x");
  }
  return spec.arch;
}

namespace {

std::string release_dir_url(const ReleaseSpec& spec) {
  return strip_trailing_slashes(spec.release_url) + "/v" + normalise_version(spec.version);
}

bool is_http_url(const std::string& url) { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }

// file:///dir/x -> /dir/x (file://localhost/dir/x too).
std::optional<std::string> file_url_path(const std::string& url) {
  const std::string prefix = "file://";
  if (url.rfind(prefix, 0) != 0) return std::nullopt;
  std::string rest = url.substr(prefix.size());
  if (rest.rfind("localhost/", 0) == 0) rest = rest.substr(std::string("localhost").size());
  if (rest.empty() || rest[0] != '/') {
    throw Error(ErrorKind::kInvalidArgument, "file URL " + url + " has no absolute path",
                "write it as file:///absolute/path");
  }
  return rest;
}

void check_url_scheme(const std::string& url) {
  if (is_http_url(url) || url.rfind("file://", 0) == 0) return;
  throw Error(ErrorKind::kInvalidArgument, "unsupported release URL " + url,
              "use an https://, http:// or file:// URL, or --release-tarball for a local file");
}

// Streams a local file to `sink`; `on_size` learns its size first. A missing file is kNotFound.
void stream_file(const std::string& path, const std::function<void(uint64_t)>& on_size, const ByteFn& sink) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) throw Error(ErrorKind::kNotFound, path + " does not exist");
    throw_errno("cannot stat", path, errno);
  }
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::kInvalidArgument, path + " is not a regular file");
  if (on_size) on_size(static_cast<uint64_t>(st.st_size));
  read_file_chunks(path, [&](const uint8_t* data, size_t size) { sink(reinterpret_cast<const char*>(data), size); });
}

// Location header of a redirect, resolved against the URL that answered it.
std::string resolve_location(const std::string& base, const std::string& location) {
  if (is_http_url(location)) return location;
  UrlParts p = split_url(base);
  if (!location.empty() && location[0] == '/') return p.scheme + "://" + p.authority + location;
  std::string dir = p.path.substr(0, p.path.rfind('/') + 1);
  return p.scheme + "://" + p.authority + dir + location;
}

// GET `url`, following redirects (GitHub release assets live behind one). `restart` runs before
// every attempt, since a retry starts again from the first byte. 404 is kNotFound; 5xx, 408 and 429
// are retried (kUnavailable); other statuses fail at once (kUnavailable).
void fetch_http(const std::string& url, const HttpOptions& options, const std::function<void()>& restart,
                const ByteFn& sink) {
  HttpClient client(options);
  std::optional<Error> final_error;
  with_retries(RetryPolicy{}, "download of " + url, [&] {
    restart();
    std::string current = url;
    for (int hop = 0;; ++hop) {
      HttpRequest req;
      req.url = current;
      HttpResponse r = client.perform(req, sink);
      if (r.ok()) return;
      bool redirect = r.status == 301 || r.status == 302 || r.status == 303 || r.status == 307 || r.status == 308;
      if (redirect && !r.header("location").empty() && hop < 10) {
        current = resolve_location(current, r.header("location"));
        continue;
      }
      std::string msg = "GET " + url + ": HTTP " + std::to_string(r.status);
      if (r.status == 404) {
        final_error = Error(ErrorKind::kNotFound, msg + " (not found)", "check --version and --release-url");
        return;
      }
      Error e(ErrorKind::kUnavailable, msg, "check --release-url and that the server serves etcd releases");
      if (r.status >= 500 || r.status == 408 || r.status == 429) throw e;
      final_error = e;
      return;
    }
  });
  if (final_error) throw *final_error;
}

// HEAD `url`, following redirects: the final response, or nullopt when the server cannot be asked.
std::optional<HttpResponse> http_head(const std::string& url, const HttpOptions& options) {
  try {
    HttpClient client(options);
    std::string current = url;
    for (int hop = 0; hop < 10; ++hop) {
      HttpRequest req;
      req.method = "HEAD";
      req.url = current;
      HttpResponse r = client.perform(req);
      if (r.status >= 300 && r.status < 400 && !r.header("location").empty()) {
        current = resolve_location(current, r.header("location"));
        continue;
      }
      return r;
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// Size of an HTTP resource (for the progress bar only; nullopt when the server does not say).
std::optional<uint64_t> http_content_length(const std::string& url, const HttpOptions& options) {
  auto r = http_head(url, options);
  if (!r || !r->ok() || r->header("content-length").empty()) return std::nullopt;
  try {
    return std::stoull(r->header("content-length"));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Whether the release source has the tarball, asked without fetching it (a HEAD, or a stat for
// file://): nullopt when it cannot say now (unreachable, an answer other than 2xx or 404).
std::optional<bool> release_tarball_exists(const ReleaseSpec& spec) {
  std::string source = release_tarball_url(spec);
  if (!is_http_url(source)) {
    struct stat st {};
    return ::stat(file_url_path(source).value_or(source).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  std::optional<HttpResponse> r;
  try {
    with_retries(RetryPolicy{}, "HEAD " + source, [&] {
      r = http_head(source, spec.http);
      if (!r || r->status >= 500 || r->status == 408 || r->status == 429) {
        throw Error(ErrorKind::kUnavailable, "HEAD " + source + ": no answer");
      }
    });
  } catch (const Error&) {
    return std::nullopt;
  }
  if (r->ok()) return true;
  if (r->status == 404) return false;
  return std::nullopt;
}

Error release_not_found(const ReleaseSpec& spec) {
  return Error(ErrorKind::kNotFound,
               "etcd " + normalise_version(spec.version) + " for linux-" + release_arch(spec) + " is not at " +
                   release_tarball_url(spec) + " (the release source has no such tarball)",
               "check --version (etcd's releases: https://github.com/etcd-io/etcd/releases) and --release-url; "
               "--release-tarball or --binaries-dir install without a release source");
}

// Streams an https/http/file URL or a plain local path to `sink`.
void fetch(const std::string& source, const HttpOptions& options,
           const std::function<void(std::optional<uint64_t>)>& restart, const ByteFn& sink, bool want_size = false) {
  if (is_http_url(source)) {
    std::optional<uint64_t> size = want_size ? http_content_length(source, options) : std::nullopt;
    fetch_http(
        source, options, [&] { restart(size); }, sink);
    return;
  }
  std::string path = file_url_path(source).value_or(source);
  stream_file(
      path, [&](uint64_t size) { restart(size); }, sink);
}

// The whole (small) resource, or nullopt when it does not exist.
std::optional<std::string> fetch_small(const std::string& source, const HttpOptions& options) {
  std::string out;
  try {
    fetch(
        source, options, [&](std::optional<uint64_t>) { out.clear(); },
        [&](const char* data, size_t size) {
          if (out.size() + size > (1 << 20)) throw Error(ErrorKind::kCorrupt, source + " is larger than 1 MiB");
          out.append(data, size);
        });
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kNotFound) return std::nullopt;
    throw;
  }
  return out;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

// The hash for `name` in a SHA256SUMS file ("<hex>  <name>" or "<hex> *<name>" per line).
std::optional<std::string> find_in_sums(const std::string& sums, const std::string& name) {
  std::istringstream in(sums);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string hex, file;
    if (!(fields >> hex >> file)) continue;
    if (!file.empty() && file[0] == '*') file.erase(0, 1);
    if (file.rfind("./", 0) == 0) file.erase(0, 2);
    if (file == name && is_sha256_hex(hex)) return ascii_lower(hex);
  }
  return std::nullopt;
}

struct Expected {
  std::optional<std::string> sha256;  // nullopt with skip_checksum, or when `missing` is set
  std::string from;                   // where it came from, for log lines
  bool given = false;                 // from --release-sha256
  // The SHA256SUMS could not be read (it does not exist, or its server cannot be reached): the error
  // to report unless the digest recorded in the cache can stand in for it.
  std::optional<Error> missing;
};

Expected expected_sha256(const ReleaseSpec& spec, const std::string& name) {
  if (!spec.sha256.empty()) {
    std::string hex = ascii_lower(spec.sha256);
    if (!is_sha256_hex(hex)) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--release-sha256 '" + spec.sha256 + "' is not a SHA-256 (64 hex digits)");
    }
    return {hex, "--release-sha256", true, std::nullopt};
  }
  if (spec.skip_checksum) return {std::nullopt, "nowhere (checksum skipped)", false, std::nullopt};
  std::string sums_source, lookup_name;
  if (!spec.tarball.empty()) {
    sums_source = parent_dir(spec.tarball) + "/SHA256SUMS";
    lookup_name = base_name(spec.tarball);
  } else {
    sums_source = release_dir_url(spec) + "/SHA256SUMS";
    lookup_name = name;
  }
  std::optional<std::string> sums;
  try {
    sums = fetch_small(sums_source, spec.http);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnavailable && e.kind() != ErrorKind::kTimeout) throw;
    return {std::nullopt, sums_source, false, e};
  }
  if (!sums) {
    // Neither the sums nor the tarball (and nothing cached to go by): there is no such release,
    // and skipping the checksum would not make one.
    if (spec.tarball.empty() && !path_exists(cached_tarball_path(spec)) && release_tarball_exists(spec) == false) {
      throw release_not_found(spec);
    }
    return {std::nullopt, sums_source, false,
            Error(ErrorKind::kNotFound, "no SHA-256 for " + lookup_name + ": " + sums_source + " does not exist",
                  kChecksumHint)};
  }
  // A SHA256SUMS that can be read but does not list the tarball vouches for nothing: no fallback.
  auto hex = find_in_sums(*sums, lookup_name);
  if (!hex) {
    throw Error(ErrorKind::kNotFound, "no SHA-256 for " + lookup_name + ": " + sums_source + " has no line for it",
                kChecksumHint);
  }
  return {hex, sums_source, false, std::nullopt};
}

}  // namespace

std::string sha256_of_file(const std::string& path) {
  Sha256 h;
  stream_file(path, nullptr, [&](const char* d, size_t n) { h.update(d, n); });
  return to_hex(h.finish());
}

namespace {

// "<cached tarball>.sha256" ("<hex>  <name>\n"): the digest a cache entry was verified against
// when it was stored, so that it can be verified again on a host that cannot reach any checksum
// source. Only verified entries have one.
std::string record_path(const std::string& cache_path) { return cache_path + ".sha256"; }

// The recorded digest, or nullopt when there is none (an unreadable or malformed record is ignored).
std::optional<std::string> read_record(const std::string& cache_path) {
  std::string path = record_path(cache_path);
  std::optional<std::string> text;
  try {
    text = fetch_small(path, HttpOptions{});
  } catch (const std::exception& e) {
    spdlog::warn("ignoring {}: {}", path, e.what());
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  std::istringstream fields(*text);
  std::string hex, file, extra;
  if (fields >> hex >> file && !(fields >> extra) && is_sha256_hex(hex) && file == base_name(cache_path)) {
    return ascii_lower(hex);
  }
  spdlog::warn("ignoring {}: it does not hold \"<sha256>  {}\"", path, base_name(cache_path));
  return std::nullopt;
}

// Records `hex` for the cache entry unless that is what is recorded already. Failing to is not an
// error: the entry only loses its offline re-verification.
void record_digest(const std::string& cache_path, const std::string& hex) {
  if (read_record(cache_path) == hex) return;
  try {
    write_file_atomic(record_path(cache_path), hex + "  " + base_name(cache_path) + "\n");
  } catch (const std::exception& e) {
    spdlog::warn("cannot record the SHA-256 of {} ({}); it cannot be re-verified without a checksum source", cache_path,
                 e.what());
  }
}

// Removes a cache entry and its record (missing ones are fine).
void drop_cache_entry(const std::string& cache_path) {
  for (const std::string& p : {cache_path, record_path(cache_path)}) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) throw_errno("cannot remove", p, errno);
  }
}

}  // namespace

FetchedTarball fetch_release(const ReleaseSpec& spec) {
  check_cache_dir(strip_trailing_slashes(spec.cache_dir));  // its tarballs become binaries we run
  std::string arch = release_arch(spec);
  std::string name = release_tarball_name(spec.version, arch);
  std::string cache_path = cached_tarball_path(spec);
  bool local = !spec.tarball.empty();
  std::string source = local ? spec.tarball : release_tarball_url(spec);
  if (!local) {
    check_url_scheme(source);
  } else if (!path_exists(spec.tarball)) {
    throw Error(ErrorKind::kNotFound, "release tarball " + spec.tarball + " does not exist", "check --release-tarball");
  }

  Expected expected = expected_sha256(spec, name);
  // --release-tarball naming the cache entry itself: check it, never delete it.
  bool names_cache_entry = local && real_path(spec.tarball) == real_path(cache_path);

  if (expected.missing) {
    // No checksum source: the digest recorded when the cache entry was verified stands in for it.
    // A local tarball elsewhere is the one to install, so the cache cannot vouch for it.
    if ((local && !names_cache_entry) || !path_exists(cache_path)) throw *expected.missing;
    auto recorded = read_record(cache_path);
    if (!recorded) throw *expected.missing;
    std::string actual = sha256_of_file(cache_path);
    if (actual != *recorded) {
      if (!names_cache_entry) drop_cache_entry(cache_path);
      throw Error(ErrorKind::kCorrupt,
                  "cache entry " + cache_path + " is damaged: its SHA-256 is " + actual + ", " + *recorded +
                      " was recorded when it was verified" + (names_cache_entry ? "" : " (it was deleted)") +
                      "; it cannot be fetched again without a checksum: " + expected.missing->what(),
                  "restore access to " + expected.from + ", or pass --release-sha256 <hex>");
    }
    spdlog::warn("{}; using cached {}, verified against the SHA-256 {} recorded in the cache when it was stored",
                 expected.missing->what(), cache_path, actual);
    return {cache_path, source, true};
  }

  if (names_cache_entry) {
    std::string actual = sha256_of_file(cache_path);
    if (expected.sha256 && actual != *expected.sha256) {
      throw Error(ErrorKind::kCorrupt,
                  cache_path + " failed the SHA-256 check: expected " + *expected.sha256 + ", got " + actual);
    }
    if (expected.sha256) record_digest(cache_path, actual);
    return {cache_path, source, true};
  }

  if (path_exists(cache_path)) {
    auto recorded = read_record(cache_path);
    if (!expected.sha256 && !local) {
      // --skip-release-checksum: a cached tarball is trusted for a URL source (a local tarball the user names
      // is the one to install, so it is copied again), unless it no longer matches its record.
      if (!recorded) {
        spdlog::warn("using cached {} without a checksum (--skip-release-checksum)", cache_path);
        return {cache_path, source, true};
      }
      std::string actual = sha256_of_file(cache_path);
      if (actual == *recorded) {
        spdlog::info("using cached {} (--skip-release-checksum; SHA-256 {} as recorded in the cache)", cache_path,
                     actual);
        return {cache_path, source, true};
      }
      spdlog::warn("cached {} has SHA-256 {}, {} was recorded: deleting it and fetching it again", cache_path, actual,
                   *recorded);
    } else if (expected.sha256) {
      if (!expected.given && recorded && *recorded != *expected.sha256) {
        spdlog::warn(
            "{} now gives SHA-256 {} for {}, but {} was recorded when the cache stored it: deleting {} and "
            "fetching it again",
            expected.from, *expected.sha256, name, *recorded, cache_path);
      } else {
        std::string actual = sha256_of_file(cache_path);
        if (actual == *expected.sha256) {
          if (recorded != actual) record_digest(cache_path, actual);
          spdlog::info("using cached {} (SHA-256 {} verified against {})", cache_path, actual, expected.from);
          return {cache_path, source, true};
        }
        spdlog::warn("cached {} has SHA-256 {}, expected {}: deleting it and fetching it again", cache_path, actual,
                     *expected.sha256);
      }
    }
  }
  // Also removes a record left without its tarball: the new entry gets one only once verified.
  drop_cache_entry(cache_path);

  make_dirs(parent_dir(cache_path));
  spdlog::info("fetching {} from {}", name, source);
  std::unique_ptr<AtomicFile> file;
  std::optional<Sha256> hash;
  // Shown as every long piece of work is (common/progress.h: --progress, --log-format json); each
  // attempt of a retried download counts from zero.
  const bool show_progress = spec.progress && progress_shown();
  std::optional<Progress> progress;
  fetch(
      source, spec.http,
      [&](std::optional<uint64_t> total) {
        file = std::make_unique<AtomicFile>(cache_path, 0644, /*overwrite=*/true);
        hash.emplace();
        progress.reset();
        if (show_progress) progress.emplace("download of " + name, ProgressUnit::kBytes, total.value_or(0));
      },
      [&](const char* data, size_t size) {
        hash->update(data, size);
        file->write(data, size);
        if (progress) progress->add(size);
      },
      /*want_size=*/show_progress);
  if (progress) progress->finish();
  std::string actual = to_hex(hash->finish());
  if (expected.sha256 && actual != *expected.sha256) {
    throw Error(
        ErrorKind::kCorrupt,
        name + " from " + source + " failed the SHA-256 check: expected " + *expected.sha256 + ", got " + actual,
        expected.given ? "check the value given to --release-sha256"
                       : "the download is damaged or was tampered with; try again");
  }
  file->commit();
  if (expected.sha256) {
    record_digest(cache_path, actual);
    spdlog::info("verified {} (SHA-256 {}, from {})", cache_path, actual, expected.from);
  } else {
    spdlog::warn("stored {} UNVERIFIED (SHA-256 {}; --skip-release-checksum)", cache_path, actual);
  }
  return {cache_path, source, false};
}

std::string normalise_version(const std::string& version) {
  static const std::regex re(R"(^v?(\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)$)");
  std::smatch m;
  if (!std::regex_match(version, m, re)) {
    throw Error(ErrorKind::kInvalidArgument, "invalid etcd version '" + version + "'",
                "give a release version such as 3.5.17 (a leading v is fine)");
  }
  return m[1].str();
}

std::string host_arch() {
  utsname u{};
  if (::uname(&u) != 0) throw_errno("uname failed for", "this machine", errno);
  std::string m = u.machine;
  if (m == "x86_64" || m == "amd64") return "amd64";
  if (m == "aarch64" || m == "arm64") return "arm64";
  if (m == "ppc64le" || m == "s390x") return m;
  throw Error(ErrorKind::kInvalidArgument, "etcd publishes no release for this machine's architecture (" + m + ")",
              "pass --binaries-dir with etcd binaries built for it");
}

std::string release_tarball_name(const std::string& version, const std::string& arch) {
  return "etcd-v" + normalise_version(version) + "-linux-" + (arch.empty() ? host_arch() : arch) + ".tar.gz";
}

std::string release_tarball_url(const ReleaseSpec& spec) {
  return release_dir_url(spec) + "/" + release_tarball_name(spec.version, release_arch(spec));
}

std::string cached_tarball_path(const ReleaseSpec& spec) {
  return strip_trailing_slashes(spec.cache_dir) + "/etcd/v" + normalise_version(spec.version) + "/" +
         release_tarball_name(spec.version, release_arch(spec));
}

std::string download_release(const ReleaseSpec& spec) { return fetch_release(spec).path; }

void check_release_source(const ReleaseSpec& spec) {
  check_url_scheme(release_tarball_url(spec));
  if (release_tarball_exists(spec) == false) throw release_not_found(spec);
}

}  // namespace etcdadm
