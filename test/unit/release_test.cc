// Getting etcd's binaries: names and URLs (known answers), and installs from real release tarballs
// of the machine's own etcd 3.4.23 (test/support/release_fixture.h) over file:// and http on
// loopback: checksums, the cache, hostile tarballs, version checks, an existing binaries dir.
#include "etcdadm/release/install.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "test/support/fixture_server.h"
#include "test/support/log_capture.h"
#include "test/support/release_fixture.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

namespace stdfs = std::filesystem;
using test::TarEntry;

// Runs fn, expects an Error of `kind` whose message contains `text`; returns it for more checks.
Error expect_error(const std::function<void()>& fn, ErrorKind kind, const std::string& text) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << error_kind_name(e.kind()) << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    return e;
  }
  ADD_FAILURE() << "no error; expected one containing: " << text;
  return Error(ErrorKind::kInternal, "none");
}

// Regular files below dir (recursive), as paths relative to it; empty when dir is missing.
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  if (!path_exists(dir)) return out;
  for (const auto& e : stdfs::recursive_directory_iterator(dir)) {
    if (!e.is_directory()) out.push_back(stdfs::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

ReleaseSpec spec_for(const test::LocalRelease& rel, const test::TempDir& tmp) {
  ReleaseSpec s;
  s.release_url = rel.base_url;
  s.version = rel.version;
  s.arch = rel.arch;
  s.cache_dir = tmp / "cache";
  s.progress = false;
  return s;
}

std::string script(const std::string& output) { return "#!/bin/sh\necho '" + output + "'\n"; }

TEST(ReleaseNames, KnownAnswers) {
  EXPECT_EQ(normalise_version("v3.5.17"), "3.5.17");
  EXPECT_EQ(normalise_version("3.4.23"), "3.4.23");
  EXPECT_EQ(normalise_version("v3.6.0-rc.1"), "3.6.0-rc.1");
  for (const char* bad : {"", "3.5", "latest", "vv3.5.17", "3.5.17/../x", " 3.5.17"}) {
    expect_error([&] { normalise_version(bad); }, ErrorKind::kInvalidArgument, "invalid etcd version");
  }
  EXPECT_EQ(release_tarball_name("v3.5.17", "arm64"), "etcd-v3.5.17-linux-arm64.tar.gz");

  ReleaseSpec s;
  s.arch = "amd64";
  EXPECT_EQ(release_tarball_url(s),
            "https://github.com/etcd-io/etcd/releases/download/v3.5.17/etcd-v3.5.17-linux-amd64.tar.gz");
  EXPECT_EQ(cached_tarball_path(s), "/var/cache/etcdadm/etcd/v3.5.17/etcd-v3.5.17-linux-amd64.tar.gz");
  s.release_url = "https://mirror.example.com/etcd//";
  s.version = "v3.4.23";
  s.arch = "ppc64le";
  s.cache_dir = "/tmp/c/";
  EXPECT_EQ(release_tarball_url(s), "https://mirror.example.com/etcd/v3.4.23/etcd-v3.4.23-linux-ppc64le.tar.gz");
  EXPECT_EQ(cached_tarball_path(s), "/tmp/c/etcd/v3.4.23/etcd-v3.4.23-linux-ppc64le.tar.gz");

  s.arch = "../../x";
  expect_error([&] { cached_tarball_path(s); }, ErrorKind::kInvalidArgument, "invalid architecture");

  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  std::string m = u.machine;
  std::string want = m == "x86_64" ? "amd64" : m == "aarch64" ? "arm64" : m;
  EXPECT_EQ(host_arch(), want);
  s.arch.clear();
  EXPECT_NE(release_tarball_url(s).find("-linux-" + want + ".tar.gz"), std::string::npos);
}

TEST(ReleaseBinaryVersion, ReadsEtcdAndEtcdctl) {
  EXPECT_EQ(binary_version("/usr/bin/etcd"), "3.4.23");
  EXPECT_EQ(binary_version("/usr/bin/etcdctl"), "3.4.23");
  test::TempDir tmp;
  write_file_atomic(tmp / "etcdutl", script("etcdutl version: 3.5.17"), 0755);
  EXPECT_EQ(binary_version(tmp / "etcdutl"), "3.5.17");
  expect_error([] { binary_version("/bin/true"); }, ErrorKind::kExternalTool, "cannot tell the version of /bin/true");
  expect_error([&] { binary_version(tmp / "missing"); }, ErrorKind::kExternalTool, tmp / "missing");
}

TEST(ReleaseInstall, FromFileUrlThenFromCache) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  auto got = install_release(spec, tmp / "bin");
  EXPECT_EQ(got.version, "3.4.23");
  EXPECT_FALSE(got.from_cache);
  EXPECT_EQ(got.source, release_tarball_url(spec));
  EXPECT_EQ(got.binaries, (std::vector<std::string>{tmp / "bin/etcd", tmp / "bin/etcdctl"}));
  // Nothing else, no temps; the manifest records what was installed from the verified tarball.
  EXPECT_EQ(files_under(tmp / "bin"), (std::vector<std::string>{".etcdadm-installed.json", "etcd", "etcdctl"}));
  for (const auto& b : got.binaries) {
    EXPECT_EQ(mode_of(b), 0755u) << b;
    EXPECT_EQ(binary_version(b), "3.4.23");
    EXPECT_EQ(test::file_sha256(b), test::file_sha256("/usr/bin/" + stdfs::path(b).filename().string()));
  }
  std::string cached = cached_tarball_path(spec);
  std::string name = release_tarball_name("3.4.23", rel.arch);
  EXPECT_EQ(files_under(spec.cache_dir),
            (std::vector<std::string>{"etcd/v3.4.23/" + name, "etcd/v3.4.23/" + name + ".sha256"}));
  EXPECT_EQ(test::file_sha256(cached), rel.sha256);
  EXPECT_EQ(read_file(cached + ".sha256"), rel.sha256 + "  " + name + "\n");

  // The source tarball is damaged now: the second install (into another dir, which has no verified
  // install to reuse) must come from the (re-verified) cache.
  write_file_atomic(rel.tarball, "damaged");
  auto again = install_release(spec, tmp / "bin2");
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.version, "3.4.23");
  EXPECT_EQ(download_release(spec), cached);
}

