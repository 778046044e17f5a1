// `etcdadm recover` (issue "The worst days"): a majority of the members lost for good while
// clients write, one or more survivors with their data. Real etcd of the oldest and newest minor,
// hosts as processes (test/support/lifecycle_fixture.h); the oracle is the list of writes the
// cluster acknowledged, each with its revision, and HashKV across the members grown back.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include <fmt/format.h>

#include "changelog/segment.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "etcd/client.h"
#include "store/backend/local/local_store.h"
#include "test/support/lifecycle_fixture.h"

namespace etcdadm::test {
namespace {

class Recover : public LifecycleFixture {
 protected:
  void survivor_crashes_and_recovers(bool raft_snapshots);
};


// The worst day (issue "The worst days"): two of three hosts gone for good, their members with
// them, while a client writes; the third survives with its data, crashes too and is started
// again. `etcdadm recover` there (refused before, while the quorum answered) makes it a cluster of
// one from its own data: every write acknowledged before the loss back with its revision, its
// member and cluster IDs kept, its data dir set aside. The two rebuilt hosts join it with the
// printed commands and serve every write too. Once as etcd runs by default for a young cluster
// (no raft snapshot yet, its log holding every entry since the start), once with m1 taking raft
// snapshots.
void Recover::survivor_crashes_and_recovers(bool raft_snapshots) {
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  if (raft_snapshots) {
    // m1 takes a raft snapshot every 50 entries (etcd's own, written by its snapshotter).
    const std::string env = hosts_[0].conf() + "/etcd.env";
    write_file_atomic(env, read_file(env) + "ETCD_SNAPSHOT_COUNT=50\n", 0600, /*overwrite=*/true);
    stop_pid_file(hosts_[0].conf() + "/etcd.pid", bin() + "/etcd", std::chrono::milliseconds(5000));
    auto started = run_with_member_flags({"init", "phase", "start"}, hosts_[0]);
    ASSERT_EQ(started.exit_code, 0) << started.output;
  }
  auto refused = etcdadm({"recover", "--config-dir", hosts_[0].conf()});
  EXPECT_EQ(refused.exit_code, 4) << refused.output;
  EXPECT_NE(refused.output.find("the cluster has a quorum: 3 of 3 voters answer"), std::string::npos) << refused.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 3u);

