// Continuous backups and point-in-time restore, on the etcd under test: a sidecar with --continuous
// keeps the change log while a write load runs (puts, deletes, multi-op txns, a compaction, a lease that
// expires); restores to three revisions give members whose HashKV and every key (value, version,
// create and mod revision, lease) at that revision equal the live cluster's; a damaged, missing or
// misnamed segment is refused before any data dir exists.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "changelog/heartbeat.h"
#include "changelog/segment.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "common/timefmt.h"
#include "store/backend/local/local_store.h"
#include "test/support/cli_fixture.h"
#include "test/support/skips.h"

namespace etcdadm::test {

namespace {

using namespace std::chrono_literals;

int64_t current_revision(EtcdClient& c, const std::string& endpoint) { return c.status(endpoint).header().revision(); }

class ChangeLog : public CliTest {
 protected:
  // The schedule never fires during a test (an @hourly one did, at a full hour, and added a backup
  // the test did not expect): every backup here is the test's own or one the log asks for.
  ChildProcess start_sidecar(const EtcdMember& m, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {ETCDADM_BIN, "--log-level", "debug", "backup", "sidecar", "--store", store_,
                                     "--endpoints", m.client_url(), "--continuous"};
    if (std::find(extra.begin(), extra.end(), "--schedule") == extra.end()) extra.insert(extra.end(), {"--schedule", "@yearly"});
    if (std::find(extra.begin(), extra.end(), "--listen") == extra.end()) extra.insert(extra.end(), {"--listen", ""});
    if (std::find(extra.begin(), extra.end(), "--segment-interval") == extra.end()) extra.insert(extra.end(), {"--segment-interval", "1s"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / "sidecar-catalog.db";
    return ChildProcess::start(argv, dir_ / "sidecar.log", ro);
  }

  // The furthest revision the change log in the store reaches from `from`.
  int64_t log_reaches(const std::string& cluster_id, int64_t from) {
    LocalStore store(store_);
    return changelog::chain_from(changelog::list_segments(store, cluster_id), from).reaches;
  }

  void wait_for_log(const std::string& cluster_id, int64_t from, int64_t revision) {
    for (int i = 0; i < 300; ++i) {
      if (log_reaches(cluster_id, from) >= revision) return;
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << "the change log did not reach revision " << revision << ": " << read_file(dir_ / "sidecar.log");
  }

  ProcessResult restore_to(int64_t revision, const std::string& data_dir, int peer_port) {
    std::vector<std::string> args = {"backup", "restore", "latest", "--store", store_, "--to-revision",
                                     std::to_string(revision), "--data-dir", data_dir, "--name", "r",
                                     "--initial-cluster-token", "etcd-test", "--initial-advertise-peer-urls",
                                     "http://127.0.0.1:" + std::to_string(peer_port), "-o", "json",
                                     // the replay is compared revision for revision (HashKV at the target)
                                     "--keep-revision"};
    args.insert(args.end(), read_args_.begin(), read_args_.end());
    return cli(args);
  }

  // Restores to `target` into a new data dir, starts etcd on it, and expects its HashKV and every
  // key's fields at `target` to equal the live member's. `compacted_at`: the live member compacted
  // at that revision after the snapshot (the log has no compactions: the restored member is
  // compacted at the same revision first, since HashKV covers only the uncompacted history).
  void expect_exact_restore(const EtcdMember& live, EtcdClient& client, int64_t target, const std::string& dir_name,
                            int64_t compacted_at = 0) {
    expect_restore_equals(target, dir_name, client.hash_kv(live.client_url(), target).hash(), all_key_fields(client, target),
                          compacted_at);
  }
  // The same against what the live member showed before it compacted `target` away.
  void expect_restore_equals(int64_t target, const std::string& dir_name, uint32_t hash,
                             const std::vector<std::string>& kvs, int64_t compacted_at = 0) {
    SCOPED_TRACE("target revision " + std::to_string(target));
    EtcdOptions ro;
    ro.name = "r";
    ro.peer_port = free_port();
    ro.data_dir = dir_ / dir_name;
    auto r = restore_to(target, ro.data_dir, ro.peer_port);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto& restored = start_member(ro);
    EtcdClient rc(restored.connection());
    if (compacted_at > 0) {
      auto compacted = run_process({"etcdctl", "--endpoints", restored.client_url(), "compact", std::to_string(compacted_at)},
                                   etcdctl_options());
      ASSERT_EQ(compacted.exit_code, 0) << compacted.output;
    }
    EXPECT_EQ(rc.hash_kv(restored.client_url(), target).hash(), hash);
    EXPECT_EQ(all_key_fields(rc, target), kvs);
    restored.stop();
  }

  // An encrypted store: saves and the sidecar encrypt to an identity made by age-keygen; restores
  // read with it (read_args_).
  std::vector<std::string> encrypt() {
    std::string key = dir_ / "age-key.txt";
    EXPECT_EQ(run_process({"age-keygen", "-o", key}).exit_code, 0);
    std::string recipient = run_process({"age-keygen", "-y", key}).output;
    recipient = recipient.substr(0, recipient.find('\n'));
    read_args_ = {"--identity", key};
    return {"--encrypt-to", recipient};
  }

  std::vector<std::string> read_args_;
};

}  // namespace

TEST_F(ChangeLog, RestoresToAnyRevisionMatchTheLiveClusterExactly) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 50, 200);
  auto saved = save(m);
  const int64_t snapshot_revision = saved["revision"];
  const std::string cluster_id = saved["clusterId"];
  auto sidecar = start_sidecar(m);