TEST(ReleaseInstall, CorruptCachedTarballIsFetchedAgain) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  std::string cached = download_release(spec);
  write_file_atomic(cached, "not a tarball any more");
  auto got = install_release(spec, tmp / "bin");
  EXPECT_FALSE(got.from_cache);
  EXPECT_EQ(test::file_sha256(cached), rel.sha256);
  EXPECT_EQ(got.version, "3.4.23");
}

TEST(ReleaseInstall, WrongSha256LeavesNothingBehind) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  spec.sha256 = std::string(64, 'a');
  auto e = expect_error([&] { install_release(spec, tmp / "bin"); }, ErrorKind::kCorrupt,
                        "expected " + spec.sha256 + ", got " + rel.sha256);
  EXPECT_NE(e.hint().find("--release-sha256"), std::string::npos) << e.hint();
  EXPECT_EQ(files_under(spec.cache_dir), std::vector<std::string>{});
  EXPECT_EQ(files_under(tmp / "bin"), std::vector<std::string>{});

  // The right value, in capitals, is accepted.
  spec.sha256 = rel.sha256;
  std::transform(spec.sha256.begin(), spec.sha256.end(), spec.sha256.begin(), ::toupper);
  EXPECT_EQ(install_release(spec, tmp / "bin").version, "3.4.23");
  spec.sha256 = "abc";
  expect_error([&] { download_release(spec); }, ErrorKind::kInvalidArgument, "not a SHA-256");
}

TEST(ReleaseInstall, MissingChecksumNeedsSkipChecksum) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  ASSERT_TRUE(stdfs::remove(parent_dir(rel.tarball) + "/SHA256SUMS"));
  auto e = expect_error([&] { download_release(spec); }, ErrorKind::kNotFound,
                        "no SHA-256 for " + release_tarball_name(rel.version, rel.arch));
  EXPECT_NE(e.hint().find("--skip-release-checksum"), std::string::npos) << e.hint();
  EXPECT_EQ(files_under(spec.cache_dir), std::vector<std::string>{});

  // A SHA256SUMS without the tarball's line is no better.
  write_file_atomic(parent_dir(rel.tarball) + "/SHA256SUMS", rel.sha256 + "  etcd-v9.9.9-linux-amd64.tar.gz\n");
  expect_error([&] { download_release(spec); }, ErrorKind::kNotFound, "has no line for it");

  spec.skip_checksum = true;
  auto got = install_release(spec, tmp / "bin");
  EXPECT_EQ(got.version, "3.4.23");
  EXPECT_EQ(test::file_sha256(cached_tarball_path(spec)), rel.sha256);
  EXPECT_FALSE(path_exists(cached_tarball_path(spec) + ".sha256"));  // unverified: no record
}

