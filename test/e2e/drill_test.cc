// `backup drill` end to end, on the etcd under test: a good backup restores, starts and serves what
// its source served (revision, key count, and HashKV at the backup's revision equal to what
// `etcdctl endpoint hashkv` says of the source: the oracle); a damaged backup, a backup whose
// recorded HashKV does not match, and a drill without an etcd of the backup's minor each fail with a
// clear message and a non-zero exit. Every drill leaves no process and no scratch file behind, and
// its result shows in the store and in `backup list`.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/fs.h"
#include "store/layout.h"
#include "test/support/cli_fixture.h"
#include "test/support/release_fixture.h"
#include "test/support/skips.h"

namespace etcdadm::test {

namespace {

class Drill : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    scratch_ = dir_ / "scratch";
    make_dirs(scratch_, 0700);
  }

  // The source member with some history: puts, deletes, a compaction, more puts.
  EtcdMember& member_with_history() {
    auto& m = start_member();
    EtcdClient client(m.connection());
    load_keys(client, "/drill/a-", 40, 200, 3);
    etcdserverpb::DeleteRangeRequest del;
    del.set_key("/drill/a-000000");
    del.set_range_end("/drill/a-000010");
    client.delete_range(del);
    client.compact(client.put("/drill/mark", "1").header().revision(), /*physical=*/true);
    load_keys(client, "/drill/b-", 25, 100, 4);
    return m;
  }

  ProcessResult drill(std::vector<std::string> extra, const RunOptions& options = {}) {
    std::vector<std::string> args = {"backup", "drill", "--store", store_, "--scratch-dir", scratch_, "-o", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return cli(args, options);
  }

  static nlohmann::json json_of(const ProcessResult& r) {
    auto start = r.output.find("{\n");
    auto end = r.output.rfind("\n}");
    if (start == std::string::npos || end == std::string::npos) return nullptr;
    return nlohmann::json::parse(r.output.substr(start, end + 2 - start));
  }

  // Nothing of the drill is left: no scratch file, no process started on it.
  void expect_nothing_left() {
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(scratch_)) left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << "left in the scratch dir: " << left.front();
    auto running = processes_mentioning(scratch_);
    EXPECT_TRUE(running.empty()) << "still running: " << running.front();
  }

  std::string meta_path(const std::string& name) { return store_ + "/" + name + "/" + kBackupMetaFile; }

  nlohmann::json last_drill(const std::string& name) {
    for (const auto& b : cli_json({"backup", "list", "--store", store_, "-o", "json"})) {
      if (b["backup"] == name) return b["lastDrill"];
    }
    ADD_FAILURE() << name << " not listed";
    return nullptr;
  }

  // What `etcdctl endpoint hashkv --rev` says of `m`: the oracle for the recorded and served hashes.
  uint32_t etcdctl_hashkv(const EtcdMember& m, int64_t revision) {
    auto r = run_process({"etcdctl", "--endpoints", m.client_url(), "endpoint", "hashkv", "--rev", std::to_string(revision),
                          "-w", "json"},
                         etcdctl_options());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto j = nlohmann::json::parse(r.output.substr(r.output.find('[')));
    return j[0]["HashKV"]["hash"].get<uint32_t>();
  }

  std::string scratch_;
};

