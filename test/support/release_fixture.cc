#include "test/support/release_fixture.h"

#include "test/support/etcd_versions.h"

#include <archive.h>
#include <archive_entry.h>

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "common/fs.h"
#include "common/sha256.h"
#include "etcdadm/release/fetch.h"
#include "test/support/test_env.h"

namespace etcdadm::test {

namespace {

struct ArchiveWriteCloser {
  void operator()(archive* a) const { archive_write_free(a); }
};

void check(archive* a, int rc, const std::string& what) {
  if (rc != ARCHIVE_OK) {
    const char* detail = archive_error_string(a);
    throw std::runtime_error("write_tar_gz: " + what + ": " + (detail ? detail : "?"));
  }
}

std::string tarball_path(const std::string& dir, const std::string& version, const std::string& arch) {
  return dir + "/v" + version + "/" + release_tarball_name(version, arch);
}

void write_sums(const LocalRelease& r) {
  write_file_atomic(parent_dir(r.tarball) + "/SHA256SUMS",
                    r.sha256 + "  " + release_tarball_name(r.version, r.arch) + "\n");
}

}  // namespace

TarEntry TarEntry::file(std::string path, std::string contents, mode_t mode) {
  TarEntry e;
  e.path = std::move(path);
  e.contents = std::move(contents);
  e.mode = mode;
  return e;
}

TarEntry TarEntry::copy_of(std::string path, std::string source_file) {
  TarEntry e;
  e.path = std::move(path);
  e.source_file = std::move(source_file);
  return e;
}

TarEntry TarEntry::directory(std::string path) {
  TarEntry e;
  e.path = std::move(path);
  e.type = Type::kDirectory;
  return e;
}

TarEntry TarEntry::symlink(std::string path, std::string target) {
  TarEntry e;
  e.path = std::move(path);
  e.type = Type::kSymlink;
  e.link_target = std::move(target);
  return e;
}

TarEntry TarEntry::hardlink(std::string path, std::string target) {
  TarEntry e = symlink(std::move(path), std::move(target));
  e.type = Type::kHardlink;
  return e;
}

std::string file_sha256(const std::string& path) {
  std::string data = read_file(path);
  return to_hex(sha256_of(data.data(), data.size()));
}

void write_tar_gz(const std::string& path, const std::vector<TarEntry>& entries) {
  std::unique_ptr<archive, ArchiveWriteCloser> a(archive_write_new());
  check(a.get(), archive_write_add_filter_gzip(a.get()), "gzip filter");
  check(a.get(), archive_write_set_filter_option(a.get(), "gzip", "compression-level", "1"), "gzip level");
  check(a.get(), archive_write_set_format_pax_restricted(a.get()), "tar format");
  check(a.get(), archive_write_open_filename(a.get(), path.c_str()), "open " + path);
  for (const auto& e : entries) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(entry.get(), e.path.c_str());
    archive_entry_set_perm(entry.get(), e.mode);
    archive_entry_set_mtime(entry.get(), std::time(nullptr), 0);
    std::string contents = e.contents;
    if (e.type == TarEntry::Type::kFile && !e.source_file.empty()) contents = read_file(e.source_file);
    switch (e.type) {
      case TarEntry::Type::kFile:
        archive_entry_set_filetype(entry.get(), AE_IFREG);
        archive_entry_set_size(entry.get(), static_cast<la_int64_t>(contents.size()));
        break;
      case TarEntry::Type::kDirectory:
        archive_entry_set_filetype(entry.get(), AE_IFDIR);
        break;
      case TarEntry::Type::kSymlink:
        archive_entry_set_filetype(entry.get(), AE_IFLNK);
        archive_entry_set_symlink(entry.get(), e.link_target.c_str());
        break;
      case TarEntry::Type::kHardlink:
        archive_entry_set_filetype(entry.get(), AE_IFREG);
        archive_entry_set_hardlink(entry.get(), e.link_target.c_str());
        archive_entry_set_size(entry.get(), 0);
        break;
    }
    check(a.get(), archive_write_header(a.get(), entry.get()), "header of " + e.path);
    if (e.type == TarEntry::Type::kFile && !contents.empty()) {
      la_ssize_t n = archive_write_data(a.get(), contents.data(), contents.size());
      if (n != static_cast<la_ssize_t>(contents.size())) check(a.get(), ARCHIVE_FATAL, "data of " + e.path);
    }
  }
  check(a.get(), archive_write_close(a.get()), "close " + path);
}