TEST(ReleaseInstall, LocalTarballUsesTheSha256SumsBesideIt) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  spec.release_url = "https://unreachable.invalid";  // never used with a tarball
  spec.tarball = rel.tarball;
  auto got = install_release(spec, tmp / "bin");
  EXPECT_EQ(got.source, rel.tarball);
  EXPECT_EQ(got.version, "3.4.23");

  // Copied elsewhere without SHA256SUMS: needs a checksum (the cache's record does not vouch for it).
  stdfs::create_directories(tmp / "usb");
  stdfs::copy_file(rel.tarball, tmp / "usb/etcd.tar.gz");
  spec.tarball = tmp / "usb/etcd.tar.gz";
  expect_error([&] { download_release(spec); }, ErrorKind::kNotFound, "no SHA-256 for etcd.tar.gz");
  spec.sha256 = rel.sha256;
  EXPECT_EQ(install_release(spec, tmp / "bin2").version, "3.4.23");
  spec.tarball = tmp / "usb/missing.tar.gz";
  expect_error([&] { download_release(spec); }, ErrorKind::kNotFound, tmp / "usb/missing.tar.gz");
}

TEST(ReleaseHttp, DownloadsThroughRedirectsAnd404IsNotFound) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  test::FixtureServer fx;
  ASSERT_TRUE(fx.server.set_mount_point("/files", rel.dir));
  // Like GitHub: the release URL answers with a redirect to where the asset is stored.
  std::atomic<bool> refuse{false};
  fx.server.Get("/gh/(.*)", [&](const httplib::Request& req, httplib::Response& res) {
    if (refuse) {
      res.status = 403;  // kUnavailable, not retried
      return;
    }
    res.set_redirect("/files/" + req.matches[1].str());
  });
  fx.start();

  auto spec = spec_for(rel, tmp);
  spec.release_url = fx.url() + "/gh/";
  auto got = install_release(spec, tmp / "bin");
  EXPECT_EQ(got.version, "3.4.23");
  EXPECT_EQ(got.source, fx.url() + "/gh/v3.4.23/" + release_tarball_name("3.4.23", rel.arch));
  EXPECT_EQ(test::file_sha256(cached_tarball_path(spec)), rel.sha256);

  // The server turns us away: the cache's recorded digest stands in for SHA256SUMS.
  refuse = true;
  {
    test::LogCapture log;
    EXPECT_TRUE(install_release(spec, tmp / "bin2").from_cache);
    EXPECT_TRUE(log.has("SHA256SUMS: HTTP 403; using cached")) << log.text();
  }
  refuse = false;

  spec.version = "3.9.9";
  // No SHA256SUMS because there is no such release: said so, not "skip the checksum".
  Error missing = expect_error([&] { download_release(spec); }, ErrorKind::kNotFound,
                               "etcd 3.9.9 for linux-" + rel.arch + " is not at " + fx.url() + "/gh/v3.9.9/etcd-v3.9.9-linux-" +
                                   rel.arch + ".tar.gz (the release source has no such tarball)");
  EXPECT_EQ(missing.hint().find("--skip-release-checksum"), std::string::npos) << missing.hint();
  expect_error([&] { check_release_available(spec, tmp / "bin"); }, ErrorKind::kNotFound, "no such tarball");
  spec.sha256 = rel.sha256;
  expect_error([&] { download_release(spec); }, ErrorKind::kNotFound,
               "GET " + fx.url() + "/gh/v3.9.9/etcd-v3.9.9-linux-" + rel.arch + ".tar.gz: HTTP 404");
  EXPECT_FALSE(path_exists(tmp / "cache/etcd/v3.9.9/etcd-v3.9.9-linux-" + rel.arch + ".tar.gz"));

  spec.release_url = "ftp://example.com/etcd";
  expect_error([&] { download_release(spec); }, ErrorKind::kInvalidArgument, "unsupported release URL");
}