  // The load: puts, overwrites, deletes, a multi-op txn, a compaction, keys on a lease that expires.
  load_keys(client, "/registry/configmaps/", 40, 300, 2);
  etcdserverpb::TxnRequest txn;
  for (int i = 0; i < 5; ++i) {
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key("/registry/txn/k" + std::to_string(i));
    put->set_value("txn-value-" + std::to_string(i));
  }
  auto* del = txn.add_success()->mutable_request_delete_range();
  del->set_key("/registry/pods/k-000001");
  client.txn(txn);
  const int64_t middle = current_revision(client, m.client_url());
  // What the live member shows at `middle`, then a compaction there while the log runs: the log
  // carries on (the watch is past it), and later targets are compared compacted alike.
  const uint32_t hash_middle = client.hash_kv(m.client_url(), middle).hash();
  const auto kvs_middle = all_key_fields(client, middle);
  // Only once the capture is past it: a compaction ahead of the watch is a gap (the gap test's case).
  wait_for_log(cluster_id, snapshot_revision, middle);
  auto compacted = run_process({"etcdctl", "--endpoints", m.client_url(), "compact", std::to_string(middle)},
                               etcdctl_options());
  ASSERT_EQ(compacted.exit_code, 0) << compacted.output;
  auto lease = client.lease_grant(2);
  for (int i = 0; i < 3; ++i) {
    etcdserverpb::TxnRequest put_on_lease;
    auto* p = put_on_lease.add_success()->mutable_request_put();
    p->set_key("/registry/leases/holder-" + std::to_string(i));
    p->set_value("alive");
    p->set_lease(lease.id());
    client.txn(put_on_lease);
  }
  etcdserverpb::DeleteRangeRequest prefix_delete;
  prefix_delete.set_key("/registry/configmaps/");
  prefix_delete.set_range_end("/registry/configmaps0");
  client.delete_range(prefix_delete);  // 40 deletions in one revision
  const int64_t before_expiry = current_revision(client, m.client_url());
  // The lease expires: its keys' deletions are revisions of the live cluster, and of the log.
  int64_t after_expiry = before_expiry;
  for (int i = 0; i < 100 && after_expiry == before_expiry; ++i) {
    std::this_thread::sleep_for(100ms);
    after_expiry = current_revision(client, m.client_url());
  }
  ASSERT_GT(after_expiry, before_expiry) << "the lease did not expire";
  load_keys(client, "/registry/secrets/", 30, 500, 3);
  client.put("/registry/pods/k-000002", "overwritten");
  const int64_t last = current_revision(client, m.client_url());
  wait_for_log(cluster_id, snapshot_revision, last);
  EXPECT_EQ(sidecar.stop(10000ms), 0);

  expect_restore_equals(middle, "restored-middle", hash_middle, kvs_middle);
  expect_exact_restore(m, client, after_expiry, "restored-after-expiry", middle);
  expect_exact_restore(m, client, last, "restored-last", middle);
  // Beyond the log's end: refused, naming the newest reachable revision; no data dir.
  auto beyond = restore_to(last + 1000, dir_ / "beyond", free_port());
  EXPECT_EQ(beyond.exit_code, 3) << beyond.output;
  EXPECT_NE(beyond.output.find(std::to_string(last)), std::string::npos) << beyond.output;
  EXPECT_FALSE(path_exists(dir_ / "beyond"));
}

// A drill with the change log (backup drill --to-revision end|N): the private member serves the
// newest revision the store can bring back (or N), its key count is the restored db's, and its
// HashKV at the snapshot's revision is still the source's (the log replays every revision as it was).
TEST_F(ChangeLog, ADrillReachesTheNewestRevisionTheLogHolds) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 40, 200);
  auto saved = save(m);
  const int64_t snapshot_revision = saved["revision"];
  const std::string cluster_id = saved["clusterId"];
  auto sidecar = start_sidecar(m);
  load_keys(client, "/registry/configmaps/", 30, 300, 2);
  const int64_t middle = current_revision(client, m.client_url());
  client.put("/registry/pods/k-000002", "changed");
  etcdserverpb::DeleteRangeRequest del;
  del.set_key("/registry/pods/k-000003");
  client.delete_range(del);
  const int64_t last = current_revision(client, m.client_url());
  wait_for_log(cluster_id, snapshot_revision, last);
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  std::string scratch = dir_ / "scratch";
  make_dirs(scratch, 0700);
  for (const auto& [target, revision] : std::vector<std::pair<std::string, int64_t>>{{"end", last},
                                                                                    {std::to_string(middle), middle}}) {
    SCOPED_TRACE(target);
    auto r = cli_json({"backup", "drill", "latest", "--store", store_, "--to-revision", target, "--scratch-dir", scratch,
                       "-o", "json"});
    ASSERT_EQ(r["passed"], true) << r.dump(2);
    std::map<std::string, nlohmann::json> checks;
    for (const auto& c : r["checks"]) checks[c["name"]] = c;
    ASSERT_EQ(checks.count("point in time"), 1u) << r.dump(2);
    EXPECT_EQ(checks["point in time"]["served"], std::to_string(revision));
    EXPECT_EQ(checks["revision"]["served"], std::to_string(revision));
    EXPECT_EQ(checks["hashkv"]["passed"], true);
    EXPECT_TRUE(std::filesystem::is_empty(scratch));
  }
}