TEST_F(Drill, GoodBackupServesItsRevisionKeysAndHashAndReportsItsRto) {
  auto& m = member_with_history();
  auto saved = save(m);
  const std::string name = saved["backup"];
  const int64_t revision = saved["revision"];
  auto meta = nlohmann::json::parse(read_file(meta_path(name)));
  ASSERT_TRUE(meta.contains("sourceHashKV")) << meta.dump(2);
  EXPECT_EQ(meta["sourceHashKV"]["revision"], revision);
  EXPECT_EQ(meta["sourceHashKV"]["hash"].get<uint32_t>(), etcdctl_hashkv(m, revision));

  auto r = drill({"latest"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = json_of(r);
  ASSERT_TRUE(report.is_object()) << r.output;
  EXPECT_EQ(report["passed"], true) << report.dump(2);
  EXPECT_EQ(report["backup"], name);
  EXPECT_EQ(report["etcd"]["version"], etcd_under_test().version);
  std::vector<std::string> phases;
  for (const auto& p : report["phases"]) phases.push_back(p["name"]);
  EXPECT_EQ(phases, (std::vector<std::string>{"fetch+verify", "restore", "start", "checks"}));
  EXPECT_GT(report["rtoSeconds"].get<double>(), 0.0);
  std::map<std::string, nlohmann::json> checks;
  for (const auto& c : report["checks"]) checks[c["name"]] = c;
  ASSERT_EQ(checks.size(), 3u) << report.dump(2);
  for (const auto& [check, c] : checks) EXPECT_EQ(c["passed"], true) << c.dump();
  EXPECT_EQ(checks["revision"]["served"], std::to_string(revision));
  EXPECT_EQ(checks["keys"]["served"], "56");  // 40 - 10 deleted + the mark + 25
  EXPECT_EQ(checks["hashkv"]["expected"].get<std::string>().rfind(std::to_string(etcdctl_hashkv(m, revision)), 0), 0u)
      << checks["hashkv"].dump();
  std::printf("[drill] etcd %s: RTO %.2f s (%s)\n", etcd_under_test().version.c_str(), report["rtoSeconds"].get<double>(),
              report["phases"].dump().c_str());
  expect_nothing_left();

  // The result is beside the backup (every host sees it) and in `backup list`.
  auto in_store = nlohmann::json::parse(read_file(store_ + "/" + name + "/" + kDrillResultFile));
  EXPECT_EQ(in_store["result"], "passed");
  EXPECT_EQ(in_store["details"]["checks"].size(), 3u);
  auto listed = last_drill(name);
  ASSERT_TRUE(listed.is_object());
  EXPECT_EQ(listed["result"], "passed");
  EXPECT_EQ(listed["etcdVersion"], etcd_under_test().version);
  // A catalog that never saw the drill learns it from the store.
  std::filesystem::remove(dir_ / "catalog.db");
  EXPECT_EQ(last_drill(name)["result"], "passed");
  auto table = cli({"backup", "list", "--store", store_});
  EXPECT_NE(table.output.find("DRILLED"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find(" ok "), std::string::npos) << table.output;
}

// docs/security.md: the drill's member serves every Secret of the backup without TLS or auth, so
// it listens on no TCP port, only on unix sockets in a directory no other user can enter.
// One revision for one backup in every result: what save recorded (the member's revision), what
// verify, inspect and get read from the snapshot, and what a member restored from it serves, which
// the drill asks. The two cases where `etcdctl snapshot status` says less are both here: an empty
// store (0 there, 1 served) and one whose newest entries a compaction removed (a delete's
// tombstone compacted away, on 3.4: the newest surviving entry there, the compaction's revision
// served). A backup taken at its member's compaction revision drills too: etcd 3.5+ answer HashKV
// there from the compaction's record, which no restored member reproduces (backup/save.cc).
TEST_F(Drill, EveryResultGivesTheRevisionTheRestoredMemberServesEvenWhereEtcdctlSaysLess) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto check = [&](const std::string& what, int64_t served_by_source, int64_t etcdctl_says) {
    SCOPED_TRACE(what);
    auto saved = save(m);
    const std::string name = saved["backup"];
    EXPECT_EQ(saved["revision"], served_by_source) << saved.dump();
    std::string file = dir_ / (name + ".db");
    ASSERT_EQ(cli({"backup", "restore", name, "--store", store_, "--output-file", file}).exit_code, 0);
    auto theirs = snapshot_status(file);
    // (3.5+ keep a tombstone at the compaction revision, so there the tool sees it too)
    EXPECT_TRUE(theirs["revision"] == etcdctl_says || theirs["revision"] == served_by_source) << theirs.dump();
    auto verified = cli_json({"backup", "verify", name, "--store", store_, "-o", "json"});
    EXPECT_EQ(verified["revision"], served_by_source) << verified.dump();
    auto inspected = cli_json({"backup", "inspect", name, "--store", store_, "-o", "json"});
    EXPECT_EQ(inspected["revision"], served_by_source) << inspected.dump();
    auto got = cli_json({"backup", "get", name, "/", "--prefix", "--store", store_, "-o", "json"});
    EXPECT_EQ(got["revision"], served_by_source) << got.dump();
    for (const auto& b : cli_json({"backup", "list", "--store", store_, "-o", "json"})) {
      if (b["backup"] == name) {
        EXPECT_EQ(b["revision"], served_by_source) << b.dump();
      }
    }
    auto r = drill({name});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto report = json_of(r);
    ASSERT_TRUE(report.is_object()) << r.output;
    EXPECT_EQ(report["passed"], true) << report.dump(2);
    for (const auto& c : report["checks"]) {
      if (c["name"] == "revision") {
        EXPECT_EQ(c["served"], std::to_string(served_by_source)) << c.dump();
      }
    }
  };
  check("an empty store", client.status(m.client_url()).header().revision(), 0);
  ASSERT_EQ(client.status(m.client_url()).header().revision(), 1);

  const int64_t kept = client.put("/keep", "1").header().revision();
  client.put("/gone", "1");
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("/gone");
  const int64_t deleted = client.delete_range(del).header().revision();
  client.compact(deleted, /*physical=*/true);
  check("the newest entries compacted away", deleted, kept);
}

TEST_F(Drill, TheRestoredMemberListensOnNoTcpPortOnlyOnSocketsInAPrivateDirectory) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 20, 100);
  save(m);
  FailpointPause pause(dir_.path(), "drill/member/serving");
  std::vector<std::string> argv = {ETCDADM_BIN, "backup", "drill", "--store", store_, "--scratch-dir", scratch_};
  RunOptions ro;
  ro.env = pause.env();
  ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
  const std::string log = dir_ / "drill.log";
  auto child = ChildProcess::start(argv, log, ro);
  ASSERT_TRUE(pause.reached()) << read_file(log);

  // The drill's etcd: the process serving a data dir under the scratch dir.
  std::string etcd_pid;
  for (const auto& p : processes_mentioning(scratch_)) {
    if (p.find("--data-dir") != std::string::npos) etcd_pid = p.substr(0, p.find(':'));
  }
  ASSERT_FALSE(etcd_pid.empty()) << read_file(log);
  const auto inodes = socket_inodes_of(std::stoi(etcd_pid));
  ASSERT_FALSE(inodes.empty());
  for (const char* table : {"tcp", "tcp6"}) {
    for (const auto& row : proc_net_rows(table)) {
      ASSERT_GE(row.size(), 10u);
      EXPECT_EQ(inodes.count(row[9]), 0u) << "the drill's etcd holds a TCP socket (" << table << ", local "
                                          << row[1] << ", state " << row[3] << ")";
    }
  }
  // A socket's name is as etcd bound it: relative names resolve in its working directory.
  const std::filesystem::path cwd = std::filesystem::read_symlink("/proc/" + etcd_pid + "/cwd");
  std::set<std::string> socket_dirs;
  for (const auto& row : proc_net_rows("unix")) {
    // Listening sockets only (flag __SO_ACCEPTCON): the ends of connections etcd made to itself
    // (Go autobinds them to abstract names, "@" and five hex digits) accept no one.
    if (row.size() >= 8 && inodes.count(row[6]) && row[3] == "00010000") {
      EXPECT_NE(row[7].front(), '@') << "an abstract socket has no permissions: anyone on the host may connect";
      const std::filesystem::path bound = cwd / row[7];  // `/` keeps an absolute name as it is
      EXPECT_TRUE(std::filesystem::is_socket(bound)) << bound;
      socket_dirs.insert(bound.parent_path().string());
    }
  }
  ASSERT_FALSE(socket_dirs.empty()) << "the drill's etcd listens on no unix socket";
  for (const auto& d : socket_dirs) {
    EXPECT_EQ(d.rfind(scratch_ + "/", 0), 0u) << d << " is not in the scratch dir";
    struct stat st {};
    ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << d;
  }

  child.kill_now(SIGTERM);
  EXPECT_EQ(child.wait(), 128 + SIGTERM) << read_file(log);
  expect_nothing_left();
}

