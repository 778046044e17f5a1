// Every bad input ends in a clear message and a non-zero exit, and nothing is lost or half written:
// damaged backups are never restored, missing pieces are reported, dead endpoints are named, and a
// save killed half-way never shows up as a backup.
#include <gtest/gtest.h>

#include <sstream>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "common/fs.h"
#include "test/support/cli_fixture.h"
#include "test/support/release_fixture.h"

namespace etcdadm::test {

namespace {

class BadInput : public CliTest {
 protected:
  // One member with some data and one backup; returns the backup name.
  std::string backup_one() {
    auto& m1 = start_member();
    EtcdClient client(m1.connection());
    load_keys(client, "/registry/secrets/ns/s-", 200, 1000, 3);
    auto saved = save(m1);
    return saved["backup"];
  }
  std::string data_file(const std::string& name) { return store_ + "/" + name + "/etcd.backup.gz"; }

  // Restore attempts that must fail leave no data dir, no output file and no staging dir behind.
  void expect_never_restored(const std::string& name, int exit_code, const std::string& message) {
    std::string data = dir_ / "restored";
    auto r = cli({"backup", "restore", name, "--store", store_, "--data-dir", data, "--name", "x",
                  "--initial-advertise-peer-urls", "http://127.0.0.1:1"});
    EXPECT_EQ(r.exit_code, exit_code) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_FALSE(path_exists(data));
    std::string out = dir_ / "out.db";
    auto o = cli({"backup", "restore", name, "--store", store_, "--output", out});
    EXPECT_EQ(o.exit_code, exit_code) << o.output;
    EXPECT_FALSE(path_exists(out));
    auto v = cli({"backup", "verify", name, "--store", store_});
    EXPECT_EQ(v.exit_code, exit_code) << v.output;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      EXPECT_EQ(e.path().filename().string().find(".etcdadm-restore-"), std::string::npos) << e.path();
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
    }
  }
};

}  // namespace

TEST_F(BadInput, FlippedByteInStoredFile) {
  std::string name = backup_one();
  std::string bytes = read_file(data_file(name));
  bytes[bytes.size() / 2] ^= 0x01;
  write_file_atomic(data_file(name), bytes);
  expect_never_restored(name, 5, "does not match its recorded SHA-256");
}