TEST_F(ChangeLog, ADamagedMissingOrMisnamedSegmentIsRefusedBeforeAnyDataDir) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto saved = save(m);
  const int64_t snapshot_revision = saved["revision"];
  const std::string cluster_id = saved["clusterId"];
  auto sidecar = start_sidecar(m);
  // Three bursts a segment interval apart: three segments at least.
  for (int burst = 0; burst < 3; ++burst) {
    load_keys(client, "/burst" + std::to_string(burst) + "/", 20, 100, burst);
    wait_for_log(cluster_id, snapshot_revision, current_revision(client, m.client_url()));
  }
  const int64_t last = current_revision(client, m.client_url());
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  LocalStore store(store_);
  auto segments = changelog::list_segments(store, cluster_id);
  ASSERT_GE(segments.size(), 3u);
  const auto& victim = segments[1];
  std::string path = store_ + "/" + victim.key();
  std::string good = read_file(path);

  auto refused = [&](const std::string& what, const std::string& expect) {
    auto r = restore_to(last, dir_ / "data", free_port());
    EXPECT_NE(r.exit_code, 0) << what << ": " << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << what << ": " << r.output;
    EXPECT_FALSE(path_exists(dir_ / "data")) << what;
  };
  // `backup verify` reads every segment of the backup's log: all intact, every revision once.
  auto verified = cli_json({"backup", "verify", "latest", "--store", store_, "-o", "json"});
  EXPECT_EQ(verified["changeLog"]["segments"].get<size_t>(), segments.size()) << verified.dump();
  EXPECT_EQ(verified["changeLog"]["revision"], last) << verified.dump();
  EXPECT_EQ(verified["changeLog"]["records"], last - snapshot_revision) << verified.dump();
  EXPECT_FALSE(verified["changeLog"].contains("gapBefore")) << verified.dump();

  std::string bad = good;
  bad[bad.size() / 2] ^= 0x04;
  write_file_atomic(path, bad, 0600);
  refused("a flipped byte", victim.key());
  auto verify_bad = cli({"backup", "verify", "latest", "--store", store_});
  EXPECT_NE(verify_bad.exit_code, 0) << verify_bad.output;
  EXPECT_NE(verify_bad.output.find("is intact, but its change log is not"), std::string::npos) << verify_bad.output;
  EXPECT_NE(verify_bad.output.find(victim.key()), std::string::npos) << verify_bad.output;
  write_file_atomic(path, good, 0600);
  // The snapshot was not recorded as damaged for it: `backup list` still offers it.
  EXPECT_EQ(cli_json({"backup", "list", "--store", store_, "-o", "json"})[0]["damaged"], nullptr);

  // Missing: the log has a gap, the target lies beyond its end.
  std::filesystem::rename(path, dir_ / "aside");
  refused("a missing segment", "gap before revision");
  std::filesystem::rename(dir_ / "aside", path);

  // Renamed to claim a revision more than it holds (its digest still agrees).
  changelog::SegmentName wrong = victim;
  wrong.last_revision = victim.last_revision + 1;
  std::filesystem::rename(path, store_ + "/" + wrong.key());
  refused("a wrong revision range", wrong.key());
  std::filesystem::rename(store_ + "/" + wrong.key(), path);

  auto ok = restore_to(last, dir_ / "data", free_port());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// On an encrypted store: the segments are encrypted to the store's recipients like the backups.