// A release of small scripts that print etcd-like versions.
std::vector<TarEntry> script_release(const std::string& top, const std::string& etcd_version,
                                     const std::string& etcdctl_version) {
  return {TarEntry::directory(top + "/"), TarEntry::file(top + "/etcd", script("etcd Version: " + etcd_version)),
          TarEntry::file(top + "/etcdctl", script("etcdctl version: " + etcdctl_version))};
}

TEST(ReleaseTarball, OnlyTheBinariesAreExtracted) {
  test::TempDir tmp;
  std::string arch = host_arch();
  std::string top = "etcd-v3.5.17-linux-" + arch;
  auto entries = script_release(top, "3.5.17", "3.5.17");
  entries.push_back(TarEntry::file(top + "/etcdutl", script("etcdutl version: 3.5.17")));
  entries.push_back(TarEntry::file(top + "/README.md", "readme", 0644));
  entries.push_back(TarEntry::file(top + "/Documentation/etcd", "not this one"));
  entries.push_back(TarEntry::file("etcd", "nor this one"));
  auto rel = test::write_release(tmp / "releases", "3.5.17", arch, entries);
  auto spec = spec_for(rel, tmp);
  auto got = install_release(spec, tmp / "bin");
  EXPECT_EQ(got.version, "3.5.17");
  EXPECT_EQ(files_under(tmp / "bin"), (std::vector<std::string>{".etcdadm-installed.json", "etcd", "etcdctl", "etcdutl"}));
  EXPECT_EQ(read_file(tmp / "bin/etcd"), script("etcd Version: 3.5.17"));
  EXPECT_EQ(mode_of(tmp / "bin/etcdutl"), 0755u);
}