// A restore never replaces the data dir of an etcd that still serves from it, --force or not: it
// names the process and leaves the member untouched. Once the member is stopped, --force works.
TEST_F(BadInput, RestoreRefusesADataDirInUseEvenWithForce) {
  std::string name = backup_one();
  EtcdMember& m = *members_[0];
  EtcdClient client(m.connection());
  client.put("/after-backup", "still here");
  std::string data_dir = m.options().data_dir;
  auto before = all_keys(client);
  for (bool force : {false, true}) {
    std::vector<std::string> args = {"backup", "restore", name, "--store", store_, "--data-dir", data_dir,
                                     "--name", "m1", "--initial-advertise-peer-urls", m.peer_url()};
    if (force) args.push_back("--force");
    auto r = cli(args);
    EXPECT_EQ(r.exit_code, 4) << r.output;
    EXPECT_NE(r.output.find("in use"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("PID " + std::to_string(m.pid())), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("stop that etcd first"), std::string::npos) << r.output;
  }
  // The member kept serving from its own, untouched data.
  EXPECT_EQ(all_keys(client), before);
  client.put("/still-writable", "yes");
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
    EXPECT_EQ(e.path().filename().string().find(".etcdadm-restore-"), std::string::npos) << e.path();
  }
  m.stop();
  auto r = cli({"backup", "restore", name, "--store", store_, "--data-dir", data_dir, "--name", "m1",
                "--initial-advertise-peer-urls", m.peer_url(), "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(BadInput, TruncatedStoredFile) {
  std::string name = backup_one();
  std::string bytes = read_file(data_file(name));
  write_file_atomic(data_file(name), bytes.substr(0, bytes.size() / 2));
  expect_never_restored(name, 5, "damaged");
}

TEST_F(BadInput, ConsistentlyReplacedDataIsCaughtByRecordedHashes) {
  // Someone swaps in a different, perfectly valid gzip'd snapshot: gzip CRC and trailer are fine,
  // only the recorded hashes can tell.
  std::string name = backup_one();
  EtcdClient client(members_[0]->connection());
  client.put("/extra", "changed");
  std::string snap = dir_ / "other.db";
  etcdctl_snapshot(*members_[0], snap);
  ASSERT_EQ(run_process({"sh", "-c", "gzip -1 -c '" + snap + "' > '" + data_file(name) + "'"}).exit_code, 0);
  // The catalog remembers the old size; rebuild so the check relies on the metadata, not the index.
  ASSERT_EQ(cli({"backup", "list", "--store", store_, "--rebuild-catalog"}).exit_code, 0);
  expect_never_restored(name, 5, "SHA-256");
}

// A backup is complete by _etcd_backup.meta, or by etcdadm-backup.json beside its data file (both
// written only after the data file passed its checks): without either, it is no backup.
TEST_F(BadInput, MissingMetadataMeansNoBackup) {
  std::string name = backup_one();
  ::unlink((store_ + "/" + name + "/_etcd_backup.meta").c_str());  // absent anyway for etcd 3.7
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json", "--rebuild-catalog"});
  ASSERT_EQ(listed.size(), 1u) << "etcdadm-backup.json and the data file still make the backup";
  ASSERT_EQ(::unlink((store_ + "/" + name + "/etcdadm-backup.json").c_str()), 0);
  listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  EXPECT_EQ(listed.size(), 0u);
  auto r = cli({"backup", "restore", name, "--store", store_, "--output", dir_ / "x.db"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
}

TEST_F(BadInput, MissingDataFile) {
  std::string name = backup_one();
  ASSERT_EQ(::unlink(data_file(name).c_str()), 0);
  ASSERT_EQ(cli({"backup", "list", "--store", store_, "--rebuild-catalog"}).exit_code, 0);
  auto r = cli({"backup", "verify", name, "--store", store_});
  EXPECT_NE(r.exit_code, 0) << r.output;
  if (path_exists(store_ + "/" + name + "/_etcd_backup.meta")) {
    EXPECT_NE(r.output.find("has no data file (etcd.backup.gz)"), std::string::npos) << r.output;
  } else {
    // Complete only by its metadata beside the data file (etcd 3.7, which etcd-manager does not
    // restore): without the data file it is no backup at all.
    EXPECT_EQ(r.exit_code, 3) << r.output;
  }
}

// A store writer substitutes another, self-consistent snapshot and points the metadata at it with a
// `dataFile` that is a path (with the digests of the substitute). The data file's name is the
// format's own: the metadata is refused, nothing is restored, and nothing outside the backup's
// directory is read. (Before the fix, restore used sub/etcd.backup.gz and succeeded.)
TEST_F(BadInput, TheDataFileIsTheFormatsOwnNameNotAPathFromTheMetadata) {
  std::string name = backup_one();
  EtcdClient client(members_[0]->connection());
  client.put("/planted", "by whoever can write the store");
  std::string snap = dir_ / "other.db";
  etcdctl_snapshot(*members_[0], snap);
  make_dirs(store_ + "/" + name + "/sub");
  std::string substitute = store_ + "/" + name + "/sub/etcd.backup.gz";
  ASSERT_EQ(run_process({"sh", "-c", "gzip -1 -c '" + snap + "' > '" + substitute + "'"}).exit_code, 0);
  std::string meta_path = store_ + "/" + name + "/etcdadm-backup.json";
  auto meta = nlohmann::json::parse(read_file(meta_path));
  meta["dataFile"] = "sub/etcd.backup.gz";
  meta["storedSha256"] = file_sha256(substitute);
  meta["storedSize"] = std::filesystem::file_size(substitute);
  meta.erase("dbSha256");
  write_file_atomic(meta_path, meta.dump(2));
  ASSERT_EQ(cli({"backup", "list", "--store", store_, "--rebuild-catalog"}).exit_code, 0);
  expect_never_restored(name, 5, "names the data file 'sub/etcd.backup.gz'");
}

// A backup whose metadata records no SHA-256 and says its snapshot has no hash trailer could be
// anything: whoever can write the store swaps in a db of their own (here one without a trailer,
// as copied out of a data dir) and nothing could tell. It is never accepted as verified.
TEST_F(BadInput, ABackupWithoutDigestsOrTrailerIsNeverAcceptedAsVerified) {
  std::string name = backup_one();
  EtcdClient client(members_[0]->connection());
  client.put("/planted", "by whoever can write the store");
  std::string snap = dir_ / "other.db";
  etcdctl_snapshot(*members_[0], snap);
  std::string db = read_file(snap);
  write_file_atomic(snap, db.substr(0, db.size() - 32), 0600);  // without its SHA-256 trailer
  ASSERT_EQ(run_process({"sh", "-c", "gzip -1 -c '" + snap + "' > '" + data_file(name) + "'"}).exit_code, 0);
  std::string meta_path = store_ + "/" + name + "/etcdadm-backup.json";
  auto meta = nlohmann::json::parse(read_file(meta_path));
  meta["storedSha256"] = "";
  meta.erase("dbSha256");
  meta["hashTrailer"] = false;
  meta["storedSize"] = std::filesystem::file_size(data_file(name));
  meta["dbSize"] = db.size() - 32;
  meta["snapshotSize"] = db.size() - 32;
  write_file_atomic(meta_path, meta.dump(2));
  ASSERT_EQ(cli({"backup", "list", "--store", store_, "--rebuild-catalog"}).exit_code, 0);
  expect_never_restored(name, 5, "cannot be verified");
}

// The local store never follows a symbolic link on the way to a file, not only at its last
// component: a backup directory replaced by a link to another directory (a self-consistent backup
// elsewhere, or a live data dir) is not read through. (Before the fix, a catalog that knew the
// backup restored what the link pointed at.)
TEST_F(BadInput, ALinkedDirectoryInTheLocalStoreIsNeverReadThrough) {
  std::string name = backup_one();
  ASSERT_EQ(cli({"backup", "list", "--store", store_}).exit_code, 0);  // the catalog knows it
  std::string elsewhere = dir_ / "elsewhere";
  std::filesystem::rename(store_ + "/" + name, elsewhere);
  std::filesystem::create_directory_symlink(elsewhere, store_ + "/" + name);
  std::string data = dir_ / "restored";
  auto r = cli({"backup", "restore", name, "--store", store_, "--data-dir", data, "--name", "x",
                "--initial-advertise-peer-urls", "http://127.0.0.1:1"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(path_exists(data));
  auto v = cli({"backup", "verify", name, "--store", store_});
  EXPECT_NE(v.exit_code, 0) << v.output;
}

TEST_F(BadInput, UnknownTimestampListsNearest) {
  std::string name = backup_one();
  auto r = cli({"backup", "restore", "2001-01-01T00:00:00Z-000000", "--store", store_, "--output", dir_ / "x.db"});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("nearest in time"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(name), std::string::npos) << r.output;
  auto empty = cli({"backup", "restore", "latest", "--store", dir_ / "nowhere", "--output", dir_ / "x.db"});
  EXPECT_EQ(empty.exit_code, 3) << empty.output;
  EXPECT_NE(empty.output.find("does not exist"), std::string::npos) << empty.output;
}

TEST_F(BadInput, UnreachableEndpoint) {
  int port = free_port();  // nothing listens there
  auto r = cli({"backup", "save", "--store", store_, "--endpoints", "127.0.0.1:" + std::to_string(port), "--dial-timeout", "1s"});
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_NE(r.output.find("connection refused"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r.output;
  EXPECT_FALSE(path_exists(store_ + "/etcdadm-store.json"));  // nothing written
}

TEST_F(BadInput, SaveFallsBackToAHealthyMember) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  client.put("k", "v");
  int dead = free_port();
  auto r = cli({"--log-level", "warn", "backup", "save", "--store", store_, "--endpoints",
                "127.0.0.1:" + std::to_string(dead) + "," + m1.client_url(), "--dial-timeout", "1s"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped"), std::string::npos) << r.output;  // the warning names the dead one
}

TEST_F(BadInput, KilledMidSaveLeavesNoBackup) {
  auto& m1 = start_member();
  EtcdClient client(m1.connection());
  load_keys(client, "/registry/pods/", 500, 500, 5);
  std::vector<std::string> argv = {ETCDADM_BIN, "backup", "save", "--store", store_, "--endpoints", m1.client_url()};
  RunOptions ro;
  ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
  // The save stops (common/failpoint.h) once the first piece of the snapshot went to its data
  // file, and kill -9 comes while it waits there: mid-write, whatever the machine's speed.
  FailpointPause pause(dir_.path(), "save/snapshot/streaming");
  for (const auto& [k, v] : pause.env()) ro.env[k] = v;
  auto child = ChildProcess::start(argv, dir_ / "save.log", ro);
  ASSERT_TRUE(pause.reached()) << read_file(dir_ / "save.log");
  // The guard: the data file's temp (not the store marker's) exists when the kill lands.
  for (int i = 0; i < 2000 && !has_temp_data_file(store_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(has_temp_data_file(store_)) << read_file(dir_ / "save.log");
  child.kill_now(SIGKILL);
  EXPECT_EQ(child.wait(), 128 + SIGKILL);

  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  EXPECT_EQ(listed.size(), 0u);
  auto latest = cli({"backup", "restore", "latest", "--store", store_, "--output", dir_ / "x.db"});
  EXPECT_EQ(latest.exit_code, 3) << latest.output;
  auto temp_files = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(store_)) {
      if (e.path().filename().string().find(".tmp-") != std::string::npos) ++n;
    }
    return n;
  };
  EXPECT_EQ(temp_files(), 1) << "the killed save's temp file is still there";
  // The store stays usable: the next save works, is the only backup listed, and removes the
  // killed save's leftovers once they are older than --clean-abandoned-after.
  save(m1);
  EXPECT_EQ(temp_files(), 1) << "younger than the default 24h: kept (it could be a running save)";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  save(m1, {"--clean-abandoned-after", "1s"});
  EXPECT_EQ(temp_files(), 0);
  EXPECT_EQ(cli_json({"backup", "list", "--store", store_, "-o", "json"}).size(), 2u);
}

// A mistyped object-store URL never becomes a directory under the working directory (from cron,
// nobody would notice that no backup reaches the bucket): exit 2, the probable URL in the hint, and
// nothing created, on every command that takes --store.
TEST_F(BadInput, MistypedStoreUrlIsRefusedNotADirectory) {
  auto& m1 = start_member();
  std::string cwd = dir_ / "cwd";
  make_dirs(cwd);
  RunOptions in_cwd;
  in_cwd.working_dir = cwd;
  for (std::string url : {"s3:/my-bucket/etcd", "s3//my-bucket/etcd", "gs:/b/etcd", "backups"}) {
    for (std::vector<std::string> args : {std::vector<std::string>{"backup", "save", "--endpoints", m1.client_url()},
                                          {"backup", "list"},
                                          {"backup", "sidecar", "--endpoints", m1.client_url(), "--listen", ""}}) {
      args.insert(args.end(), {"--store", url});
      auto r = cli(args, in_cwd);
      EXPECT_EQ(r.exit_code, 2) << url << ": " << r.output;
      if (url != "backups") {
        EXPECT_NE(r.output.find("did you mean " + std::string(url[0] == 's' ? "s3://my-bucket/etcd" : "gs://b/etcd")),
                  std::string::npos)
            << r.output;
      } else {
        EXPECT_NE(r.output.find("./backups"), std::string::npos) << r.output;
      }
    }
  }
  EXPECT_TRUE(is_missing_or_empty_dir(cwd)) << "a store directory was created under the working directory";
  // Written as ./path, a relative store is what the operator meant.
  auto ok = cli({"backup", "save", "--endpoints", m1.client_url(), "--store", "./local-store"}, in_cwd);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(path_exists(cwd + "/local-store/etcdadm-store.json"));
}

TEST_F(BadInput, BadFlags) {
  auto r = cli({"backup", "save", "--store", "ftp://x"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unsupported scheme"), std::string::npos) << r.output;
  auto t = cli({"backup", "restore", "latest", "--store", store_});
  EXPECT_EQ(t.exit_code, 2) << t.output;
  EXPECT_NE(t.output.find("--data-dir"), std::string::npos) << t.output;
  auto u = cli({"backup", "list"});  // no store at all
  EXPECT_EQ(u.exit_code, 2) << u.output;
  auto w = cli({"backup", "frobnicate"});
  EXPECT_EQ(w.exit_code, 2) << w.output;
}

}  // namespace etcdadm::test

namespace etcdadm::test {

TEST_F(BadInput, JsonLogLinesAreOneObjectEach) {
  auto& m1 = start_member();
  auto r = cli({"--log-format", "json", "--log-level", "info", "backup", "save", "--store", store_, "--endpoints",
                m1.client_url()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int json_lines = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line);  // throws (fails the test) on a broken line
    EXPECT_TRUE(j.contains("time") && j.contains("level") && j.contains("msg")) << line;
    ++json_lines;
  }
  EXPECT_GE(json_lines, 2) << r.output;  // "taking snapshot ..." and "backup ... saved"
  auto bad = cli({"--log-format", "xml", "backup", "list", "--store", store_});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace etcdadm::test
