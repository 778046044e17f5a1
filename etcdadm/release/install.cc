#include "etcdadm/release/install.h"

#include <archive.h>
#include <archive_entry.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "common/error.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "common/text.h"
#include "etcd/etcd_version.h"

namespace etcdadm {

namespace {

namespace stdfs = std::filesystem;

// No etcd binary comes close; a bigger entry is a broken or hostile archive.
constexpr uint64_t kMaxBinarySize = 1ull << 30;
constexpr size_t kChunk = 1 << 20;  // archive reads
// Staging dirs inside the install dir: <install-dir>/.etcdadm-install-<random>.
constexpr const char* kStagingPrefix = ".etcdadm-install-";
// A staging dir untouched for this long was left by an install that was killed; a younger one may
// belong to an install running now.
constexpr std::chrono::hours kStaleStagingAge{1};

const std::vector<std::string>& binary_names() {
  static const std::vector<std::string> names = {"etcd", "etcdctl", "etcdutl"};
  return names;
}

bool is_binary_name(const std::string& name) {
  const auto& n = binary_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

// A fresh 0700 directory inside the install dir: binaries are written and checked there, then
// renamed into place, so nothing wrong ever appears under the final names.
class StagingDir {
 public:
  explicit StagingDir(const std::string& install_dir) {
    path_ = install_dir + "/" + kStagingPrefix + random_suffix();
    if (::mkdir(path_.c_str(), 0700) != 0) throw_errno("cannot create", path_, errno);
  }
  ~StagingDir() {
    try {
      remove_all(path_);
    } catch (...) {
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Removes the staging dirs that installs killed mid-way left in install_dir (see kStaleStagingAge).
// Failing to is logged, never an error: they are only clutter.
void remove_stale_staging_dirs(const std::string& install_dir) {
  std::vector<std::pair<std::string, std::chrono::seconds>> stale;
  const auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (stdfs::directory_iterator it(install_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(kStagingPrefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    auto age =
        std::chrono::duration_cast<std::chrono::seconds>(now - std::chrono::system_clock::from_time_t(st.st_mtime));
    if (age >= kStaleStagingAge) stale.emplace_back(it->path().string(), age);
  }
  if (ec) spdlog::warn("cannot list {} for leftover staging dirs: {}", install_dir, ec.message());
  for (const auto& [path, age] : stale) {
    try {
      remove_all(path);
      spdlog::info("removed {}, left by an interrupted install (last modified {} min ago)", path,
                   std::chrono::duration_cast<std::chrono::minutes>(age).count());
    } catch (const std::exception& e) {
      spdlog::warn("cannot remove leftover staging dir {}: {}", path, e.what());
    }
  }
}

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};

// Extracts <top>/etcd, <top>/etcdctl and <top>/etcdutl (regular files only) into `dir`; nothing else
// in the tarball is written anywhere. Returns the names extracted.
std::vector<std::string> extract_binaries(const std::string& tarball, const std::string& top, const std::string& dir) {
  std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
  if (!a) throw Error(ErrorKind::kInternal, "archive_read_new failed");
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  auto corrupt = [&](const std::string& what) {
    const char* detail = archive_error_string(a.get());
    return Error(ErrorKind::kCorrupt,
                 "release tarball " + tarball + ": " + what + (detail ? ": " + std::string(detail) : ""),
                 "use an official etcd release tarball (etcd-v<ver>-linux-<arch>.tar.gz)");
  };
  if (archive_read_open_filename(a.get(), tarball.c_str(), kChunk) != ARCHIVE_OK) throw corrupt("cannot open it");

  std::vector<std::string> found;
  std::vector<char> buf(kChunk);
  for (;;) {
    archive_entry* entry = nullptr;
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) throw corrupt("cannot read the next entry");
    const char* raw = archive_entry_pathname(entry);
    std::string path = raw ? raw : "";
    std::string name = stdfs::path(strip_trailing_slashes(path)).filename().string();
    if (!is_binary_name(name)) continue;  // never extracted; the next header skips its data

    std::string rel = path;
    while (rel.rfind("./", 0) == 0) rel.erase(0, 2);
    bool dotdot = false;
    for (const auto& part : stdfs::path(rel)) dotdot = dotdot || part == "..";
    if (path.empty() || path[0] == '/' || dotdot) {
      throw Error(ErrorKind::kCorrupt, "release tarball " + tarball + " has an unsafe entry " + path,
                  "refusing to extract it; use an official etcd release tarball");
    }
    auto type = archive_entry_filetype(entry);
    if (type == AE_IFDIR && rel != top + "/" + name) continue;  // e.g. a directory named etcd elsewhere
    if (type != AE_IFREG || archive_entry_hardlink(entry) != nullptr) {
      throw Error(ErrorKind::kCorrupt, "release tarball " + tarball + ": " + path + " is not a regular file",
                  "refusing links for etcd binaries; use an official etcd release tarball");
    }
    if (rel != top + "/" + name) {
      spdlog::debug("release tarball {}: ignoring {}", tarball, path);
      continue;
    }
    if (std::find(found.begin(), found.end(), name) != found.end()) {
      throw Error(ErrorKind::kCorrupt, "release tarball " + tarball + " holds " + path + " twice");
    }
    AtomicFile out(dir + "/" + name, 0755);
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
      if (n < 0) throw corrupt("cannot read " + path);
      if (n == 0) break;
      if (out.bytes_written() + static_cast<uint64_t>(n) > kMaxBinarySize) throw corrupt(path + " is too large");
      out.write(buf.data(), static_cast<size_t>(n));
    }
    out.commit();
    found.push_back(name);
  }
  for (const char* required : {"etcd", "etcdctl"}) {
    if (std::find(found.begin(), found.end(), required) == found.end()) {
      throw Error(ErrorKind::kCorrupt, "release tarball " + tarball + " has no " + top + "/" + required,
                  "use an official etcd release tarball (etcd-v<ver>-linux-<arch>.tar.gz) for that version");
    }
  }
  return found;
}

// The binaries present in an existing directory (etcd and etcdctl required).
std::vector<std::string> binaries_in(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& name : binary_names()) {
    std::string p = dir + "/" + name;
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      found.push_back(name);
    } else if (name != "etcdutl") {
      throw Error(ErrorKind::kNotFound, p + " does not exist (or is not a regular file)",
                  "point --binaries-dir at a directory holding etcd and etcdctl");
    }
  }
  return found;
}

void copy_binary(const std::string& from, const std::string& to) {
  AtomicFile out(to, 0755);
  read_file_chunks(from, [&](const uint8_t* d, size_t n) { out.write(d, n); });
  out.commit();
}

// Every binary in `dir` reports the same version, equal to `want` when that is non-empty.
std::string check_versions(const std::string& dir, const std::vector<std::string>& names, const std::string& want,
                           const std::string& source, ErrorKind kind) {
  std::string etcd_version = binary_version(dir + "/etcd");
  if (!want.empty() && etcd_version != want) {
    throw Error(kind, "installed etcd reports " + etcd_version + ", expected " + want + " (from " + source + ")",
                kind == ErrorKind::kCorrupt ? "the release does not hold the version its name says; check --version "
                                              "and the release source"
                                            : "pass the version that directory holds to --version, or leave it empty");
  }
  for (const auto& name : names) {
    if (name == "etcd") continue;
    std::string v = binary_version(dir + "/" + name);
    if (v != etcd_version) {
      throw Error(kind, name + " reports " + v + " but etcd reports " + etcd_version + " (from " + source + ")",
                  "etcd and its tools must come from the same release");
    }
  }
  return etcd_version;
}

// What etcdadm last installed into an install dir from a verified tarball: the binaries' own
// SHA-256s, so that a later install of the same version (a join on an offline host) can use them
// without fetching anything, and never when one of them was changed since.
constexpr const char* kInstallManifest = ".etcdadm-installed.json";

void write_install_manifest(const std::string& install_dir, const std::string& version, const std::string& arch,
                            const FetchedTarball& dl, const std::vector<std::string>& names) {
  nlohmann::json j = {{"version", version},
                      {"arch", arch},
                      {"source", dl.source},
                      {"tarballSha256", sha256_of_file(dl.path)},
                      {"binaries", nlohmann::json::object()}};
  for (const auto& n : names) j["binaries"][n] = sha256_of_file(install_dir + "/" + n);
  write_file_atomic(install_dir + "/" + kInstallManifest, j.dump(2) + "\n", 0644, /*overwrite=*/true);
}

// install_dir's manifest when it records release `want` for spec's architecture.
std::optional<nlohmann::json> install_manifest_for(const ReleaseSpec& spec, const std::string& install_dir,
                                                   const std::string& want) {
  std::string path = install_dir + "/" + kInstallManifest;
  if (!path_exists(path)) return std::nullopt;
  try {
    auto j = nlohmann::json::parse(read_file(path));
    if (j.value("version", "") == want && j.value("arch", "") == release_arch(spec)) return j;
  } catch (const std::exception& e) {
    spdlog::debug("ignoring {}: {}", path, e.what());
  }
  return std::nullopt;
}

std::optional<InstalledRelease> reuse_verified_install(const ReleaseSpec& spec, const std::string& install_dir,
                                                       const std::string& want) {
  std::string path = install_dir + "/" + kInstallManifest;
  auto manifest = install_manifest_for(spec, install_dir, want);
  if (!manifest) return std::nullopt;
  const nlohmann::json& j = *manifest;
  try {
    // A tarball named by its digest is the one to install, whatever is there.
    if (!spec.sha256.empty() && j.value("tarballSha256", "") != spec.sha256) return std::nullopt;
    const auto& bins = j.at("binaries");
    if (!bins.contains("etcd") || !bins.contains("etcdctl")) return std::nullopt;
    InstalledRelease r;
    for (const auto& [name, digest] : bins.items()) {
      std::string bin = install_dir + "/" + name;
      if (!path_exists(bin) || sha256_of_file(bin) != digest.get<std::string>()) {
        spdlog::info("{} differs from what etcdadm installed there: installing etcd {} again", bin, want);
        return std::nullopt;
      }
      r.binaries.push_back(bin);
    }
    r.version = want;
    r.source = install_dir + " (installed from " + j.value("source", "?") + ", tarball SHA-256 " +
               j.value("tarballSha256", "?") + ")";
    r.from_cache = true;
    spdlog::info("etcd {} is already installed in {} from a verified release, every binary unchanged: nothing to fetch",
                 want, install_dir);
    return r;
  } catch (const std::exception& e) {
    spdlog::debug("ignoring {}: {}", path, e.what());
    return std::nullopt;
  }
}

}  // namespace

InstalledRelease install_release(const ReleaseSpec& spec, const std::string& install_dir_arg) {
  std::string install_dir = strip_trailing_slashes(install_dir_arg);
  InstalledRelease result;
  std::string want = spec.version.empty() ? std::string() : normalise_version(spec.version);
  make_dirs(install_dir);
  remove_stale_staging_dirs(install_dir);

  if (!spec.binaries_dir.empty()) {
    std::string from = strip_trailing_slashes(spec.binaries_dir);
    result.source = from;
    auto names = binaries_in(from);
    if (real_path(from) == real_path(install_dir)) {
      result.version = check_versions(install_dir, names, want, from, ErrorKind::kInvalidArgument);
      for (const auto& n : names) result.binaries.push_back(install_dir + "/" + n);
      spdlog::info("etcd {} already in {}", result.version, install_dir);
      return result;
    }
    if (std::all_of(names.begin(), names.end(),
                    [&](const std::string& n) { return same_file_contents(from + "/" + n, install_dir + "/" + n); })) {
      // A host installing again what it has (a member restored or joining again with its install
      // dir kept): checked, not copied and synced again.
      result.version = check_versions(install_dir, names, want, from, ErrorKind::kInvalidArgument);
      for (const auto& n : names) result.binaries.push_back(install_dir + "/" + n);
      spdlog::info("etcd {} in {} holds the same files as {}: nothing to copy", result.version, install_dir, from);
      return result;
    }
    StagingDir staging(install_dir);
    for (const auto& n : names) copy_binary(from + "/" + n, staging.path() + "/" + n);
    result.version = check_versions(staging.path(), names, want, from, ErrorKind::kInvalidArgument);
    for (const auto& n : names) {
      std::string dest = install_dir + "/" + n;
      if (::rename((staging.path() + "/" + n).c_str(), dest.c_str()) != 0) throw_errno("cannot install", dest, errno);
      result.binaries.push_back(dest);
    }
    fsync_dir(install_dir);
    ::unlink((install_dir + "/" + kInstallManifest).c_str());  // these binaries were not checked against a release
    spdlog::info("installed etcd {} from {} into {}", result.version, from, install_dir);
    return result;
  }

  if (want.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "no etcd version given", "pass --version (e.g. 3.5.17)");
  }
  if (!spec.skip_checksum) {
    if (auto reused = reuse_verified_install(spec, install_dir, want)) return *reused;
  }
  FetchedTarball dl = fetch_release(spec);
  result.source = dl.source;
  result.from_cache = dl.from_cache;
  std::string top = "etcd-v" + want + "-linux-" + release_arch(spec);
  StagingDir staging(install_dir);
  auto names = extract_binaries(dl.path, top, staging.path());
  result.version = check_versions(staging.path(), names, want, dl.source, ErrorKind::kCorrupt);
  for (const auto& n : names) {
    std::string dest = install_dir + "/" + n;
    if (::rename((staging.path() + "/" + n).c_str(), dest.c_str()) != 0) throw_errno("cannot install", dest, errno);
    result.binaries.push_back(dest);
  }
  fsync_dir(install_dir);
  // Only a verified tarball vouches for the binaries.
  if (!spec.skip_checksum)
    write_install_manifest(install_dir, result.version, release_arch(spec), dl, names);
  else
    ::unlink((install_dir + "/" + kInstallManifest).c_str());
  spdlog::info("installed etcd {} ({}) into {}", result.version, dl.path, install_dir);
  return result;
}

void check_release_available(const ReleaseSpec& spec, const std::string& install_dir) {
  if (!spec.binaries_dir.empty()) {
    binaries_in(strip_trailing_slashes(spec.binaries_dir));
    return;
  }
  if (!spec.tarball.empty()) {
    if (!path_exists(spec.tarball)) {
      throw Error(ErrorKind::kNotFound, "release tarball " + spec.tarball + " does not exist",
                  "check --release-tarball");
    }
    return;
  }
  if (path_exists(cached_tarball_path(spec))) return;  // verified again when it is installed
  // Installed here before from a verified tarball (install_release checks the binaries' digests).
  if (install_manifest_for(spec, strip_trailing_slashes(install_dir), normalise_version(spec.version))) return;
  check_release_source(spec);
}

std::string binary_version(const std::string& path) {
  std::string name = stdfs::path(strip_trailing_slashes(path)).filename().string();
  std::vector<std::string> argv = {path};
  argv.push_back(name == "etcd" ? "--version" : "version");
  RunOptions opts;  // no ETCDCTL_API: 3.4's etcdctl defaults to v3, 3.5+ would warn about it
  opts.timeout = std::chrono::seconds(10);
  ProcessResult r;
  try {
    r = run_process(argv, opts);
  } catch (const Error& e) {
    throw Error(ErrorKind::kExternalTool, "cannot run " + path + ": " + e.what(), "check that it is an etcd binary");
  }
  static const std::regex re(R"((?:^|\n)\s*etcd(?:ctl|utl)?\s+version:\s*v?(\S+))", std::regex::icase);
  std::smatch m;
  if (r.exit_code != 0 || r.timed_out || !std::regex_search(r.output, m, re)) {
    std::string how = r.timed_out ? "timed out" : "exited with " + std::to_string(r.exit_code);
    throw Error(ErrorKind::kExternalTool,
                "cannot tell the version of " + path + " (`" + argv[0] + " " + argv[1] + "` " + how + "): " + r.output,
                "check that it is an etcd binary built for this machine");
  }
  return m[1].str();
}

LocalEtcd find_local_etcd(const std::string& wanted, const std::string& explicit_path, const std::string& cache_dir,
                          const std::string& extract_dir) {
  if (!explicit_path.empty()) {
    if (!std::filesystem::is_regular_file(explicit_path) || ::access(explicit_path.c_str(), X_OK) != 0) {
      throw Error(ErrorKind::kNotFound, "--etcd-binary " + explicit_path + " is not an executable file");
    }
    return LocalEtcd{explicit_path, binary_version(explicit_path), "--etcd-binary"};
  }
  auto want = EtcdVersion::parse(wanted);
  if (!want) {
    throw Error(ErrorKind::kNotFound,
                "the etcd version to run is not known (" + (wanted.empty() ? "none recorded" : wanted) + ")",
                "give the etcd to start with --etcd-binary");
  }
  std::vector<std::string> looked;  // what was found where, for the error
  if (auto on_path = find_executable("etcd")) {
    std::string version = binary_version(*on_path);
    auto v = EtcdVersion::parse(version);
    if (v && v->same_minor(*want)) return LocalEtcd{*on_path, version, "PATH"};
    looked.push_back("PATH has etcd " + version + " (" + *on_path + ")");
  } else {
    looked.push_back("no etcd on PATH");
  }
  // The cache keeps one directory per version (cached_tarball_path): the wanted patch first, then
  // the newest other patch of its minor.
  check_cache_dir(strip_trailing_slashes(cache_dir));
  std::vector<EtcdVersion> cached;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(strip_trailing_slashes(cache_dir) + "/etcd", ec)) {
    std::string dir = entry.path().filename().string();
    auto v = EtcdVersion::parse(dir);
    if (dir.rfind('v', 0) == 0 && v && v->same_minor(*want)) cached.push_back(*v);
  }
  std::sort(cached.begin(), cached.end(), [&](const EtcdVersion& a, const EtcdVersion& b) {
    if ((a == *want) != (b == *want)) return a == *want;
    return a > b;
  });
  for (const auto& v : cached) {
    ReleaseSpec spec;
    spec.version = v.str();
    spec.cache_dir = cache_dir;
    spec.tarball = cached_tarball_path(spec);
    spec.progress = false;
    if (!path_exists(spec.tarball)) continue;
    try {
      install_release(spec, extract_dir);
      return LocalEtcd{extract_dir + "/etcd", binary_version(extract_dir + "/etcd"), spec.tarball};
    } catch (const Error& e) {
      looked.push_back("cached " + spec.tarball + " is unusable: " + e.what());
    }
  }
  if (cached.empty()) looked.push_back("no etcd " + want->minor_str() + " release in the cache " + cache_dir);
  throw Error(
      ErrorKind::kNotFound,
      "no etcd " + want->minor_str() + " binary to run a backup of etcd " + wanted + " (" + join_list(looked) + ")",
      "give one with --etcd-binary PATH, or put etcd " + want->str() +
          " in the cache with `etcdadm download --cache-only "
          "--version " +
          want->str() + " --cache-dir " + cache_dir + "`");
}

}  // namespace etcdadm