TEST(ReleaseTarball, HostileOrIncompleteTarballsAreRejected) {
  test::TempDir tmp;
  std::string arch = host_arch();
  std::string top = "etcd-v3.5.17-linux-" + arch;
  struct Case {
    std::string name;
    TarEntry evil;
    std::string error;
  };
  std::vector<Case> cases = {
      {"dotdot", TarEntry::file("../etcd", script("etcd Version: 3.5.17")), "unsafe entry ../etcd"},
      {"dotdot_inside", TarEntry::file(top + "/../../etcd", "x"), "unsafe entry"},
      {"absolute", TarEntry::file("/tmp/etcd", "x"), "unsafe entry /tmp/etcd"},
      {"symlink", TarEntry::symlink(top + "/etcd", "/bin/sh"), top + "/etcd is not a regular file"},
      {"hardlink", TarEntry::hardlink(top + "/etcd", top + "/etcdctl"), top + "/etcd is not a regular file"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto entries = script_release(top, "3.5.17", "3.5.17");
    entries.erase(entries.begin() + 1);  // the real etcd
    entries.insert(entries.begin() + 1, c.evil);
    auto rel = test::write_release(tmp / c.name, "3.5.17", arch, entries);
    auto spec = spec_for(rel, tmp);
    spec.cache_dir = tmp / (c.name + "-cache");
    expect_error([&] { install_release(spec, tmp / (c.name + "/bin")); }, ErrorKind::kCorrupt, c.error);
    EXPECT_EQ(files_under(tmp / (c.name + "/bin")), std::vector<std::string>{});
    EXPECT_FALSE(path_exists(tmp / (c.name + "/etcd")));
  }

  auto entries = script_release(top, "3.5.17", "3.5.17");
  entries.pop_back();  // no etcdctl
  auto rel = test::write_release(tmp / "no-etcdctl", "3.5.17", arch, entries);
  auto spec = spec_for(rel, tmp);
  expect_error([&] { install_release(spec, tmp / "bin"); }, ErrorKind::kCorrupt, "has no " + top + "/etcdctl");
  EXPECT_EQ(files_under(tmp / "bin"), std::vector<std::string>{});

  write_file_atomic(rel.tarball, "<html>not found</html>");
  spec.sha256 = test::file_sha256(rel.tarball);
  spec.cache_dir = tmp / "html-cache";
  expect_error([&] { install_release(spec, tmp / "bin"); }, ErrorKind::kCorrupt, "release tarball");
}

TEST(ReleaseVersion, MismatchesAreClearErrors) {
  test::TempDir tmp;
  std::string arch = host_arch();
  // Debian's 3.4.23 binaries packed as if they were 3.5.17.
  std::string top = "etcd-v3.5.17-linux-" + arch + "/";
  auto rel = test::write_release(
      tmp / "releases", "3.5.17", arch,
      {TarEntry::copy_of(top + "etcd", "/usr/bin/etcd"), TarEntry::copy_of(top + "etcdctl", "/usr/bin/etcdctl")});
  auto spec = spec_for(rel, tmp);
  expect_error([&] { install_release(spec, tmp / "bin"); }, ErrorKind::kCorrupt,
               "installed etcd reports 3.4.23, expected 3.5.17");
  EXPECT_EQ(files_under(tmp / "bin"), std::vector<std::string>{});

  // etcdctl from another release than etcd.
  top = "etcd-v3.5.16-linux-" + arch;
  rel = test::write_release(tmp / "mixed", "3.5.16", arch, script_release(top, "3.5.16", "3.5.15"));
  spec = spec_for(rel, tmp);
  expect_error([&] { install_release(spec, tmp / "bin"); }, ErrorKind::kCorrupt,
               "etcdctl reports 3.5.15 but etcd reports 3.5.16");
  EXPECT_EQ(files_under(tmp / "bin"), std::vector<std::string>{});
}

TEST(ReleaseBinariesDir, InstallsWhatIsThere) {
  test::TempDir tmp;
  ReleaseSpec spec;
  spec.binaries_dir = "/usr/bin/";
  spec.version = "";
  spec.cache_dir = tmp / "cache";
  auto got = install_release(spec, tmp / "bin");
  EXPECT_EQ(got.version, "3.4.23");
  EXPECT_EQ(got.source, "/usr/bin");
  EXPECT_EQ(files_under(tmp / "bin"), (std::vector<std::string>{"etcd", "etcdctl"}));
  EXPECT_EQ(mode_of(tmp / "bin/etcd"), 0755u);
  EXPECT_EQ(test::file_sha256(tmp / "bin/etcdctl"), test::file_sha256("/usr/bin/etcdctl"));
  EXPECT_FALSE(path_exists(spec.cache_dir));

  // The same files again (a host restored with its install dir kept): checked, not copied; a
  // binary that differs by one byte is copied again.
  struct stat first {}, again{};
  ASSERT_EQ(::stat((tmp / "bin/etcd").c_str(), &first), 0);
  {
    test::LogCapture log;
    EXPECT_EQ(install_release(spec, tmp / "bin").version, "3.4.23");
    EXPECT_TRUE(log.has("holds the same files as /usr/bin: nothing to copy")) << log.text();
  }
  ASSERT_EQ(::stat((tmp / "bin/etcd").c_str(), &again), 0);
  EXPECT_EQ(first.st_ino, again.st_ino);
  std::string changed = read_file(tmp / "bin/etcdctl");
  changed[changed.size() / 2] ^= 1;
  ::chmod((tmp / "bin/etcdctl").c_str(), 0755);
  write_file_atomic(tmp / "bin/etcdctl", changed, 0755, /*overwrite=*/true);
  EXPECT_FALSE(same_file_contents(tmp / "bin/etcdctl", "/usr/bin/etcdctl"));
  EXPECT_EQ(install_release(spec, tmp / "bin").version, "3.4.23");
  EXPECT_EQ(test::file_sha256(tmp / "bin/etcdctl"), test::file_sha256("/usr/bin/etcdctl"));
  EXPECT_FALSE(same_file_contents(tmp / "bin/etcd", tmp / "bin/missing"));

  // Installing a directory into itself only checks it.
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat((tmp / "bin/etcd").c_str(), &before), 0);
  spec.binaries_dir = tmp / "bin";
  spec.version = "v3.4.23";
  auto same = install_release(spec, tmp / "bin/");
  EXPECT_EQ(same.version, "3.4.23");
  ASSERT_EQ(::stat((tmp / "bin/etcd").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);

  spec.binaries_dir = "/usr/bin";
  spec.version = "3.5.17";
  expect_error([&] { install_release(spec, tmp / "other"); }, ErrorKind::kInvalidArgument,
               "installed etcd reports 3.4.23, expected 3.5.17");
  EXPECT_EQ(files_under(tmp / "other"), std::vector<std::string>{});

  stdfs::create_directories(tmp / "half");
  stdfs::copy_file("/usr/bin/etcd", tmp / "half/etcd");
  spec.binaries_dir = tmp / "half";
  spec.version = "";
  expect_error([&] { install_release(spec, tmp / "other"); }, ErrorKind::kNotFound, tmp / "half/etcdctl");
}

// A well-formed release of version scripts (quick to pack and install); `readme` changes its bytes.
test::LocalRelease small_release(const std::string& dir, const std::string& readme = "") {
  std::string arch = host_arch();
  std::string top = "etcd-v3.5.17-linux-" + arch;
  auto entries = script_release(top, "3.5.17", "3.5.17");
  if (!readme.empty()) entries.push_back(TarEntry::file(top + "/README.md", readme, 0644));
  return test::write_release(dir, "3.5.17", arch, entries);
}

TEST(ReleaseCache, OfflineReinstallUsesTheRecordedDigest) {
  test::TempDir tmp;
  auto rel = small_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  EXPECT_FALSE(install_release(spec, tmp / "bin").from_cache);
  std::string cached = cached_tarball_path(spec);
  std::string record = rel.sha256 + "  " + release_tarball_name("3.5.17", rel.arch) + "\n";
  EXPECT_EQ(read_file(cached + ".sha256"), record);
  // An entry without a record (an older etcdadm's) gets one once verified.
  ASSERT_TRUE(stdfs::remove(cached + ".sha256"));
  EXPECT_EQ(download_release(spec), cached);
  EXPECT_EQ(read_file(cached + ".sha256"), record);

  // The release is gone (an air-gapped host): the cache entry is verified against its record.
  remove_all(rel.dir);
  {
    test::LogCapture log;
    auto got = install_release(spec, tmp / "bin2");
    EXPECT_TRUE(got.from_cache);
    EXPECT_EQ(got.version, "3.5.17");
    EXPECT_EQ(files_under(tmp / "bin2"), (std::vector<std::string>{".etcdadm-installed.json", "etcd", "etcdctl"}));
    EXPECT_TRUE(log.has("SHA256SUMS does not exist; using cached " + cached + ", verified against the SHA-256 " +
                        rel.sha256 + " recorded in the cache"))
        << log.text();
  }
  // A given --release-sha256 is used rather than the record.
  {
    test::LogCapture log;
    spec.sha256 = rel.sha256;
    EXPECT_EQ(download_release(spec), cached);
    EXPECT_TRUE(log.has("verified against --release-sha256")) << log.text();
    spec.sha256.clear();
  }
  // --release-tarball naming the cache entry itself (no SHA256SUMS beside it) falls back the same way.
  spec.tarball = cached;
  EXPECT_EQ(download_release(spec), cached);
  spec.tarball.clear();

  // Damaged, with nothing to verify a new copy against: a clear error, and the entry is gone.
  write_file_atomic(cached, "damaged");
  auto e = expect_error([&] { install_release(spec, tmp / "bin3"); }, ErrorKind::kCorrupt,
                        "cache entry " + cached + " is damaged");
  EXPECT_NE(std::string(e.what()).find("(it was deleted)"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("SHA256SUMS does not exist"), std::string::npos) << e.what();
  EXPECT_EQ(files_under(spec.cache_dir), std::vector<std::string>{});
  EXPECT_EQ(files_under(tmp / "bin3"), std::vector<std::string>{});
  // Nothing cached and nothing at the source: no such release, whatever the checksum options.
  expect_error([&] { download_release(spec); }, ErrorKind::kNotFound, "(the release source has no such tarball)");
}

TEST(ReleaseCache, ChangedSha256SumsFetchesAgain) {
  test::TempDir tmp;
  auto rel = small_release(tmp / "releases");
  auto spec = spec_for(rel, tmp);
  std::string cached = download_release(spec);
  auto rebuilt = small_release(tmp / "releases", "rebuilt\n");  // same name, other bytes and SHA256SUMS
  ASSERT_NE(rebuilt.sha256, rel.sha256);
  test::LogCapture log;
  auto got = install_release(spec, tmp / "bin");
  EXPECT_FALSE(got.from_cache);
  EXPECT_EQ(got.version, "3.5.17");
  EXPECT_TRUE(log.has("SHA256SUMS now gives SHA-256 " + rebuilt.sha256)) << log.text();
  EXPECT_TRUE(log.has(rel.sha256 + " was recorded")) << log.text();
  EXPECT_EQ(test::file_sha256(cached), rebuilt.sha256);
  EXPECT_EQ(read_file(cached + ".sha256"), rebuilt.sha256 + "  " + release_tarball_name("3.5.17", rel.arch) + "\n");
}

TEST(ReleaseInstall, StaleStagingDirsAreRemoved) {
  test::TempDir tmp;
  std::string src = tmp / "src", bin = tmp / "bin";
  stdfs::create_directories(src);
  write_file_atomic(src + "/etcd", script("etcd Version: 3.5.17"), 0755);
  write_file_atomic(src + "/etcdctl", script("etcdctl version: 3.5.17"), 0755);
  stdfs::create_directories(bin + "/.etcdadm-install-old");
  stdfs::create_directories(bin + "/.etcdadm-install-new");
  stdfs::create_directories(tmp / "victim");
  write_file_atomic(bin + "/.etcdadm-install-old/etcd", "half written");
  write_file_atomic(bin + "/.etcdadm-install-file", "not a staging dir");
  write_file_atomic(tmp / "victim/keep", "keep");
  stdfs::create_directory_symlink(tmp / "victim", bin + "/.etcdadm-install-link");
  for (const char* name : {".etcdadm-install-old", ".etcdadm-install-file", ".etcdadm-install-link"}) {
    timespec times[2] = {{::time(nullptr) - 2 * 3600, 0}, {::time(nullptr) - 2 * 3600, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (bin + "/" + name).c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << name;
  }

  ReleaseSpec spec;
  spec.binaries_dir = src;
  spec.version = "";
  spec.cache_dir = tmp / "cache";
  test::LogCapture log;
  EXPECT_EQ(install_release(spec, bin).version, "3.5.17");
  EXPECT_FALSE(path_exists(bin + "/.etcdadm-install-old"));
  EXPECT_TRUE(log.has("removed " + bin + "/.etcdadm-install-old, left by an interrupted install")) << log.text();
  EXPECT_TRUE(is_directory(bin + "/.etcdadm-install-new"));  // may be a concurrent install's
  EXPECT_EQ(read_file(bin + "/.etcdadm-install-file"), "not a staging dir");
  EXPECT_TRUE(stdfs::is_symlink(bin + "/.etcdadm-install-link"));
  EXPECT_EQ(read_file(tmp / "victim/keep"), "keep");
  EXPECT_FALSE(log.has(".etcdadm-install-new")) << log.text();
}

}  // namespace
}  // namespace etcdadm

namespace etcdadm {
namespace {

// A join on an offline host where etcdadm already installed the requested etcd from a verified
// release uses those binaries (nothing fetched); a binary changed since, another version, or a
// --release-sha256 of another tarball is never taken for it.
TEST(Release, AnInstalledVerifiedReleaseIsReusedOfflineUnlessChanged) {
  test::TempDir tmp;
  auto rel = test::make_local_release(tmp / "releases");
  ReleaseSpec spec = spec_for(rel, tmp);
  std::string bin = tmp / "bin";
  InstalledRelease first = install_release(spec, bin);
  EXPECT_FALSE(first.from_cache);
  // Offline from now on: no release server, no cache.
  stdfs::remove_all(rel.dir);
  stdfs::remove_all(tmp / "cache");
  InstalledRelease again = install_release(spec, bin);
  EXPECT_EQ(again.version, rel.version);
  EXPECT_NE(again.source.find("tarball SHA-256 " + rel.sha256), std::string::npos) << again.source;
  EXPECT_EQ(again.binaries.size(), first.binaries.size());

  ReleaseSpec other_tarball = spec;
  other_tarball.sha256 = std::string(64, 'a');
  EXPECT_THROW(install_release(other_tarball, bin), Error);

  // A binary replaced behind etcdadm's back is not vouched for by the manifest any more.
  std::string etcdctl = read_file(bin + "/etcdctl");
  write_file_atomic(bin + "/etcdctl", etcdctl + "x", 0755, /*overwrite=*/true);
  Error e = expect_error([&] { install_release(spec, bin); }, ErrorKind::kNotFound, "");
  (void)e;
}

}  // namespace
}  // namespace etcdadm