TEST_F(ChangeLog, ListShowsTheWindowTimeTargetsWorkAndPruneKeepsWhatKeptBackupsNeed) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/a/", 20, 100, 1);
  auto first = save(m, encrypt());
  const std::string cluster_id = first["clusterId"];
  auto sidecar = start_sidecar(m, {"--heartbeat-interval", "1s"});
  load_keys(client, "/b/", 20, 100, 2);
  const int64_t r1 = current_revision(client, m.client_url());
  wait_for_log(cluster_id, first["revision"], r1);
  std::this_thread::sleep_for(1200ms);
  const std::string t_between = format_rfc3339_micros(std::chrono::system_clock::now());
  std::this_thread::sleep_for(300ms);
  load_keys(client, "/c/", 20, 100, 3);
  const int64_t r2 = current_revision(client, m.client_url());
  wait_for_log(cluster_id, first["revision"], r2);

  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["changeLog"]["revision"], r2) << listed.dump();
  {
    LocalStore store(store_);
    for (const auto& seg : changelog::list_segments(store, cluster_id)) EXPECT_TRUE(seg.encrypted) << seg.key();
  }
  // Without the key, verify checks what it can: the stored bytes of the backup and of each segment.
  auto keyless_verify = cli_json({"backup", "verify", "latest", "--shallow", "--store", store_, "-o", "json"});
  EXPECT_EQ(keyless_verify["changeLog"]["decrypted"], false) << keyless_verify.dump();
  EXPECT_EQ(keyless_verify["changeLog"]["revision"], r2) << keyless_verify.dump();
  auto keyed_verify = cli_json({"backup", "verify", "latest", "--store", store_, "-o", "json", "--identity", read_args_[1]});
  EXPECT_EQ(keyed_verify["changeLog"]["decrypted"], true) << keyed_verify.dump();
  EXPECT_EQ(keyed_verify["changeLog"]["records"], r2 - first["revision"].get<int64_t>()) << keyed_verify.dump();
  // Without the identity the replay is refused, naming the segment; nothing is written.
  auto keyless = cli({"backup", "restore", "latest", "--store", store_, "--to-revision", std::to_string(r1), "--data-dir",
                      dir_ / "keyless", "--name", "r", "--initial-advertise-peer-urls", "http://127.0.0.1:2380"});
  EXPECT_EQ(keyless.exit_code, 7) << keyless.output;
  EXPECT_FALSE(path_exists(dir_ / "keyless"));

  // --to-time: every revision received by then, and nothing after.
  EtcdOptions ro;
  ro.name = "r";
  ro.peer_port = free_port();
  ro.data_dir = dir_ / "at-time";
  auto at_time = cli({"backup", "restore", "latest", "--store", store_, "--to-time", t_between, "--data-dir", ro.data_dir,
                      "--name", "r", "--initial-cluster-token", "etcd-test", "--initial-advertise-peer-urls",
                      "http://127.0.0.1:" + std::to_string(ro.peer_port), "-o", "json", "--identity", read_args_[1],
                      "--keep-revision"});
  ASSERT_EQ(at_time.exit_code, 0) << at_time.output;
  auto& restored = start_member(ro);
  EtcdClient rc(restored.connection());
  EXPECT_EQ(current_revision(rc, restored.client_url()), r1);
  EXPECT_EQ(rc.hash_kv(restored.client_url(), r1).hash(), client.hash_kv(m.client_url(), r1).hash());
  restored.stop();

  // A time after the last write: provable only once a heartbeat after it is in the store (the
  // cluster is quiet now, so no segment will ever say so). Before: refused; after: the state at r2.
  const auto quiet = std::chrono::system_clock::now();
  const std::string t_quiet = format_rfc3339_micros(quiet);
  auto to_time = [&](const std::string& t, const std::string& dir) {
    return cli({"backup", "restore", "latest", "--store", store_, "--to-time", t, "--data-dir", dir_ / dir, "--name", "r",
                "--initial-cluster-token", "etcd-test", "--initial-advertise-peer-urls", "http://127.0.0.1:2380", "-o",
                "json", "--identity", read_args_[1]});
  };
  auto future = to_time(format_rfc3339_micros(quiet + std::chrono::hours(1)), "future");
  EXPECT_EQ(future.exit_code, 3) << future.output;
  EXPECT_NE(future.output.find("complete until"), std::string::npos) << future.output;
  EXPECT_FALSE(path_exists(dir_ / "future"));
  LocalStore plain_listing(store_);
  for (int i = 0; i < 100; ++i) {
    auto hb = changelog::read_heartbeat(plain_listing, cluster_id);
    if (hb && hb->checked_at_micros >= to_unix_micros(quiet)) break;
    std::this_thread::sleep_for(100ms);
  }
  auto at_quiet = to_time(t_quiet, "at-quiet");
  ASSERT_EQ(at_quiet.exit_code, 0) << at_quiet.output << read_file(dir_ / "sidecar.log");
  EXPECT_EQ(nlohmann::json::parse(at_quiet.output.substr(at_quiet.output.find('{')))["revision"], r2) << at_quiet.output;

  // A second backup while the log runs (the store knows whom to encrypt to), more writes, then
  // retention keeps only the newest backup:
  // the segments it needs stay, the older ones go, and the old backup's window is gone with it.
  auto second = save(m);
  const int64_t s2 = second["revision"];
  load_keys(client, "/d/", 20, 100, 4);
  const int64_t r3 = current_revision(client, m.client_url());
  wait_for_log(cluster_id, first["revision"], r3);
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  LocalStore store(store_);
  size_t before = changelog::list_segments(store, cluster_id).size();
  auto pruned = cli_json({"backup", "prune", "--store", store_, "--policy", "count:1", "-o", "json"});
  EXPECT_EQ(pruned["deleted"].size(), 1u);
  auto after = changelog::list_segments(store, cluster_id);
  EXPECT_EQ(pruned["changeLogSegments"].get<size_t>(), before - after.size());
  for (const auto& seg : after) EXPECT_GT(seg.last_revision, s2) << seg.key();
  EXPECT_EQ(changelog::chain_from(after, s2).reaches, r3);
  auto gone = restore_to(r1, dir_ / "gone", free_port());
  EXPECT_EQ(gone.exit_code, 3) << gone.output;
  auto kept = restore_to(r3, dir_ / "kept", free_port());
  EXPECT_EQ(kept.exit_code, 0) << kept.output;
}

// `backup rekey --all` re-wraps the change log's segments too (a new header around the same
// payload, so a new digest and name; the old segment is deleted): afterwards only the new identity
// opens the log. A rekey killed between making a copy and deleting the old segment leaves twins,
// which restores read through; the next run removes the old one.
TEST_F(ChangeLog, ARekeyReWrapsTheSegmentsAndAKilledOneFinishesOnTheNextRun) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto saved = save(m, encrypt());
  const std::string old_identity = read_args_[1];
  const std::string cluster_id = saved["clusterId"];
  auto sidecar = start_sidecar(m);
  for (int burst = 0; burst < 2; ++burst) {
    load_keys(client, "/burst" + std::to_string(burst) + "/", 20, 100, burst);
    wait_for_log(cluster_id, saved["revision"], current_revision(client, m.client_url()));
  }
  const int64_t last = current_revision(client, m.client_url());
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  LocalStore store(store_);
  auto before = changelog::list_segments(store, cluster_id);
  ASSERT_GE(before.size(), 2u);
  const std::string old_key_id = before[0].key_id;
  EXPECT_EQ(old_key_id.size(), 16u) << before[0].key();
  const std::string old_bytes = read_file(store_ + "/" + before[0].key());

  std::string new_identity = dir_ / "new-key.txt";
  ASSERT_EQ(run_process({"age-keygen", "-o", new_identity}).exit_code, 0);
  std::string new_recipient = run_process({"age-keygen", "-y", new_identity}).output;
  new_recipient = new_recipient.substr(0, new_recipient.find('\n'));
  auto rekeyed = cli_json({"backup", "rekey", "--all", "--store", store_, "--encrypt-to", new_recipient, "--identity",
                           old_identity, "-o", "json"});
  EXPECT_EQ(rekeyed["changeLogSegmentsRekeyed"].get<size_t>(), before.size()) << rekeyed.dump();
  auto after = changelog::list_segments(store, cluster_id);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_NE(after[i].key_id, old_key_id) << after[i].key();
    EXPECT_EQ(after[i].first_revision, before[i].first_revision);
    EXPECT_EQ(after[i].last_revision, before[i].last_revision);
    EXPECT_FALSE(path_exists(store_ + "/" + before[i].key()));
  }
  read_args_ = {"--identity", old_identity};
  auto with_old = restore_to(last, dir_ / "with-old", free_port());
  EXPECT_EQ(with_old.exit_code, 7) << with_old.output;
  EXPECT_FALSE(path_exists(dir_ / "with-old"));
  read_args_ = {"--identity", new_identity};
  expect_exact_restore(m, client, last, "with-new");

  // A killed rekey: the old segment is back beside its re-wrapped copy.
  write_file_atomic(store_ + "/" + before[0].key(), old_bytes, 0600);
  ASSERT_EQ(changelog::list_segments(store, cluster_id).size(), before.size() + 1);
  expect_exact_restore(m, client, last, "with-twins");
  auto finished = cli_json({"backup", "rekey", "--all", "--store", store_, "--identity", new_identity, "-o", "json"});
  EXPECT_EQ(finished["changeLogSegmentsRekeyed"], 1) << finished.dump();
  EXPECT_EQ(finished["changeLogSegmentsAlready"].get<size_t>(), before.size()) << finished.dump();
  EXPECT_FALSE(path_exists(store_ + "/" + before[0].key()));
  EXPECT_EQ(changelog::list_segments(store, cluster_id).size(), before.size());
}

