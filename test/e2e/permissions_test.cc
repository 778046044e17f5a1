// Backups are as secret as the cluster: what etcdadm writes that holds snapshot bytes (a local
// store, `restore --output`, a restored data dir) is readable by its owner only, whatever the
// umask, unless the store was created for a group; and the sidecar does its whole job as an
// unprivileged user with nothing but a client certificate and a store directory it owns.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "common/fs.h"
#include "common/http_client.h"
#include "common/text.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"
#include "test/support/skips.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

// Every file and directory under `root` (root included) whose mode grants group or others more
// than `file_mode` (files) or `dir_mode` (directories) does, as "path mode" lines.
std::vector<std::string> looser_than(const std::string& root, uint32_t file_mode, uint32_t dir_mode) {
  std::vector<std::string> out;
  auto check = [&](const stdfs::path& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return;
    uint32_t mode = st.st_mode & 07777;
    uint32_t allowed = S_ISDIR(st.st_mode) ? dir_mode : file_mode;
    if ((mode & ~allowed & 0077) != 0) out.push_back(p.string() + " " + octal_mode(mode));
  };
  check(root);
  for (auto it = stdfs::recursive_directory_iterator(root); it != stdfs::recursive_directory_iterator(); ++it) {
    check(it->path());
  }
  return out;
}

uint32_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Sets the process umask for the scope: the CLI and the tools it runs inherit it.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

class Permissions : public CliTest {
 protected:
  TlsFiles tls_;  // outlives the members, which keep a pointer to it
};

// The count of successful attempts in a /metrics body, or -1 when the line is not there yet.
int successful_attempts(const std::string& metrics) {
  const std::string sample = "etcdadm_backup_attempts_total{result=\"success\"} ";
  auto at = metrics.find(sample);
  return at == std::string::npos ? -1 : std::stoi(metrics.substr(at + sample.size()));
}

}  // namespace

TEST_F(Permissions, NothingHoldingSnapshotBytesIsReadableByOthersUnderAnOpenUmask) {
  ScopedUmask open_umask(0);
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/default/s-", 200, 100);

  save(m);
  std::string snap = dir_ / "etcdctl.db";
  etcdctl_snapshot(m, snap);
  ::chmod(snap.c_str(), 0600);  // the oracle's file, not ours
  auto imported = cli({"backup", "import", snap, "--store", store_, "--etcd-version", etcd_under_test().version});
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  std::this_thread::sleep_for(1100ms);  // backup names have one-second resolution
  save(m);

  std::string out = dir_ / "fetched.db";
  auto fetched = cli({"backup", "restore", "latest", "--store", store_, "--output", out});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
  EXPECT_EQ(mode_of(out), 0600u);

  std::string data = dir_ / "restored-data";
  auto restored = cli({"backup", "restore", "latest", "--store", store_, "--data-dir", data, "--name", "r1"});
  ASSERT_EQ(restored.exit_code, 0) << restored.output;
  EXPECT_EQ(looser_than(data, 0600, 0700), std::vector<std::string>{}) << "restored data dir";

  auto pruned = cli({"backup", "prune", "--store", store_, "--policy", "count:2"});
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  ASSERT_EQ(cli_json({"backup", "list", "--store", store_, "-o", "json"}).size(), 2u);

  // The store, its marker and every backup file: owner only, exactly.
  EXPECT_EQ(looser_than(store_, 0600, 0700), std::vector<std::string>{});
  EXPECT_EQ(mode_of(store_), 0700u);
  EXPECT_EQ(mode_of(store_ + "/etcdadm-store.json"), 0600u);
  for (const auto& entry : stdfs::recursive_directory_iterator(store_)) {
    EXPECT_EQ(mode_of(entry.path()), entry.is_directory() ? 0700u : 0600u) << entry.path();
  }
}

TEST_F(Permissions, AGroupStoreGrantsTheGroupReadAndNobodyElse) {
  ScopedUmask strict_umask(077);  // the modes are exact: a strict umask does not take the group's read away
  auto& m = start_member();

  // A mode that lets other users read is refused before anything is written.
  auto loose = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--store-mode", "0644"});
  EXPECT_EQ(loose.exit_code, 2) << loose.output;
  EXPECT_NE(loose.output.find("other users must get nothing"), std::string::npos) << loose.output;
  EXPECT_FALSE(path_exists(store_));

  save(m, {"--store-mode", "0640"});
  std::this_thread::sleep_for(1100ms);
  save(m);  // a later save without the flag keeps the store's mode
  EXPECT_EQ(looser_than(store_, 0640, 0750), std::vector<std::string>{});
  int files = 0;
  for (const auto& entry : stdfs::recursive_directory_iterator(store_)) {
    EXPECT_EQ(mode_of(entry.path()), entry.is_directory() ? 0750u : 0640u) << entry.path();
    files += entry.is_regular_file() ? 1 : 0;
  }
  // The marker and per backup its data file, etcdadm-backup.json and, where etcd-manager could
  // restore it (not etcd 3.7), _etcd_backup.meta.
  EXPECT_EQ(files, etcd_under_test().at_least("3.7") ? 5 : 7);

  auto other = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--store-mode", "0600"});
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_NE(other.output.find("created with file mode 0640"), std::string::npos) << other.output;
}

