#include "test/support/release_fixture.h"

#include "test/support/etcd_versions.h"

#include <archive.h>
#include <archive_entry.h>

#include <ctime>
#include <filesystem>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "common/fs.h"
#include "common/sha256.h"
#include "etcdadm/release.h"
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

// The real-binaries release, packed once into a directory removed when the process exits.
struct PackedRelease {
  std::unique_ptr<TempDir> dir;
  std::optional<LocalRelease> release;
};

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

LocalRelease make_local_release(const std::string& dir, const EtcdRelease& etcd) {
  static std::mutex mu;
  static std::map<std::string, PackedRelease> packed_by_version;
  std::lock_guard<std::mutex> lock(mu);
  PackedRelease& packed = packed_by_version[etcd.version];
  if (!packed.release) {
    if (!packed.dir) packed.dir = std::make_unique<TempDir>();
    std::string arch = host_arch();
    std::string top = "etcd-v" + etcd.version + "-linux-" + arch + "/";
    std::vector<TarEntry> entries = {
        TarEntry::directory(top),
        TarEntry::file(top + "README.md", "# etcd " + etcd.version + " (test release of the binaries under test)\n", 0644),
        TarEntry::copy_of(top + "etcd", etcd.etcd()), TarEntry::copy_of(top + "etcdctl", etcd.etcdctl())};
    if (etcd.has_etcdutl()) entries.push_back(TarEntry::copy_of(top + "etcdutl", etcd.etcdutl()));
    packed.release = write_release(packed.dir->path(), etcd.version, arch, entries);
  }
  LocalRelease r = *packed.release;
  r.dir = absolute_path(dir);
  r.base_url = "file://" + r.dir;
  r.tarball = tarball_path(r.dir, r.version, r.arch);
  make_dirs(parent_dir(r.tarball));
  std::filesystem::copy_file(packed.release->tarball, r.tarball, std::filesystem::copy_options::overwrite_existing);
  write_sums(r);
  return r;
}

}  // namespace etcdadm::test