// The source compacted between the snapshot and its HashKV: the drill's member is compacted to the
// same point before hashing. Made deterministic by compacting after the save and recording what
// etcdctl then says of the source, as a save racing the compaction would have.
TEST_F(Drill, SourceCompactedAfterTheSnapshotIsComparedAtItsCompactionPoint) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  for (int round = 0; round < 2; ++round) {  // every key twice, one revision each: a compaction drops history
    for (int i = 0; i < 30; ++i) client.put("/drill/c-" + std::to_string(i), "value " + std::to_string(round));
  }
  auto saved = save(m);
  const std::string name = saved["backup"];
  const int64_t revision = saved["revision"];
  const int64_t compact_at = revision - 20;
  client.compact(compact_at, /*physical=*/true);
  auto meta = nlohmann::json::parse(read_file(meta_path(name)));
  meta["sourceHashKV"]["hash"] = etcdctl_hashkv(m, revision);
  meta["sourceHashKV"]["compactRevision"] = compact_at;
  write_file_atomic(meta_path(name), meta.dump(2), 0600);

  auto r = drill({name});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = json_of(r);
  bool compared = false;
  for (const auto& c : report["checks"]) {
    if (c["name"] != "hashkv") continue;
    compared = true;
    EXPECT_EQ(c["passed"], true) << c.dump();
    EXPECT_NE(c.value("note", "").find("compacted to the source's compaction revision"), std::string::npos) << c.dump();
  }
  EXPECT_TRUE(compared) << report.dump(2);
  expect_nothing_left();
}