TEST_F(Permissions, AStoreWrittenWithLooserModesIsNamedWithItsFix) {
  auto& m = start_member();
  save(m);
  // What an older etcdadm left: 0755 directories and 0644 files.
  ASSERT_EQ(run_process({"chmod", "-R", "u=rwX,go=rX", store_}).exit_code, 0);
  auto r = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("file(s) in store " + store_ + " allow more access than the store's mode 0600"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("chmod -R g-rwx,o-rwx " + store_), std::string::npos) << r.output;
  ASSERT_EQ(run_process({"chmod", "-R", "g-rwx,o-rwx", store_}).exit_code, 0);
  std::this_thread::sleep_for(1100ms);
  auto quiet = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url()});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("allow more access"), std::string::npos) << quiet.output;
}

// The sidecar needs no root: a client certificate the cluster's CA signed (etcd without auth;
// with auth on, the certificate's CN or --user must have the root role, which Snapshot requires),
// a store directory it owns, and a port above 1024.
TEST_F(Permissions, TheSidecarBacksUpPrunesAndServesMetricsAsAnUnprivilegedUser) {
  if (::geteuid() != 0) ETCDADM_SKIP_OUTSIDE_CI() << "needs root to start a process as another user (the suite runs as root)";
  const uid_t nobody = 65534;
  tls_ = make_tls_files(dir_ / "pki");
  const TlsFiles& tls = tls_;
  EtcdOptions o;
  o.tls = true;
  o.tls_files = &tls_;
  auto& m = start_member(o);

  // Everything the sidecar gets, in a directory of its own: the binary (the build tree may sit
  // under a directory other users cannot enter), the client certificate and key, the store.
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0711), 0);
  std::string home = dir_ / "backup-user";
  make_dirs(home, 0700);
  std::string bin = home + "/etcdadm";
  ASSERT_EQ(run_process({"cp", ETCDADM_BIN, bin}).exit_code, 0);
  for (const auto& [from, to] : {std::pair{tls.ca_cert, "ca.crt"}, {tls.client_cert, "client.crt"}, {tls.client_key, "client.key"}}) {
    ASSERT_EQ(run_process({"cp", from, home + "/" + to}).exit_code, 0);
  }
  std::string store = home + "/store";
  ASSERT_EQ(run_process({"chown", "-R", "65534:65534", home}).exit_code, 0);

  int port = free_port();
  std::string log = dir_ / "sidecar.log";
  RunOptions ro;
  ro.env = {{"ETCDADM_CATALOG", home + "/catalog.db"}, {"HOME", home}, {"TMPDIR", home}};
  ro.unset_env = {"ETCDCTL_ENDPOINTS", "ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY", "ETCDCTL_USER", "ETCDCTL_PASSWORD"};
  ChildProcess sidecar = ChildProcess::start(
      {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "--log-level", "debug",
       "backup", "sidecar", "--store", store, "--endpoints", m.client_url(), "--cacert", home + "/ca.crt", "--cert",
       home + "/client.crt", "--key", home + "/client.key", "--schedule", "@every 1s", "--retention", "count:2",
       "--listen", "127.0.0.1:" + std::to_string(port)},
      log, ro);

  HttpClient http;
  auto get = [&](const std::string& path) {
    HttpRequest req;
    req.url = "http://127.0.0.1:" + std::to_string(port) + path;
    return http.perform(req);
  };
  // Wait for at least four successful backups; retention keeps two of them.
  std::string metrics;
  for (int i = 0; i < 300 && successful_attempts(metrics) < 4; ++i) {
    std::this_thread::sleep_for(100ms);
    try {
      metrics = get("/metrics").body;
    } catch (const Error&) {  // not listening yet
    }
  }
  ASSERT_GE(successful_attempts(metrics), 4) << metrics << read_file(log);
  EXPECT_NE(metrics.find("etcdadm_backup_attempts_total{result=\"failure\"} 0\n"), std::string::npos) << metrics;

  // It really ran as that user, and everything it wrote is that user's and private.
  std::string status = read_file("/proc/" + std::to_string(sidecar.pid()) + "/status");
  EXPECT_NE(status.find("\nUid:\t65534\t65534\t65534\t65534\n"), std::string::npos) << status;
  EXPECT_EQ(sidecar.stop(10000ms), 0) << read_file(log);
  int backups = 0;
  for (const auto& entry : stdfs::recursive_directory_iterator(store)) {
    struct stat st;
    ASSERT_EQ(::lstat(entry.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, nobody) << entry.path();
    EXPECT_EQ(st.st_mode & 07777, entry.is_directory() ? 0700u : 0600u) << entry.path();
    if (entry.path().filename() == "etcdadm-backup.json") ++backups;
  }
  EXPECT_EQ(backups, 2) << "retention count:2 after four or more backups";
  EXPECT_EQ(read_file(log).find("Permission denied"), std::string::npos) << read_file(log);
}

}  // namespace etcdadm::test