LocalRelease write_release(const std::string& dir, const std::string& version, const std::string& arch,
                           const std::vector<TarEntry>& entries) {
  LocalRelease r;
  r.dir = absolute_path(dir);
  r.base_url = "file://" + r.dir;
  r.version = version;
  r.arch = arch;
  r.tarball = tarball_path(r.dir, version, arch);
  make_dirs(parent_dir(r.tarball));
  write_tar_gz(r.tarball, entries);
  r.sha256 = file_sha256(r.tarball);
  write_sums(r);
  return r;
}

LocalRelease make_local_release(const std::string& dir) { return make_local_release(dir, etcd_under_test()); }

namespace {

// Where packed releases are kept between test processes and runs: ETCDADM_TEST_RELEASE_CACHE, else
// ${XDG_CACHE_HOME:-~/.cache}/etcdadm/test-releases.
std::string release_cache_root() {
  if (const char* v = std::getenv("ETCDADM_TEST_RELEASE_CACHE"); v && *v) return v;
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v && *v) return std::string(v) + "/etcdadm/test-releases";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/etcdadm/test-releases";
}

// The release of `etcd`'s binaries, packed once for every test process of every run: the cache
// entry is named by the SHA-256 of what goes into the tarball (the version, the README, each
// binary's contents), so a rebuilt binary gets a new entry and an entry is never stale. Each
// process packs into a directory of its own and renames it into place; a process that loses that
// race uses the winner's.
LocalRelease packed_release(const EtcdRelease& etcd) {
  const std::string arch = host_arch();
  const std::string top = "etcd-v" + etcd.version + "-linux-" + arch + "/";
  const std::string readme = "# etcd " + etcd.version + " (test release of the binaries under test)\n";
  std::vector<std::pair<std::string, std::string>> binaries = {{"etcd", etcd.etcd()}, {"etcdctl", etcd.etcdctl()}};
  if (etcd.has_etcdutl()) binaries.emplace_back("etcdutl", etcd.etcdutl());
  std::string identity = "layout 1\n" + etcd.version + "\n" + arch + "\n" + readme;
  for (const auto& [name, path] : binaries) identity += name + " " + file_sha256(path) + "\n";
  const std::string key = to_hex(sha256_of(identity.data(), identity.size()));
  const std::string root = release_cache_root();
  const std::string entry = root + "/" + etcd.version + "-" + key.substr(0, 16);
  const std::string done = entry + "/packed";  // the tarball's SHA-256, written last

  if (!path_exists(done)) {
    make_dirs(root);
    std::string building = entry + ".building-" + std::to_string(::getpid());
    std::filesystem::remove_all(building);
    std::vector<TarEntry> entries = {TarEntry::directory(top), TarEntry::file(top + "README.md", readme, 0644)};
    for (const auto& [name, path] : binaries) entries.push_back(TarEntry::copy_of(top + name, path));
    LocalRelease built = write_release(building, etcd.version, arch, entries);
    write_file_atomic(building + "/packed", built.sha256 + "\n");
    if (::rename(building.c_str(), entry.c_str()) != 0) std::filesystem::remove_all(building);  // another process won
  }
  LocalRelease r;
  r.dir = entry;
  r.base_url = "file://" + entry;
  r.version = etcd.version;
  r.arch = arch;
  r.tarball = tarball_path(entry, etcd.version, arch);
  r.sha256 = read_file(done).substr(0, 64);
  if (file_sha256(r.tarball) != r.sha256) throw std::runtime_error("the cached test release " + r.tarball + " is damaged: remove " + entry);
  return r;
}

}  // namespace

LocalRelease make_local_release(const std::string& dir, const EtcdRelease& etcd) {
  static std::mutex mu;
  static std::map<std::string, LocalRelease> packed_by_version;
  std::lock_guard<std::mutex> lock(mu);
  auto it = packed_by_version.find(etcd.version);
  if (it == packed_by_version.end()) it = packed_by_version.emplace(etcd.version, packed_release(etcd)).first;
  const LocalRelease& packed = it->second;
  LocalRelease r = packed;
  r.dir = absolute_path(dir);
  r.base_url = "file://" + r.dir;
  r.tarball = tarball_path(r.dir, r.version, r.arch);
  make_dirs(parent_dir(r.tarball));
  std::filesystem::copy_file(packed.tarball, r.tarball, std::filesystem::copy_options::overwrite_existing);
  write_sums(r);
  return r;
}

}  // namespace etcdadm::test
