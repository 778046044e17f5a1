// SIGINT and SIGTERM in the middle of real work: the process stops, removes everything it wrote
// (the store's temp data file, the restore's staging directory with its fetched snapshot, the
// restore tool it started) and exits with 128 + the signal. Staging directories that earlier
// killed restores left behind are removed by the next restore once nothing holds them.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <thread>

#include "common/fs.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;
namespace stdfs = std::filesystem;

// Files under `dir` whose name contains `needle` and that hold at least `min_size` bytes. Files a
// running process renames or removes meanwhile are skipped, never an error.
int count_files(const std::string& dir, const std::string& needle, uintmax_t min_size = 0) {
  int n = 0;
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) return 0;
  for (auto it = stdfs::recursive_directory_iterator(dir, ec); !ec && it != stdfs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().find(needle) == std::string::npos) continue;
    std::error_code sec;
    uintmax_t size = it->is_regular_file(sec) ? it->file_size(sec) : 0;
    if (!sec && size >= min_size) ++n;
  }
  return n;
}

bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return done();
}

class Interrupt : public CliTest {
 protected:
  ChildProcess start_etcdadm(const std::vector<std::string>& args, const std::string& log,
                             std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {ETCDADM_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions ro;
    ro.env = std::move(env);
    ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
    return ChildProcess::start(argv, log, ro);
  }
};

TEST_F(Interrupt, SaveStopsAndLeavesNothingInTheStore) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 500, 500, 7);
  for (int sig : {SIGINT, SIGTERM}) {
    std::string store = dir_ / ("store-" + std::to_string(sig));
    std::string log = dir_ / ("save-" + std::to_string(sig) + ".log");
    // The save stops (common/failpoint.h) once the first piece of the snapshot is in its data file,
    // and the signal comes while it waits there: mid-save, whatever the machine's speed.
    FailpointPause pause(dir_.path(), "save/snapshot/streaming");
    auto child = start_etcdadm({"backup", "save", "--store", store, "--endpoints", m.client_url()}, log, pause.env());
    ASSERT_TRUE(pause.reached()) << read_file(log);
    // The guard: the data file is half written when the signal lands.
    ASSERT_TRUE(wait_for([&] { return count_files(store, ".tmp-") > 0; }, 10s)) << read_file(log);
    child.kill_now(sig);
    EXPECT_EQ(child.wait(), 128 + sig) << read_file(log);
    std::string out = read_file(log);
    EXPECT_NE(out.find(sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM"), std::string::npos) << out;
    EXPECT_EQ(count_files(store, ".tmp-"), 0) << "the interrupted save must remove its temp file";
    EXPECT_EQ(count_files(store, "_etcd_backup.meta"), 0);
    auto listed = cli_json({"backup", "list", "--store", store, "-o", "json"});
    EXPECT_EQ(listed.size(), 0u);
  }
}

TEST_F(Interrupt, RestoreStopsItsToolAndRemovesItsStagingDir) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 2000, 1500, 3);
  save(m);
  // The real restore tool behind a slow start (a slow disk): the signal comes while the fetched,
  // verified snapshot waits in the staging directory and the tool runs.
  std::string tool = dir_ / "slow-etcdctl";
  write_file_atomic(tool,
                    "#!/bin/sh\nif [ \"$1\" = snapshot ]; then echo $$ > '" + (dir_ / "tool.pid.tmp") + "' && mv '" +
                        (dir_ / "tool.pid.tmp") + "' '" + (dir_ / "tool.pid") + "'; sleep 60; fi\nexec etcdctl \"$@\"\n",
                    0755);
  std::string parent = dir_ / "restores";
  make_dirs(parent);
  for (int sig : {SIGINT, SIGTERM}) {
    std::string data = parent + "/data-" + std::to_string(sig);
    std::string log = dir_ / ("restore-" + std::to_string(sig) + ".log");
    ::unlink((dir_ / "tool.pid").c_str());
    auto child = start_etcdadm({"backup", "restore", "latest", "--store", store_, "--data-dir", data, "--name", "m1",
                                "--initial-advertise-peer-urls", m.peer_url(), "--restore-tool", tool,
                                // as it was: no bump to ask the tool about (etcdctl 3.4 has none)
                                "--keep-revision"},
                               log);
    ASSERT_TRUE(wait_for([&] { return path_exists(dir_ / "tool.pid"); }, 20s)) << read_file(log);
    EXPECT_EQ(count_files(parent, "snapshot.db", 1), 1) << "the fetched snapshot is in the staging dir";
    pid_t tool_pid = std::stoi(read_file(dir_ / "tool.pid"));
    child.kill_now(sig);
    EXPECT_EQ(child.wait(), 128 + sig) << read_file(log);
    EXPECT_NE(read_file(log).find("interrupted by"), std::string::npos) << read_file(log);
    EXPECT_TRUE(wait_for([&] { return ::kill(tool_pid, 0) != 0; }, 10s)) << "the restore tool still runs";
    EXPECT_FALSE(path_exists(data));
    EXPECT_TRUE(is_missing_or_empty_dir(parent)) << "staging dir left behind";
  }
}