TEST_F(Drill, RecordedHashThatTheRestoredMemberDoesNotServeFailsTheDrill) {
  auto& m = member_with_history();
  auto saved = save(m);
  const std::string name = saved["backup"];
  auto meta = nlohmann::json::parse(read_file(meta_path(name)));
  meta["sourceHashKV"]["hash"] = meta["sourceHashKV"]["hash"].get<uint32_t>() ^ 1u;
  write_file_atomic(meta_path(name), meta.dump(2), 0600);

  auto r = drill({name});
  EXPECT_EQ(r.exit_code, 5) << r.output;  // corrupt data
  EXPECT_NE(r.output.find("does not serve what it should: hashkv: expected"), std::string::npos) << r.output;
  auto report = json_of(r);
  EXPECT_EQ(report["passed"], false);
  EXPECT_GT(report["rtoSeconds"].get<double>(), 0.0);  // it did restore and start
  expect_nothing_left();
  auto listed = last_drill(name);
  ASSERT_TRUE(listed.is_object());
  EXPECT_EQ(listed["result"], "failed");
  EXPECT_NE(listed["message"].get<std::string>().find("hashkv"), std::string::npos) << listed.dump();
  auto table = cli({"backup", "list", "--store", store_});
  EXPECT_NE(table.output.find("whose last drill failed"), std::string::npos) << table.output;

  // Without a recorded hash (a backup from before it was recorded) the drill passes on the other
  // checks and says what it could not check.
  meta.erase("sourceHashKV");
  write_file_atomic(meta_path(name), meta.dump(2), 0600);
  auto older = drill({name});
  ASSERT_EQ(older.exit_code, 0) << older.output;
  auto older_report = json_of(older);
  EXPECT_EQ(older_report["checks"].size(), 2u);
  ASSERT_EQ(older_report["notes"].size(), 1u);
  EXPECT_NE(older_report["notes"][0].get<std::string>().find("no HashKV recorded"), std::string::npos);
  EXPECT_EQ(last_drill(name)["result"], "passed");
  expect_nothing_left();
}

TEST_F(Drill, DamagedBackupFailsBeforeAnythingStarts) {
  auto& m = member_with_history();
  auto saved = save(m);
  const std::string name = saved["backup"];
  std::string data = store_ + "/" + name + "/etcd.backup.gz";
  std::string bytes = read_file(data);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_file_atomic(data, bytes, 0600);

  auto r = drill({name});
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("drill of backup " + name + " failed"), std::string::npos) << r.output;
  auto report = json_of(r);
  EXPECT_EQ(report["failedPhase"], "fetch+verify") << report.dump(2);
  EXPECT_FALSE(report.contains("rtoSeconds"));
  expect_nothing_left();
  EXPECT_EQ(last_drill(name)["result"], "failed");
  auto list = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  EXPECT_EQ(list[0]["status"], "damaged") << list.dump(2);
}

// Only an etcd of the backup's minor is started: another minor on PATH is named in the error, and a
// verified release in the cache is used when PATH has none.
TEST_F(Drill, WithoutAnEtcdOfTheBackupsMinorItNamesTheVersionAndTheCacheServes) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/drill/d-", 10, 50, 7);
  auto saved = save(m);
  const std::string name = saved["backup"];
  const std::string version = etcd_under_test().version;

  // PATH holds only an etcd of another minor, the cache nothing.
  std::string other;
  for (const auto& minor : pinned_etcd_minors()) {
    if (minor != etcd_under_test().minor && etcd_release_available(minor)) other = etcd_release(minor).etcd();
  }
  if (other.empty()) ETCDADM_SKIP_OUTSIDE_CI() << "no etcd of another minor on this machine";
  std::string path_dir = dir_ / "path";
  make_dirs(path_dir, 0755);
  std::filesystem::create_symlink(other, path_dir + "/etcd");
  RunOptions no_etcd;
  no_etcd.env["PATH"] = path_dir;
  std::string cache = dir_ / "cache";
  auto r = drill({name, "--cache-dir", cache}, no_etcd);
  EXPECT_EQ(r.exit_code, 3) << r.output;  // not found
  EXPECT_NE(r.output.find("no etcd " + etcd_under_test().minor + " binary to run a backup of etcd " + version),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("PATH has etcd "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--etcd-binary"), std::string::npos) << r.output;
  expect_nothing_left();
  EXPECT_EQ(last_drill(name)["result"], "failed");

  // The release, verified into the cache, is found there.
  auto release = make_local_release(dir_ / "releases");
  auto dl = cli({"download", "--cache-only", "--release-url", release.base_url, "--version", release.version,
                 "--cache-dir", cache});
  ASSERT_EQ(dl.exit_code, 0) << dl.output;
  auto ok = drill({name, "--cache-dir", cache}, no_etcd);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto report = json_of(ok);
  EXPECT_EQ(report["etcd"]["version"], version);
  EXPECT_NE(report["etcd"]["source"].get<std::string>().find(cache), std::string::npos) << report.dump(2);
  expect_nothing_left();
  EXPECT_EQ(last_drill(name)["result"], "passed");
}

}  // namespace

}  // namespace etcdadm::test