// The capturing sidecar killed (SIGKILL) with records not yet in a segment, then started again:
// it continues from the last segment in the store, the log has no gap and no duplicate, and a
// restore past the kill is exact.
TEST_F(ChangeLog, ASidecarKilledMidSegmentLeavesNoGap) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto saved = save(m);
  const std::string cluster_id = saved["clusterId"];
  auto sidecar = start_sidecar(m, {"--segment-interval", "5s"});
  load_keys(client, "/before/", 30, 100, 1);
  const int64_t stored_first = current_revision(client, m.client_url());
  wait_for_log(cluster_id, saved["revision"], stored_first);
  load_keys(client, "/pending/", 30, 100, 2);  // received, not yet cut into a segment
  std::this_thread::sleep_for(500ms);
  sidecar.kill_now(SIGKILL);
  EXPECT_LT(log_reaches(cluster_id, saved["revision"]), current_revision(client, m.client_url()))
      << "the kill was meant to lose records that were received but not stored";
  sidecar.wait();
  load_keys(client, "/while-down/", 30, 100, 3);
  auto again = start_sidecar(m, {"--segment-interval", "1s"});
  load_keys(client, "/after/", 30, 100, 4);
  const int64_t last = current_revision(client, m.client_url());
  wait_for_log(cluster_id, saved["revision"], last);
  EXPECT_EQ(again.stop(10000ms), 0);
  LocalStore store(store_);
  auto chain = changelog::chain_from(changelog::list_segments(store, cluster_id), saved["revision"]);
  EXPECT_EQ(chain.reaches, last);
  EXPECT_FALSE(chain.next_segment_start);
  expect_exact_restore(m, client, last, "restored");
}