  const auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  std::vector<std::pair<std::string, int64_t>> acked;  // key, revision
  std::atomic<bool> writing{true};
  std::thread writer([&] {
    ConnectionConfig c = conn;
    c.dial_timeout = std::chrono::milliseconds(500);
    c.command_timeout = std::chrono::seconds(1);
    EtcdClient client(c);
    for (int n = 0; writing.load(); ++n) {
      const std::string key = fmt::format("/registry/events/w-{:06d}", n);
      try {
        acked.emplace_back(key, client.put(key, "v").header().revision());
      } catch (const std::exception&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // m2 and m3 gone for good: killed, their hosts' files gone.
  for (const Host* h : {&hosts_[1], &hosts_[2]}) {
    const int pid = running_pid(h->conf() + "/etcd.pid", bin() + "/etcd");
    ASSERT_GT(pid, 0) << h->name;
    ::kill(pid, SIGKILL);
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  writing = false;
  writer.join();
  for (const Host* h : {&hosts_[1], &hosts_[2]}) remove_all(h->root);
  ASSERT_GT(acked.size(), 20u);
  const std::string cluster_id = info(hosts_[0])["clusterId"];
  // m1 crashes too and its init system starts it again. etcd wrote the commit index of its last
  // writes, learned without a new entry, to its WAL unsynced: its WAL now holds them as uncommitted
  // while its db has applied them, and a forced start drops them from the log but not from the db.
  // The members that join must be sent the db, not that log. (Without a quorum it never opens its
  // client port: recover reads it in private.)
  const int m1_pid = running_pid(hosts_[0].conf() + "/etcd.pid", bin() + "/etcd");
  ASSERT_GT(m1_pid, 0);
  ::kill(m1_pid, SIGKILL);
  while (::kill(m1_pid, 0) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto restarted = run_with_member_flags({"init", "phase", "start"}, hosts_[0]);
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  std::this_thread::sleep_for(std::chrono::seconds(1));

  auto recovered = etcdadm({"recover", "--config-dir", hosts_[0].conf()});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.output;
  // With a raft snapshot its log begins after it: forced in place, one start. Without one, a copy
  // is forced in private with a snapshot at once, then moved into place.
  EXPECT_EQ(recovered.output.find("begins after its raft snapshot") != std::string::npos, raft_snapshots)
      << recovered.output;
  EXPECT_NE(recovered.output.find("is a cluster of one now, from its own data"), std::string::npos) << recovered.output;
  EXPECT_NE(recovered.output.find("removed from the membership: m2, m3"), std::string::npos) << recovered.output;
  ASSERT_EQ(member_list(hosts_[0]).size(), 1u);
  EXPECT_EQ(info(hosts_[0])["clusterId"], cluster_id) << "the cluster goes on";
  bool set_aside = false;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(hosts_[0].data()).parent_path())) {
    set_aside = set_aside || e.path().filename().string().starts_with(
                                 std::filesystem::path(hosts_[0].data()).filename().string() + ".set-aside-recover-");
  }
  EXPECT_TRUE(set_aside) << "the data dir as it was is kept";
  {
    EtcdClient client(connection({&hosts_[0]}));
    std::map<std::string, int64_t> served = mod_revisions(client, "/registry/events/");
    for (const auto& [key, rev] : acked) EXPECT_EQ(served[key], rev) << key << ": acknowledged at revision " << rev;
  }

  // The lost hosts, rebuilt, join it again, and serve every write.
  for (Host* h : {&hosts_[1], &hosts_[2]}) ASSERT_NO_FATAL_FAILURE(join(*h, hosts_[0]));
  ASSERT_EQ(member_list(hosts_[0]).size(), 3u);
  for (const Host* h : {&hosts_[1], &hosts_[2]}) {
    ConnectionConfig c = connection({h});
    EtcdClient client(c);
    std::map<std::string, int64_t> served = mod_revisions(client, "/registry/events/");
    for (const auto& [key, rev] : acked) EXPECT_EQ(served[key], rev) << h->name << " " << key;
  }
}

TEST_F(Recover, MakesTheSurvivorAClusterOfOneWithEveryWriteItCommitted) {
  ASSERT_NO_FATAL_FAILURE(survivor_crashes_and_recovers(false));
}

TEST_F(Recover, MakesTheSurvivorWithARaftSnapshotAClusterOfOneInPlace) {
  ASSERT_NO_FATAL_FAILURE(survivor_crashes_and_recovers(true));
}

// The worst day with the change log ahead of the survivor: m1 is stopped first (a disk it waits
// for, a partition), writes go on through m2 and m3 while the leader's sidecar captures them, then
// m2 and m3 are lost for good. `etcdadm recover --store` on m1 compares what m1 served with how
// far the log reaches from m1's own db, and starts the new cluster from the log: every write
// acknowledged by the three or the two is back with its revision, the revision bumped 10^9 for a
// Kubernetes keyspace, the member's name and URLs kept. The rebuilt hosts join; HashKV is equal.
TEST_F(Recover, TakesTheChangeLogWhenItReachesFurtherThanTheSurvivor) {
  using namespace std::chrono_literals;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  const auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  const std::string store = dir_ / "store";
  const std::vector<std::string> tls = {"--cacert", conn.cacert, "--cert", conn.cert, "--key", conn.key};
  std::vector<std::string> save = {"backup", "save", "--store", store, "--endpoints", hosts_[1].client_url(), "-o",
                                   "json"};
  save.insert(save.end(), tls.begin(), tls.end());
  auto saved = etcdadm(save);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  const auto saved_json = nlohmann::json::parse(saved.output.substr(saved.output.find('{')));
  const std::string cluster_id = saved_json["clusterId"];
  const int64_t snapshot_revision = saved_json["revision"];
  std::vector<ChildProcess> sidecars;
  for (const auto& h : hosts_) {
    std::vector<std::string> argv = {ETCDADM_BIN, "backup",      "sidecar", "--store",   store,
                                     "--endpoints", h.client_url(), "--schedule", "@yearly", "--listen",
                                     "",            "--continuous", "--segment-interval", "1s"};
    argv.insert(argv.end(), tls.begin(), tls.end());
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / (h.name + "-catalog.db");
    sidecars.push_back(ChildProcess::start(argv, dir_ / (h.name + "-sidecar.log"), ro));
  }
  auto log_reaches = [&] {
    LocalStore s(store);
    return changelog::chain_from(changelog::list_segments(s, cluster_id), snapshot_revision).reaches;
  };

  std::vector<std::pair<std::string, int64_t>> acked;  // key, revision
  auto write = [&](const std::vector<const Host*>& through, int count) {
    ConnectionConfig c = connection(through);
    c.dial_timeout = 500ms;
    c.command_timeout = 2s;
    EtcdClient client(c);
    for (int n = 0; n < count; ++n) {
      const std::string key = fmt::format("/registry/events/w-{:06d}", acked.size());
      try {
        acked.emplace_back(key, client.put(key, std::string(100, 'v')).header().revision());
      } catch (const std::exception&) {
        std::this_thread::sleep_for(20ms);
      }
    }
  };
  write({&hosts_[0], &hosts_[1], &hosts_[2]}, 200);
  const int64_t m1_stopped_at = acked.back().second;
  for (int i = 0; i < 200 && log_reaches() < m1_stopped_at; ++i) std::this_thread::sleep_for(100ms);
  // m1 stopped (its etcd killed: no clean shutdown either); the other two go on, the log with them.
  const int m1_pid = running_pid(hosts_[0].conf() + "/etcd.pid", bin() + "/etcd");
  ASSERT_GT(m1_pid, 0);
  ::kill(m1_pid, SIGKILL);
  write({&hosts_[1], &hosts_[2]}, 300);
  const int64_t last = acked.back().second;
  ASSERT_GT(last, m1_stopped_at + 250);
  for (int i = 0; i < 300 && log_reaches() < last; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_EQ(log_reaches(), last) << read_file(dir_ / "m2-sidecar.log") << read_file(dir_ / "m3-sidecar.log");
  for (const Host* h : {&hosts_[1], &hosts_[2]}) {
    const int pid = running_pid(h->conf() + "/etcd.pid", bin() + "/etcd");
    ASSERT_GT(pid, 0) << h->name;
    ::kill(pid, SIGKILL);
  }
  for (auto& sc : sidecars) sc.stop(10000ms);
  for (const Host* h : {&hosts_[1], &hosts_[2]}) remove_all(h->root);

  auto recovered = etcdadm({"recover", "--config-dir", hosts_[0].conf(), "--store", store});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.output;
  EXPECT_NE(recovered.output.find("from the change log, which reached further than the member"), std::string::npos)
      << recovered.output;
  // m1 served what it had applied when killed (a follower may lag the leader's answer by a few).
  const size_t served_at = recovered.output.find("to revision " + std::to_string(last) + " (the member had served ");
  ASSERT_NE(served_at, std::string::npos) << recovered.output;
  const int64_t m1_served = std::stoll(recovered.output.substr(recovered.output.find("served ", served_at) + 7));
  EXPECT_LE(m1_served, m1_stopped_at);
  EXPECT_GT(m1_served, snapshot_revision);
  EXPECT_NE(recovered.output.find("removed from the membership: m2, m3"), std::string::npos) << recovered.output;
  ASSERT_EQ(member_list(hosts_[0]).size(), 1u);
  EXPECT_NE(info(hosts_[0])["clusterId"], cluster_id) << "a new cluster: the old members cannot rejoin it by mistake";
  {
    EtcdClient client(connection({&hosts_[0]}));
    EXPECT_EQ(client.status(hosts_[0].client_url()).header().revision(), last + 1000000000);
    std::map<std::string, int64_t> served = mod_revisions(client, "/registry/events/");
    EXPECT_EQ(served.size(), acked.size());
    for (const auto& [key, rev] : acked) EXPECT_EQ(served[key], rev) << key << ": acknowledged at revision " << rev;
  }
  for (Host* h : {&hosts_[1], &hosts_[2]}) ASSERT_NO_FATAL_FAILURE(join(*h, hosts_[0]));
  ASSERT_EQ(member_list(hosts_[0]).size(), 3u);
  // One more write (3.4 answers no HashKV at the bump's compacted revision), applied everywhere.
  ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/after-recover", "x"}).exit_code, 0);
  const int64_t now = revision_of(hosts_[0]);
  for (const Host* h : {&hosts_[1], &hosts_[2]}) {
    for (int i = 0; i < 100 && revision_of(*h) < now; ++i) std::this_thread::sleep_for(100ms);
  }
  const auto hashes = hash_kv({&hosts_[0], &hosts_[1], &hosts_[2]});
  EXPECT_EQ(hashes.at("m1"), hashes.at("m2"));
  EXPECT_EQ(hashes.at("m1"), hashes.at("m3"));
}

// Two survivors of five, one further along: m5 was stopped while the others went on, then m2, m3
// and m4 are lost for good while m1 runs without a quorum. `recover` on m5 (read in private: a
// stopped member without its peers never serves) is refused and names m1 with its revision; on
// m1 it keeps every acknowledged write. m5, its data set aside by `reset --keep-data`, joins the
// recovered cluster and serves every write.
TEST_F(Recover, WithTwoSurvivorsTheOneFurthestAlongWins) {
  using namespace std::chrono_literals;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  add_host();
  add_host();
  ASSERT_NO_FATAL_FAILURE(join(hosts_[3], hosts_[0]));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[4], hosts_[0]));
  std::vector<std::pair<std::string, int64_t>> acked;  // key, revision
  auto write = [&](const std::vector<const Host*>& through, int count) {
    ConnectionConfig c = connection(through);
    c.command_timeout = 2s;
    EtcdClient client(c);
    for (int n = 0; n < count; ++n) {
      const std::string key = fmt::format("/registry/events/w-{:06d}", acked.size());
      try {
        acked.emplace_back(key, client.put(key, "v").header().revision());
      } catch (const std::exception&) {
        std::this_thread::sleep_for(20ms);
      }
    }
  };
  auto kill_member = [&](const Host& h) {
    const int pid = running_pid(h.conf() + "/etcd.pid", bin() + "/etcd");
    ASSERT_GT(pid, 0) << h.name;
    ::kill(pid, SIGKILL);
  };
  write({&hosts_[0], &hosts_[1], &hosts_[2]}, 100);
  ASSERT_NO_FATAL_FAILURE(kill_member(hosts_[4]));
  write({&hosts_[0], &hosts_[1], &hosts_[2]}, 100);
  for (const Host* h : {&hosts_[1], &hosts_[2], &hosts_[3]}) ASSERT_NO_FATAL_FAILURE(kill_member(*h));
  for (const Host* h : {&hosts_[1], &hosts_[2], &hosts_[3]}) remove_all(h->root);
  const int64_t last = acked.back().second;

  auto behind = etcdadm({"recover", "--config-dir", hosts_[4].conf()});
  EXPECT_EQ(behind.exit_code, 4) << behind.output;
  EXPECT_NE(behind.output.find("further along than m5"), std::string::npos) << behind.output;
  EXPECT_NE(behind.output.find("m1 (revision " + std::to_string(last) + ")"), std::string::npos) << behind.output;
  EXPECT_EQ(running_pid(hosts_[4].conf() + "/etcd.pid", bin() + "/etcd"), 0) << "a stopped member stays stopped";
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(hosts_[4].data()).parent_path())) {
    EXPECT_FALSE(e.path().filename().string().find("set-aside") != std::string::npos) << "refused: nothing changed";
  }

  auto recovered = etcdadm({"recover", "--config-dir", hosts_[0].conf()});
  ASSERT_EQ(recovered.exit_code, 0) << recovered.output;
  EXPECT_NE(recovered.output.find("removed from the membership: m2, m3, m4, m5"), std::string::npos)
      << recovered.output;
  EXPECT_NE(recovered.output.find("etcdadm reset --skip-remove-member --keep-data"), std::string::npos)
      << recovered.output;
  ASSERT_EQ(member_list(hosts_[0]).size(), 1u);
  auto reset_m5 = reset(hosts_[4], {"--skip-remove-member", "--keep-data"});
  ASSERT_EQ(reset_m5.exit_code, 0) << reset_m5.output;
  EXPECT_NE(reset_m5.output.find("data dir set aside as " + hosts_[4].data() + ".set-aside-reset-"), std::string::npos)
      << reset_m5.output;
  ASSERT_NO_FATAL_FAILURE(join(hosts_[4], hosts_[0]));
  ASSERT_EQ(member_list(hosts_[0]).size(), 2u);
  for (const Host* h : {&hosts_[0], &hosts_[4]}) {
    EtcdClient client(connection({h}));
    std::map<std::string, int64_t> served = mod_revisions(client, "/registry/events/");
    EXPECT_EQ(served.size(), acked.size()) << h->name;
    for (const auto& [key, rev] : acked) EXPECT_EQ(served[key], rev) << h->name << " " << key;
  }
}

}  // namespace
}  // namespace etcdadm::test