// The signal while the backup is being fetched and verified into the staging directory: the fetch
// stops (common/failpoint.h) once its first piece is in the staging dir, and the signal comes while
// it waits there, so it is the fetch that is interrupted, never the restore tool after it.
TEST_F(Interrupt, RestoreStopsMidFetch) {
  std::string snap = dir_ / "db";
  // An 8 MiB db + its SHA-256 trailer: what `etcdctl snapshot save` writes, as far as the store's
  // integrity rules go (import and fetch check the trailer, not the bbolt structure); the fetch
  // reads it in 1 MiB pieces.
  auto made = run_process({"/usr/bin/python3", "-c", R"(
import hashlib, sys
h = hashlib.sha256()
block = bytes(range(256)) * 4096
first = bytearray(block)
first[16:20] = bytes([0xed, 0xda, 0x0c, 0xed])  # bbolt's magic, where the meta page has it
with open(sys.argv[1], "wb") as f:
    for i in range(8):
        b = bytes(first) if i == 0 else block
        f.write(b); h.update(b)
    f.write(h.digest())
)", snap});
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto imported = cli({"backup", "import", snap, "--store", store_, "--compression", "none"});
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  ::unlink(snap.c_str());
  std::string tool = dir_ / "slow-etcdutl";
  write_file_atomic(tool,
                    "#!/bin/sh\n[ \"$1\" = version ] && { echo 'etcdutl version: " + stand_in_etcdutl_version() +
                        "'; exit 0; }\nexec sleep 60\n",
                    0755);
  std::string parent = dir_ / "restores";
  make_dirs(parent);
  for (int sig : {SIGTERM, SIGINT}) {
    std::string log = dir_ / ("fetch-" + std::to_string(sig) + ".log");
    FailpointPause pause(dir_.path(), "fetch/data/streaming");
    auto child = start_etcdadm({"backup", "restore", "latest", "--store", store_, "--data-dir", parent + "/data", "--name",
                                "m1", "--initial-advertise-peer-urls", "http://127.0.0.1:2380", "--restore-tool", tool},
                               log, pause.env());
    ASSERT_TRUE(pause.reached()) << read_file(log);
    // The guard: the partial snapshot is in the staging dir when the signal lands.
    ASSERT_TRUE(wait_for([&] { return count_files(parent, "snapshot.db") == 1; }, 10s)) << read_file(log);
    child.kill_now(sig);
    EXPECT_EQ(child.wait(), 128 + sig) << read_file(log);
    std::string out = read_file(log);
    EXPECT_NE(out.find("reading backup"), std::string::npos) << "not interrupted in the fetch: " << out;
    EXPECT_NE(out.find("interrupted by"), std::string::npos) << out;
    EXPECT_TRUE(is_missing_or_empty_dir(parent)) << "staging dir (with a partial snapshot) left behind";
  }
}

TEST_F(Interrupt, NextRestoreRemovesStagingDirsOfKilledRunsUnlessHeld) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 100, 500, 3);
  save(m);
  std::string parent = dir_ / "restores";
  // Left by an etcdadm before the lock file (nothing written for an hour), and by a killed run of
  // this one (lock file, nobody holds it): both go.
  std::string legacy = parent + "/.etcdadm-restore-legacy1";
  make_dirs(legacy + "/data/member");
  write_file_atomic(legacy + "/snapshot.db", std::string(1 << 20, 'x'));
  ASSERT_EQ(run_process({"touch", "-d", "2 hours ago", legacy, legacy + "/snapshot.db", legacy + "/data",
                         legacy + "/data/member"}).exit_code, 0);
  std::string killed = parent + "/.etcdadm-restore-killed1";
  make_dirs(killed);
  write_file_atomic(killed + "/.lock", "");
  write_file_atomic(killed + "/snapshot.db", std::string(1 << 20, 'y'));
  // Killed between creating its dir and its lock file: empty. Gone once 10 s old; a fresh one may
  // be a restore in that very gap, and stays.
  std::string lockless = parent + "/.etcdadm-restore-nolock1";
  make_dirs(lockless);
  ASSERT_EQ(run_process({"touch", "-d", "20 seconds ago", lockless}).exit_code, 0);
  std::string fresh = parent + "/.etcdadm-restore-nolock2";
  make_dirs(fresh);
  // One whose restore still runs (its lock is held): kept.
  std::string running = parent + "/.etcdadm-restore-running1";
  make_dirs(running);
  write_file_atomic(running + "/.lock", "");
  // --no-fork: flock becomes the sleep that holds the lock, so stopping it leaves no process behind.
  ChildProcess holder = ChildProcess::start({"flock", "--no-fork", running + "/.lock", "sleep", "60"}, dir_ / "flock.log");
  ASSERT_TRUE(wait_for(
      [&] {
        int fd = ::open((running + "/.lock").c_str(), O_RDONLY);
        bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
        ::close(fd);
        return held;
      },
      5s));
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--data-dir", parent + "/data", "--name", "m1",
                "--initial-advertise-peer-urls", m.peer_url()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(path_exists(legacy)) << r.output;
  EXPECT_FALSE(path_exists(killed)) << r.output;
  EXPECT_FALSE(path_exists(lockless)) << r.output;
  EXPECT_TRUE(path_exists(fresh)) << "an empty staging dir seconds old was removed";
  EXPECT_TRUE(path_exists(running + "/.lock")) << "a staging dir whose restore runs was removed";
  EXPECT_NE(r.output.find("left by an earlier restore"), std::string::npos) << r.output;
  holder.stop(100ms);
}

}  // namespace
}  // namespace etcdadm::test