// etcd restarted under a continuous sidecar: the log resumes as soon as the member serves again
// (it took 12 s after a 4 s restart of etcd 3.4: the client waited out gRPC's reconnect back-off),
// and the sidecar says so once when capture stops and once when it resumes, not every second.
// Meanwhile the RPO keeps growing from the last revision captured (it read -1, "not capturing",
// so that the documented alert could not fire) and /readyz fails past --max-rpo.
TEST_F(ChangeLog, CaptureResumesWhenTheMemberServesAgainAndSaysSoOnce) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto saved = save(m);
  const std::string cluster_id = saved["clusterId"];
  const int port = free_port();
  auto sidecar = start_sidecar(m, {"--listen", "127.0.0.1:" + std::to_string(port), "--max-rpo", "1s"});
  auto get = [&](const std::string& path) {
    try {
      return http("GET", "http://127.0.0.1:" + std::to_string(port) + path);
    } catch (const Error&) {
      return HttpResponse{};  // not listening yet
    }
  };
  auto rpo = [&]() -> double {
    std::string metrics = get("/metrics").body;
    const std::string name = "\netcdadm_changelog_rpo_seconds ";
    auto at = metrics.find(name);
    return at == std::string::npos ? -2 : std::stod(metrics.substr(at + name.size()));
  };
  client.put("/before", "1");
  wait_for_log(cluster_id, saved["revision"], current_revision(client, m.client_url()));
  m.stop();
  // The outage: polled until the RPO has grown past --max-rpo and /readyz says so.
  double seen = -1;
  int ready = 0;
  for (int i = 0; i < 200 && (seen < 1.5 || ready != 503); ++i) {
    std::this_thread::sleep_for(50ms);
    seen = rpo();
    ready = get("/readyz").status;
  }
  EXPECT_GE(seen, 1.5) << read_file(dir_ / "sidecar.log");
  EXPECT_EQ(ready, 503);
  // Two readings of the outage a second apart: the RPO grows as the clock does.
  const auto first_at = std::chrono::steady_clock::now();
  const double first_rpo = rpo();
  std::this_thread::sleep_for(1s);
  const double outage_rpo = rpo();
  const double slope = (outage_rpo - first_rpo) / std::chrono::duration<double>(std::chrono::steady_clock::now() - first_at).count();
  EXPECT_GT(slope, 0.8) << first_rpo << " then " << outage_rpo;
  EXPECT_LT(slope, 1.2) << first_rpo << " then " << outage_rpo;
  m.start();
  EtcdClient again(m.connection());
  again.put("/after", "2");
  const int64_t last = current_revision(again, m.client_url());
  wait_for_log(cluster_id, saved["revision"], last);
  // Back to the segment interval once capture runs again. Right after etcd's restart the sidecar
  // may read -1 for a tick ("does not write the log": its member named no leader yet at that
  // tick), so -1 is waited out too; a capture that never comes back still fails below.
  double rpo_after_resume = rpo();
  for (int i = 0; i < 200 && (rpo_after_resume > 1 || rpo_after_resume < 0); ++i) {
    std::this_thread::sleep_for(50ms);
    rpo_after_resume = rpo();
  }
  EXPECT_LE(rpo_after_resume, 1) << "capturing again: the RPO is back to the segment interval";
  EXPECT_GE(rpo_after_resume, 0);
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  const std::string log = read_file(dir_ / "sidecar.log");
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("change log: capture stopped"), 1u) << log;
  EXPECT_EQ(count("answers again after"), 1u) << log;
  EXPECT_EQ(count("warning change log"), 1u) << "one warning for the outage, not one per attempt: " << log;

  // The alert rules docs/sidecar.md gives, evaluated by Prometheus's own promtool on the RPO as it
  // was read: from the outage's reading, growing a second a second (as measured above), the
  // documented alert is pending after a minute and fires past its `for: 2m`; at the reading after
  // capture resumed, and at a follower's -1, it never fires.
  if (!std::filesystem::exists("/usr/bin/promtool")) {
    ETCDADM_SKIP_OUTSIDE_CI() << "promtool (Debian's prometheus, scripts/install-deps.sh) is not installed";
  }
  const std::string rules = documented_alert_rules();
  ASSERT_FALSE(rules.empty()) << "docs/sidecar.md has no alert rules";
  write_file_atomic(dir_ / "rules.yml", rules, 0644);
  auto checked = run_process({"/usr/bin/promtool", "check", "rules", dir_ / "rules.yml"});
  ASSERT_EQ(checked.exit_code, 0) << checked.output;
  const double resumed_rpo = rpo_after_resume;
  const std::string summary = "the etcd change log is more than a minute behind";
  std::ostringstream tests;
  tests << "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n"
        << "  - interval: 15s\n    input_series:\n"
        << "      - series: 'etcdadm_changelog_rpo_seconds{instance=\"leader\"}'\n"
        << "        values: '" << outage_rpo << "+15x40'\n"
        << "      - series: 'etcdadm_changelog_rpo_seconds{instance=\"follower\"}'\n"
        << "        values: '-1+0x40'\n"
        << "    alert_rule_test:\n"
        << "      - {eval_time: 2m, alertname: EtcdChangeLogBehind, exp_alerts: []}\n"
        << "      - eval_time: 4m\n        alertname: EtcdChangeLogBehind\n"
        << "        exp_alerts: [{exp_labels: {}, exp_annotations: {summary: '" << summary << "'}}]\n"
        << "  - interval: 15s\n    input_series:\n"
        << "      - series: 'etcdadm_changelog_rpo_seconds{instance=\"leader\"}'\n"
        << "        values: '" << resumed_rpo << "+0x40'\n"
        << "      - series: 'etcdadm_changelog_rpo_seconds{instance=\"follower\"}'\n"
        << "        values: '-1+0x40'\n"
        << "    alert_rule_test:\n"
        << "      - {eval_time: 9m, alertname: EtcdChangeLogBehind, exp_alerts: []}\n";
  write_file_atomic(dir_ / "rules_test.yml", tests.str(), 0644);
  auto evaluated = run_process({"/usr/bin/promtool", "test", "rules", dir_ / "rules_test.yml"});
  EXPECT_EQ(evaluated.exit_code, 0) << evaluated.output << "\n" << tests.str();
}

// Revisions committed while no sidecar captured arrive in one burst when capture resumes: their
// receipt says nothing of their commit. The store marks that window, `backup list` shows it, and a
// --to-time inside it restores what is known committed by then and says which revisions may be
// missing, instead of silently leaving them out as received "late".
TEST_F(ChangeLog, RevisionsCommittedWhileCaptureWasAwayAreAWindowThatListAndToTimeName) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto saved = save(m);
  const std::string name = saved["backup"];
  const std::string cluster_id = saved["clusterId"];
  // Writes once a capture is live: it has read the cluster's revision, so what follows is received
  // as committed (what came before is a catch-up). `occurrence`: of the log lines that say so.
  auto wait_until_live = [&](int occurrence) {
    for (int i = 0; i < 300; ++i) {
      const std::string log = read_file(dir_ / "sidecar.log");
      int seen = 0;
      for (size_t at = log.find("change log: the cluster is at revision"); at != std::string::npos;
           at = log.find("change log: the cluster is at revision", at + 1)) {
        ++seen;
      }
      if (seen >= occurrence) return;
      std::this_thread::sleep_for(50ms);
    }
    FAIL() << "the capture did not start: " << read_file(dir_ / "sidecar.log");
  };
  auto sidecar = start_sidecar(m);
  wait_until_live(1);
  const int64_t live = client.put("/live/1", "1").header().revision();
  wait_for_log(cluster_id, saved["revision"], live);
  EXPECT_EQ(sidecar.stop(10000ms), 0);

  const auto now_micros = [] { return to_unix_micros(std::chrono::system_clock::now()); };
  const int64_t before_away = now_micros();
  const int64_t away_first = client.put("/away/1", "1").header().revision();
  std::this_thread::sleep_for(300ms);
  const SystemTime target = std::chrono::system_clock::now();
  std::this_thread::sleep_for(300ms);
  const int64_t away_last = client.put("/away/2", "2").header().revision();
  const int64_t after_away = now_micros();
  ASSERT_EQ(away_first, live + 1);

  auto again = start_sidecar(m);
  wait_until_live(2);  // the second sidecar's, in the same log
  const int64_t resumed = client.put("/live/2", "2").header().revision();
  wait_for_log(cluster_id, saved["revision"], resumed);
  EXPECT_EQ(again.stop(10000ms), 0);

  // The window, in the store and in `backup list`: exactly the revisions committed while away.
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  nlohmann::json late;
  for (const auto& b : listed) {
    if (b["backup"] == name) late = b["changeLog"]["late"];
  }
  ASSERT_TRUE(late.is_array()) << listed.dump(2);
  ASSERT_EQ(late.size(), 1u) << late.dump(2) << read_file(dir_ / "sidecar.log");
  EXPECT_EQ(late[0]["fromRevision"], away_first);
  EXPECT_EQ(late[0]["toRevision"], away_last);
  auto micros_of = [](const nlohmann::json& t) { return to_unix_micros(*parse_rfc3339(t.get<std::string>())); };
  EXPECT_LE(micros_of(late[0]["committedAfter"]), before_away) << late.dump();
  EXPECT_GE(micros_of(late[0]["receivedAt"]), after_away) << late.dump();
  auto table = cli({"backup", "list", "--store", store_});
  EXPECT_NE(table.output.find("revisions " + std::to_string(away_first) + ".." + std::to_string(away_last) + ": committed after"),
            std::string::npos)
      << table.output;

  // --to-time inside it: the revisions known committed by then (up to `live`), and the window named.
  const std::string at = format_rfc3339_micros(target);
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--to-time", at, "--data-dir", dir_ / "restored",
                "--name", "r", "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(free_port()), "-o",
                "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  EXPECT_EQ(j["replay"]["toRevision"], live) << j.dump(2);
  ASSERT_TRUE(j["replay"]["late"].is_object()) << j.dump(2);
  EXPECT_EQ(j["replay"]["late"]["fromRevision"], away_first);
  EXPECT_EQ(j["replay"]["late"]["toRevision"], away_last);
  EXPECT_NE(r.output.find("--to-revision " + std::to_string(away_last) + " includes them"), std::string::npos) << r.output;
  // Once the window is received, it is all known committed: nothing is uncertain.
  auto after = cli_json({"backup", "restore", "latest", "--store", store_, "--to-time", late[0]["receivedAt"],
                         "--data-dir", dir_ / "restored-after", "--name", "r", "--initial-advertise-peer-urls",
                         "http://127.0.0.1:" + std::to_string(free_port()), "-o", "json"});
  // (the live write after the window may have come in the same watch response as its last revision)
  EXPECT_GE(after["replay"]["toRevision"].get<int64_t>(), away_last) << after.dump(2);
  EXPECT_TRUE(after["replay"]["late"].is_null()) << after.dump(2);

  // Retention deletes the marker with the segments it describes, once no kept backup needs them.
  save(m);
  auto pruned = cli_json({"backup", "prune", "--store", store_, "--policy", "count:1", "-o", "json"});
  EXPECT_EQ(pruned["deleted"].size(), 1u) << pruned.dump(2);
  LocalStore store(store_);
  std::vector<changelog::LateWindow> left;
  changelog::list_segments(store, cluster_id, nullptr, &left);
  EXPECT_TRUE(left.empty()) << left.front().key();
}

// A sidecar that starts with a scheduled backup due and finds a gap in the log (etcd compacted
// while it was away) takes one snapshot for both: the start-up tick's answers the gap's request, or
// the log finds the tick's backup in the store before it asks. It took two, a second apart.
TEST_F(ChangeLog, AGapFoundAtStartUpAndADueTickCostOneSnapshot) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  client.put("/first", "1");
  auto saved = save(m);
  const std::string cluster_id = saved["clusterId"];
  const auto saved_at = std::chrono::steady_clock::now();
  auto sidecar = start_sidecar(m);
  const int64_t before = client.put("/before", "1").header().revision();
  wait_for_log(cluster_id, saved["revision"], before);
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  // Compacted past the revision the log needs next (before + 1).
  client.put("/while-down/1", "1");
  const int64_t compact_revision = client.put("/while-down/2", "2").header().revision();
  client.compact(compact_revision, /*physical=*/true);
  // The interval must have passed since the backup, so that the tick is due at start.
  std::this_thread::sleep_until(saved_at + 2100ms);

  auto again = start_sidecar(m, {"--schedule", "2s"});
  // Once the log captures again (after the gap, from a new backup), count the backups after the
  // first: the one the gap needs and the due tick must be one, and the next scheduled one comes two
  // seconds after it.
  for (int i = 0; i < 300; ++i) {
    const std::string log = read_file(dir_ / "sidecar.log");
    const auto gap = log.find("change log GAP");
    if (gap != std::string::npos && log.find("change log: capturing cluster", gap) != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(again.stop(10000ms), 0);
  const std::string log = read_file(dir_ / "sidecar.log");
  ASSERT_NE(log.find("change log GAP"), std::string::npos) << log;
  std::vector<SystemTime> after_first;
  for (const auto& b : cli_json({"backup", "list", "--store", store_, "-o", "json"})) {
    if (b["backup"] != saved["backup"]) after_first.push_back(*parse_rfc3339(b["takenAt"].get<std::string>()));
  }
  std::sort(after_first.begin(), after_first.end());
  ASSERT_FALSE(after_first.empty()) << log;
  for (size_t i = 1; i < after_first.size(); ++i) {
    EXPECT_GE(after_first[i] - after_first[i - 1], 1900ms)
        << "two snapshots for one start-up: the tick's and the gap's\n" << log;
  }
}

// A compaction that outruns a stopped sidecar: the restarted sidecar reports the gap, a new backup
// is taken at once and the log restarts from it; restores before the gap and after the new backup
// are exact, a target inside the gap is refused naming it.
TEST_F(ChangeLog, AGapFromACompactionTakesANewBackupAndTargetsInsideItAreRefused) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  client.put("/first", "before the first backup");
  auto saved = save(m);
  const std::string cluster_id = saved["clusterId"];
  auto sidecar = start_sidecar(m);
  load_keys(client, "/before/", 20, 100, 1);
  const int64_t before_gap = current_revision(client, m.client_url());
  wait_for_log(cluster_id, saved["revision"], before_gap);
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  // What the live member shows at before_gap, while it still can (the compaction below removes it).
  const uint32_t hash_before_gap = client.hash_kv(m.client_url(), before_gap).hash();
  const auto kvs_before_gap = all_key_fields(client, before_gap);

  load_keys(client, "/while-down/", 20, 100, 2);
  const int64_t inside_gap = current_revision(client, m.client_url());
  load_keys(client, "/while-down-2/", 20, 100, 3);
  const int64_t compact_revision = current_revision(client, m.client_url());
  auto compacted = run_process({"etcdctl", "--endpoints", m.client_url(), "compact", std::to_string(compact_revision)},
                               etcdctl_options());
  ASSERT_EQ(compacted.exit_code, 0) << compacted.output;

  auto again = start_sidecar(m);
  // The gap makes the sidecar take a backup (at or after the compaction); the log continues from it.
  std::optional<int64_t> new_backup_revision;
  for (int i = 0; i < 200 && !new_backup_revision; ++i) {
    std::this_thread::sleep_for(100ms);
    auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
    if (!listed.empty() && listed[0]["revision"].get<int64_t>() >= compact_revision) {
      new_backup_revision = listed[0]["revision"].get<int64_t>();
    }
  }
  ASSERT_TRUE(new_backup_revision) << read_file(dir_ / "sidecar.log");
  load_keys(client, "/after/", 20, 100, 4);
  const int64_t last = current_revision(client, m.client_url());
  wait_for_log(cluster_id, *new_backup_revision, last);
  EXPECT_EQ(again.stop(10000ms), 0);
  EXPECT_NE(read_file(dir_ / "sidecar.log").find("change log GAP"), std::string::npos);

  expect_restore_equals(before_gap, "before-gap", hash_before_gap, kvs_before_gap);
  expect_exact_restore(m, client, last, "after-gap");
  auto inside = restore_to(inside_gap, dir_ / "inside", free_port());
  EXPECT_EQ(inside.exit_code, 3) << inside.output;
  // The refusal names the gap as the range no backup and log can restore, up to the new backup
  // (not to where the log restarts), and the nearest restorable revisions on both sides.
  EXPECT_NE(inside.output.find("falls in a gap of the change log, revisions " + std::to_string(before_gap + 1) + " to " +
                               std::to_string(*new_backup_revision - 1)),
            std::string::npos)
      << inside.output;
  EXPECT_NE(inside.output.find("the nearest restorable points: revision " + std::to_string(before_gap)), std::string::npos)
      << inside.output;
  EXPECT_NE(inside.output.find("and revision " + std::to_string(*new_backup_revision) + " (backup "), std::string::npos)
      << inside.output;
  EXPECT_FALSE(path_exists(dir_ / "inside"));

  // backup list shows the same gap on the backup whose log ends at it.
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  // One snapshot for the gap: the sidecar's start-up backup and the gap's are one backup, never
  // two of the same revision.
  EXPECT_EQ(std::count_if(listed.begin(), listed.end(),
                          [&](const nlohmann::json& b) { return b["revision"] == *new_backup_revision; }),
            1)
      << listed;
  bool shown = false;
  for (const auto& b : listed) {
    if (b["backup"] != saved["backup"]) continue;
    shown = true;
    ASSERT_TRUE(b["changeLog"].is_object()) << b;
    EXPECT_EQ(b["changeLog"]["revision"], before_gap) << b;
    EXPECT_EQ(b["changeLog"]["gap"], (nlohmann::json{{"from", before_gap + 1}, {"to", *new_backup_revision - 1}})) << b;
    EXPECT_EQ(b["changeLog"]["gapBefore"], *new_backup_revision) << b;
  }
  EXPECT_TRUE(shown) << listed;
  EXPECT_EQ(listed[0]["changeLog"]["gap"], nullptr) << listed[0];

  // Before the first backup: the refusal names the earliest restorable point.
  const int64_t first_revision = saved["revision"];
  ASSERT_GT(first_revision, 1);
  auto too_early = restore_to(first_revision - 1, dir_ / "too-early", free_port());
  EXPECT_EQ(too_early.exit_code, 3) << too_early.output;
  EXPECT_NE(too_early.output.find("before the earliest restorable point, revision " + std::to_string(first_revision)),
            std::string::npos)
      << too_early.output;
  EXPECT_NE(too_early.output.find("the earliest restorable point is revision " + std::to_string(first_revision) + " / time "),
            std::string::npos)
      << too_early.output;
  EXPECT_FALSE(path_exists(dir_ / "too-early"));
}

}  // namespace etcdadm::test
