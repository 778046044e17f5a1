// The member lifecycle end to end, with the etcdadm binary and real etcd members on loopback: the
// release is the etcd under test (etcd_versions.h) packed as an etcd release tarball and installed from a file://
// release URL, every member runs with TLS and client-certificate auth through the `process` init
// system, and etcdctl (through the generated wrapper) is the oracle for membership and health.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <thread>
#include <sstream>
#include <signal.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "changelog/segment.h"
#include "common/fs.h"
#include "common/subprocess.h"
#include "etcdadm/init_system.h"
#include "store/backend/local/local_store.h"
#include "test/support/etcd_versions.h"
#include "test/support/lifecycle_fixture.h"
#include "test/support/release_fixture.h"
#include "test/support/test_env.h"
#include "test/support/skips.h"

namespace etcdadm::test {
namespace {

class Lifecycle : public LifecycleFixture {};

int file_mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_mode & 0777;
}

// 1. init m1 -> join m2 -> join m3 with TLS; data written; membership and health checked with
//    etcdctl and the generated client certificate.
TEST_F(Lifecycle, InitAndTwoJoinsMakeAHealthyTlsCluster) {
  key_algorithm_.clear();  // the default: RSA 2048
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  for (const auto& h : hosts_) EXPECT_EQ(key_algorithms(h), std::set<std::string>{"rsa-2048"}) << h.name;
  auto members = member_list(hosts_[2]);
  ASSERT_EQ(members.size(), 3u) << members.dump();
  std::set<std::string> names;
  for (const auto& m : members) {
    names.insert(m.value("name", ""));
    EXPECT_FALSE(m.value("isLearner", false)) << "a joined member must have been promoted: " << m.dump();
    EXPECT_EQ(m["clientURLs"][0].get<std::string>().rfind("https://127.0.0.1:", 0), 0u) << m.dump();
  }
  EXPECT_EQ(names, (std::set<std::string>{"m1", "m2", "m3"}));

  auto health = etcdctl_json(hosts_[0], {"endpoint", "health", "--cluster"});
  ASSERT_EQ(health.size(), 3u) << health.dump();
  for (const auto& h : health) EXPECT_TRUE(h["health"].get<bool>()) << h.dump();

  auto put = etcdctl(hosts_[1], {"put", "/registry/pods/default/web", "spec"});
  ASSERT_EQ(put.exit_code, 0) << put.output;
  auto get = etcdctl(hosts_[2], {"get", "/registry/pods/default/web", "--print-value-only"});
  EXPECT_EQ(get.output, "spec\n");

  // Client-certificate auth is on: the CA alone does not let a client in.
  RunOptions o = etcdctl_options();
  o.timeout = std::chrono::seconds(20);
  auto anonymous =
      run_process({bin() + "/etcdctl", "--endpoints", hosts_[0].client_url(), "--cacert", hosts_[0].certs() + "/ca.crt",
                   "--dial-timeout", "2s", "--command-timeout", "3s", "get", "/x"},
                  o);
  EXPECT_NE(anonymous.exit_code, 0) << anonymous.output;

  auto i = info(hosts_[1]);
  ASSERT_EQ(i["members"].size(), 3u) << i.dump();
  int leaders = 0;
  for (const auto& m : i["members"]) {
    EXPECT_TRUE(m["reachable"].get<bool>()) << m.dump();
    EXPECT_EQ(m["version"], release_.version);
    leaders += m["leader"].get<bool>() ? 1 : 0;
    if (m["local"].get<bool>()) {
      EXPECT_EQ(m["name"], "m2");
    }
  }
  EXPECT_EQ(leaders, 1);

  EXPECT_EQ(file_mode(hosts_[1].conf() + "/etcd.env"), 0600);
  for (const char* key :
       {"/server.key", "/peer.key", "/etcdctl-etcd-client.key", "/apiserver-etcd-client.key", "/ca.key"}) {
    EXPECT_EQ(file_mode(hosts_[1].certs() + key), 0600) << key;
  }
  EXPECT_EQ(file_mode(bin() + "/etcd"), 0755);
}

// 2. The disaster-recovery runbook (docs/operations.md): backup, lose every member, rebuild from the
//    backup with init --from-backup and two joins; every key and the KV hash come back, TLS works.
//    The store is encrypted (docs/encryption.md): the saving host needs only the recipient, the
//    rebuilding one the identity.
TEST_F(Lifecycle, WholeClusterRebuiltFromBackup) {
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  std::vector<std::pair<std::string, std::string>> expected;
  int64_t revision = 0;
  std::string old_cluster_id = info(hosts_[0])["clusterId"];
  {
    EtcdClient client(conn);
    load_keys(client, "/registry/configmaps/", 400, 512);
    client.put("/registry/deleted-later", "x");
    etcdserverpb::DeleteRangeRequest del;
    del.set_key("/registry/deleted-later");
    client.delete_range(del);
    expected = all_keys(client);
  }
  std::string store = dir_ / "store";
  std::string identity = dir_ / "age-key.txt";
  ASSERT_EQ(run_process({"age-keygen", "-o", identity}).exit_code, 0);
  auto recipient = run_process({"age-keygen", "-y", identity}).output;
  recipient = recipient.substr(0, recipient.find('\n'));
  auto saved = etcdadm({"backup", "save", "--store", store, "--endpoints",
                        hosts_[0].client_url() + "," + hosts_[1].client_url() + "," + hosts_[2].client_url(),
                        "--cacert", conn.cacert, "--cert", conn.cert, "--key", conn.key, "-o", "json",
                        "--encrypt-to", recipient});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  revision = nlohmann::json::parse(saved.output.substr(saved.output.find('{')))["revision"].get<int64_t>();

  // Quorum lost for good: every etcd killed, every data dir wiped (reset keeps the CA).
  for (const auto& h : hosts_) {
    int pid = running_pid(h.conf() + "/etcd.pid", bin() + "/etcd");
    ASSERT_GT(pid, 0);
    ::kill(pid, SIGKILL);
  }
  for (const auto& h : hosts_) {
    auto r = reset(h, {"--skip-remove-member", "--force"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(path_exists(h.data()));
    EXPECT_TRUE(path_exists(h.certs() + "/ca.key"));
  }

  // The runbook. Without the identity, init refuses before installing anything.
  auto refused = run_with_member_flags({"init"}, hosts_[0], {"--from-backup", "latest", "--store", store});
  EXPECT_EQ(refused.exit_code, 7) << refused.output;
  EXPECT_NE(refused.output.find(recipient), std::string::npos) << refused.output;
  EXPECT_FALSE(path_exists(hosts_[0].data() + "/member"));
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0], {"--from-backup", "latest", "--store", store, "--identity", identity}));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[1], hosts_[0]));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[2], hosts_[0]));

  EXPECT_EQ(member_list(hosts_[0]).size(), 3u);
  EtcdClient client(conn);
  EXPECT_EQ(all_keys(client), expected);
  // The keyspace is Kubernetes' (/registry/): init moved it 10^9 past the backup and compacted
  // everything older (the joins copied that), so the backup's revision reads as compacted and the
  // HashKV to compare is the members' own at the new revision (etcd 3.4 answers none at a
  // compaction's revision: one write first). The same restore with --keep-revision serves the
  // source's HashKV at the backup's revision: Lifecycle.WholeClusterRestoredAtOnce...
  const int64_t bumped = revision + 1000000000;
  for (const auto& h : hosts_) {
    EXPECT_EQ(client.status(h.client_url()).header().revision(), bumped) << h.name;
  }
  auto old = etcdctl(hosts_[0], {"get", "/registry/", "--prefix", "--rev", std::to_string(revision)});
  EXPECT_NE(old.output.find("compacted"), std::string::npos) << "the backup's revision reads as compacted: " << old.output;
  client.put("/registry/written-after-the-restore", "x");
  for (const auto& h : hosts_) {  // a follower applies the write a moment after the leader answered
    for (int i = 0; i < 100 && client.status(h.client_url()).header().revision() < bumped + 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const uint32_t restored_hash = client.hash_kv(hosts_[0].client_url(), bumped + 1).hash();
  for (const auto& h : hosts_) EXPECT_EQ(client.hash_kv(h.client_url(), bumped + 1).hash(), restored_hash) << h.name;
  auto health = etcdctl_json(hosts_[2], {"endpoint", "health", "--cluster"});
  ASSERT_EQ(health.size(), 3u);
  for (const auto& h : health) EXPECT_TRUE(h["health"].get<bool>()) << h.dump();
  // A new cluster (fresh token): members of the lost one could never rejoin it by accident.
  EXPECT_NE(info(hosts_[0])["clusterId"], old_cluster_id);
}

// 2a. The whole cluster back at once (etcd's own recovery procedure): every host restores the same
//     backup with the full membership and the same token, and they start together; quorum comes
//     as soon as two run, and no member waits for a snapshot from another. A host that restored
//     another backup is found through its peers (KV hash at the restored revision), stops its
//     member and fails; the other two keep serving.
TEST_F(Lifecycle, WholeClusterRestoredAtOnceAndAHostWithAnotherBackupIsRefused) {
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  const std::string store = dir_ / "store";
  auto save = [&] {
    auto r = etcdadm({"backup", "save", "--store", store, "--endpoints", hosts_[0].client_url(), "--cacert", conn.cacert,
                      "--cert", conn.cert, "--key", conn.key, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output.substr(r.output.find('{')));
  };
  std::vector<std::pair<std::string, std::string>> expected;
  {
    EtcdClient client(conn);
    load_keys(client, "/registry/pods/", 300, 400);
    expected = all_keys(client);
  }
  auto first = save();
  const std::string backup = first["backup"];
  const int64_t revision = first["revision"];
  {
    EtcdClient client(conn);
    load_keys(client, "/registry/later/", 20, 100, 5);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // backup names have one-second resolution
  const std::string other = save()["backup"];

  const std::string initial_cluster = initial_cluster_of_all();
  auto restore_flags = [&](const std::string& name, const std::string& token) {
    return std::vector<std::string>{"--from-backup", name, "--store", store, "--initial-cluster", initial_cluster,
                                    "--initial-cluster-token", token};
  };
  auto restore_together = [&](const std::vector<size_t>& which, const std::vector<std::string>& backups,
                              const std::string& token) {
    std::vector<std::vector<std::string>> flags;
    for (const auto& b : backups) flags.push_back(restore_flags(b, token));
    return init_together(which, flags);
  };

  ASSERT_NO_FATAL_FAILURE(lose_every_member());
  // Without a shared token the hosts would make three different clusters: refused up front.
  auto no_token = run_with_member_flags({"init"}, hosts_[0], {"--from-backup", backup, "--store", store,
                                                              "--initial-cluster", initial_cluster});
  EXPECT_EQ(no_token.exit_code, 2) << no_token.output;
  EXPECT_FALSE(path_exists(hosts_[0].data() + "/member"));

  const auto t0 = std::chrono::steady_clock::now();
  auto results = restore_together({0, 1, 2}, {backup, backup, backup}, "restored-at-once");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& r : results) ASSERT_EQ(r.exit_code, 0) << r.output;
  std::printf("[one-step restore] 3 members serving in %.2f s\n", seconds);
  auto members = member_list(hosts_[0]);
  ASSERT_EQ(members.size(), 3u) << members.dump(2);
  for (const auto& m : members) EXPECT_FALSE(m.value("isLearner", false)) << m.dump();
  EtcdClient client(conn);
  // A Kubernetes keyspace: every host moved it by the same 10^9 (init's peer check compared them:
  // on etcd 3.4, which answers no HashKV at a compaction's revision, by revision and key count).
  EXPECT_EQ(all_keys(client), expected);
  for (const auto& h : hosts_) EXPECT_EQ(client.status(h.client_url()).header().revision(), revision + 1000000000) << h.name;
  for (const auto& r : results) EXPECT_NE(r.output.find("restored the same data as this one"), std::string::npos) << r.output;
  auto health = etcdctl_json(hosts_[2], {"endpoint", "health", "--cluster"});
  ASSERT_EQ(health.size(), 3u);
  for (const auto& h : health) EXPECT_TRUE(h["health"].get<bool>()) << h.dump();
  // Their first start skipped etcd's initial corruption check (the same snapshot everywhere, compared
  // by init; the check would wait out a timeout per peer not serving yet); from the next start on
  // they run it.
  for (const auto& h : hosts_) {
    EXPECT_EQ(read_file(h.conf() + "/etcd.log").find("initial corruption check"), std::string::npos) << h.name;
    const EnvVars env = parse_env_file(read_file(h.conf() + "/etcd.env"));
    for (const auto& [name, value] : corruption_check_env(etcd_under_test().version)) EXPECT_EQ(env_value(env, name), value) << h.name;
  }

  // Again, but the third host restores the later backup: it is refused once it sees its peers.
  ASSERT_NO_FATAL_FAILURE(lose_every_member());
  auto two = restore_together({0, 1}, {backup, backup}, "restored-again");
  for (const auto& r : two) ASSERT_EQ(r.exit_code, 0) << r.output;
  auto odd = run_with_member_flags({"init"}, hosts_[2], restore_flags(other, "restored-again"));
  EXPECT_EQ(odd.exit_code, 5) << odd.output;
  EXPECT_NE(odd.output.find("restored other data than this host"), std::string::npos) << odd.output;
  EXPECT_EQ(running_pid(hosts_[2].conf() + "/etcd.pid", bin() + "/etcd"), 0) << "its member must not keep serving";
  EtcdClient two_left(connection({&hosts_[0], &hosts_[1]}));
  EXPECT_EQ(all_keys(two_left), expected);
}

// 2b. Continuous backups across a leader change, then the whole cluster lost and rebuilt to the last
//     revision in the store: a sidecar with --continuous beside each of the three TLS members; the
//     leader's keeps the log; leadership moves (etcdctl move-leader) while a client writes; the new
//     leader's sidecar continues the log where the store's ends (no gap, each revision replayed
//     once); every etcd is killed; `init --from-backup latest --to-revision end` and two joins bring
//     back every key with all its fields as at the original cluster's last revision, the revision
//     moved 10^9 past it (a Kubernetes keyspace).
TEST_F(Lifecycle, ChangeLogHandsOverAtALeaderChangeAndTheClusterComesBackToItsLastRevision) {
  using namespace std::chrono_literals;
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  auto conn = connection({&hosts_[0], &hosts_[1], &hosts_[2]});
  std::string store = dir_ / "store";
  std::vector<std::string> tls = {"--cacert", conn.cacert, "--cert", conn.cert, "--key", conn.key};
  auto saved = etcdadm({"backup", "save", "--store", store, "--endpoints", hosts_[0].client_url(), "-o", "json",
                        "--cacert", conn.cacert, "--cert", conn.cert, "--key", conn.key});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  auto saved_json = nlohmann::json::parse(saved.output.substr(saved.output.find('{')));
  const int64_t snapshot_revision = saved_json["revision"];
  const std::string cluster_id = saved_json["clusterId"];

  std::vector<ChildProcess> sidecars;
  for (const auto& h : hosts_) {
    std::vector<std::string> argv = {ETCDADM_BIN, "--log-level", "debug", "backup", "sidecar", "--store", store,
                                     "--endpoints", h.client_url(), "--schedule", "@yearly", "--listen", "",
                                     "--continuous", "--segment-interval", "1s"};
    argv.insert(argv.end(), tls.begin(), tls.end());
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / (h.name + "-catalog.db");
    sidecars.push_back(ChildProcess::start(argv, dir_ / (h.name + "-sidecar.log"), ro));
  }
  EtcdClient client(conn);
  auto log_reaches = [&] {
    LocalStore s(store);
    return changelog::chain_from(changelog::list_segments(s, cluster_id), snapshot_revision);
  };
  auto wait_for_log = [&](int64_t revision) {
    for (int i = 0; i < 300 && log_reaches().reaches < revision; ++i) std::this_thread::sleep_for(100ms);
    ASSERT_GE(log_reaches().reaches, revision) << read_file(dir_ / "m1-sidecar.log");
  };
  auto leader_index = [&] {
    auto st = client.status(hosts_[0].client_url());
    for (size_t i = 0; i < hosts_.size(); ++i) {
      if (client.status(hosts_[i].client_url()).header().member_id() == st.leader()) return i;
    }
    return size_t{99};
  };

  load_keys(client, "/registry/pods/", 100, 300, 1);
  wait_for_log(client.status(hosts_[0].client_url()).header().revision());
  const size_t old_leader = leader_index();
  ASSERT_LT(old_leader, hosts_.size());
  const size_t new_leader = (old_leader + 1) % hosts_.size();

  // A client writes all through the move; a write that meets the election is retried.
  std::atomic<bool> writing{true};
  std::atomic<int> written{0};
  std::thread writer([&] {
    EtcdClient w(conn);
    for (int i = 0; writing.load(); ++i) {
      try {
        w.put("/registry/leases/writer-" + std::to_string(i % 50), std::string(200, 'a' + i % 26));
        ++written;
      } catch (const std::exception&) {
        std::this_thread::sleep_for(50ms);
      }
    }
  });
  // Writes before the move and after it: counted, not timed.
  auto wait_for_writes = [&](int n) {
    for (int i = 0; i < 600 && written.load() < n; ++i) std::this_thread::sleep_for(50ms);
    return written.load() >= n;
  };
  EXPECT_TRUE(wait_for_writes(20));  // EXPECT: the writer thread must be joined below
  auto new_leader_id = client.status(hosts_[new_leader].client_url()).header().member_id();
  std::ostringstream hex_id;
  hex_id << std::hex << new_leader_id;
  auto moved = etcdctl(hosts_[old_leader], {"move-leader", hex_id.str()});
  EXPECT_EQ(moved.exit_code, 0) << moved.output;
  for (int i = 0; i < 300 && leader_index() != new_leader; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(wait_for_writes(written.load() + 20)) << "no writes after the move";
  writing = false;
  writer.join();
  EXPECT_EQ(leader_index(), new_leader);
  EXPECT_GT(written.load(), 20);
  const int64_t last = client.status(hosts_[new_leader].client_url()).header().revision();
  ASSERT_NO_FATAL_FAILURE(wait_for_log(last));
  // The old leader's sidecar let go, the new one's took over from the store's end of the log. The
  // old one may have stored every revision up to `last` itself (its member, a follower now, still
  // streams the cluster's events until its sidecar notices, within a second): the new one's
  // capture is waited for, not assumed to have started already.
  std::string old_log = read_file(dir_ / (hosts_[old_leader].name + "-sidecar.log"));
  std::string new_log;
  for (int i = 0; i < 300; ++i) {
    new_log = read_file(dir_ / (hosts_[new_leader].name + "-sidecar.log"));
    if (new_log.find("change log: capturing cluster " + cluster_id) != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(old_log.find("no longer leads"), std::string::npos) << old_log;
  EXPECT_NE(new_log.find("change log: capturing cluster " + cluster_id), std::string::npos) << new_log;
  auto chain = log_reaches();
  EXPECT_EQ(chain.reaches, last);
  EXPECT_FALSE(chain.next_segment_start);
  const auto fields_at_last = all_key_fields(client, last);

  // Every etcd killed at once; the sidecars stop after it.
  for (const auto& h : hosts_) {
    int pid = running_pid(h.conf() + "/etcd.pid", bin() + "/etcd");
    ASSERT_GT(pid, 0);
    ::kill(pid, SIGKILL);
  }
  for (auto& sc : sidecars) sc.stop(10000ms);
  for (const auto& h : hosts_) {
    auto r = reset(h, {"--skip-remove-member", "--force"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // A revision the log does not reach is refused before anything is installed.
  auto beyond = run_with_member_flags({"init"}, hosts_[0],
                                      {"--from-backup", "latest", "--store", store, "--to-revision", std::to_string(last + 1)});
  EXPECT_EQ(beyond.exit_code, 3) << beyond.output;
  EXPECT_NE(beyond.output.find(std::to_string(last)), std::string::npos) << beyond.output;
  EXPECT_FALSE(path_exists(hosts_[0].data() + "/member"));

  ASSERT_NO_FATAL_FAILURE(init(hosts_[0], {"--from-backup", "latest", "--store", store, "--to-revision", "end"}));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[1], hosts_[0]));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[2], hosts_[0]));
  // A Kubernetes keyspace: back at the log's last revision, moved 10^9 on (every key with all its
  // fields as they were at `last`; the replay's HashKV at `last` itself, restored with
  // --keep-revision, is ChangeLog's to check).
  EtcdClient restored(conn);
  for (const auto& h : hosts_) {
    EXPECT_EQ(restored.status(h.client_url()).header().revision(), last + 1000000000) << h.name;
  }
  EXPECT_EQ(all_key_fields(restored, 0), fields_at_last);
}

// 3. reset of one member shrinks the cluster; it can join again; the last member refuses a reset.
//    m1 is made phase by phase (`init phase <name>`).
TEST_F(Lifecycle, ResetShrinksRejoinWorksAndLastMemberRefuses) {
  for (const char* phase :
       {"preflight", "install", "certificates", "snapshot", "configure", "start", "etcdctl", "health"}) {
    auto r = run_with_member_flags({"init", "phase", phase}, hosts_[0]);
    ASSERT_EQ(r.exit_code, 0) << phase << ": " << r.output;
  }
  ASSERT_NO_FATAL_FAILURE(join(hosts_[1], hosts_[0]));
  ASSERT_NO_FATAL_FAILURE(join(hosts_[2], hosts_[0]));

  auto r = reset(hosts_[2]);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("removed from the cluster"), std::string::npos) << r.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 2u);
  EXPECT_FALSE(path_exists(hosts_[2].data()));
  EXPECT_FALSE(path_exists(hosts_[2].conf()));
  EXPECT_FALSE(path_exists(hosts_[2].certs() + "/server.crt"));
  EXPECT_TRUE(path_exists(hosts_[2].certs() + "/ca.crt"));  // kept unless --remove-ca
  auto again = reset(hosts_[2], {"--name", "m3", "--data-dir", hosts_[2].data(), "--certs-dir", hosts_[2].certs(),
                                 "--init-system", "process"});
  EXPECT_EQ(again.exit_code, 0) << "reset is idempotent: " << again.output;

  // Re-join, interrupted after the membership phase (the learner is added, nothing started), then
  // finished by running the whole join again.
  copy_ca(hosts_[1], hosts_[2]);
  for (const char* phase : {"preflight", "install", "certificates", "membership"}) {
    auto p = run_with_member_flags({"join", "phase", phase, hosts_[1].client_url()}, hosts_[2]);
    ASSERT_EQ(p.exit_code, 0) << phase << ": " << p.output;
  }
  auto pending = member_list(hosts_[0]);
  ASSERT_EQ(pending.size(), 3u);
  int learners = 0;
  for (const auto& m : pending) learners += m.value("isLearner", false) ? 1 : 0;
  EXPECT_EQ(learners, 1) << pending.dump();
  ASSERT_NO_FATAL_FAILURE(join(hosts_[2], hosts_[1]));
  auto rejoined = member_list(hosts_[0]);
  EXPECT_EQ(rejoined.size(), 3u) << "the re-run must reuse the learner, not add another member";
  for (const auto& m : rejoined) EXPECT_FALSE(m.value("isLearner", false)) << m.dump();
  ASSERT_EQ(etcdctl(hosts_[2], {"put", "/after-rejoin", "1"}).exit_code, 0);

  // A member whose etcd is down is removed through the members it recorded when it joined.
  int pid = running_pid(hosts_[2].conf() + "/etcd.pid", bin() + "/etcd");
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  // info still answers, through the members recorded at join, and shows this member down.
  auto seen = info(hosts_[2]);
  ASSERT_EQ(seen["members"].size(), 3u) << seen.dump();
  for (const auto& m : seen["members"]) {
    EXPECT_EQ(m["reachable"].get<bool>(), m["name"] != "m3") << m.dump();
  }
  auto down = reset(hosts_[2]);
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_NE(down.output.find("removed from the cluster"), std::string::npos) << down.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 2u);
  ASSERT_EQ(reset(hosts_[1]).exit_code, 0);
  auto last = reset(hosts_[0]);
  EXPECT_EQ(last.exit_code, 2) << last.output;
  EXPECT_NE(last.output.find("last voting member"), std::string::npos) << last.output;
  auto still = etcdctl(hosts_[0], {"get", "/after-rejoin", "--print-value-only"});
  EXPECT_EQ(still.output, "1\n") << "the refused reset must not have touched the member";
  auto forced = reset(hosts_[0], {"--force", "--remove-ca"});
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_FALSE(path_exists(hosts_[0].certs()));
}

// A host dies and is rebuilt: `join --replace` removes its old member through a healthy one and
// joins the new host in its place (same name and address, new member ID), back to 3 healthy voting
// members. Refused while the member still answers; `member remove` refuses what would cost quorum.
TEST_F(Lifecycle, JoinReplaceTakesAWipedHostsPlaceAndRemovalsKeepQuorum) {
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/before-replace", "1"}).exit_code, 0);
  std::string old_id;
  for (const auto& m : member_list(hosts_[0])) {
    if (m["name"] == "m3") old_id = fmt::format("{:x}", m["ID"].get<uint64_t>());
  }
  ASSERT_FALSE(old_id.empty());

  // A new host cannot take the place of a member that still answers: refused before anything is
  // installed or written there.
  Host spare;
  spare.name = "m4";
  spare.root = dir_ / "m4";
  spare.client_port = free_port();
  spare.peer_port = free_port();
  hosts_.push_back(spare);
  copy_ca(hosts_[0], spare);
  auto healthy = run_with_member_flags({"join", hosts_[0].client_url()}, spare, {"--replace", "m3"});
  EXPECT_NE(healthy.exit_code, 0) << healthy.output;
  EXPECT_NE(healthy.output.find("member m3 is healthy"), std::string::npos) << healthy.output;
  EXPECT_FALSE(path_exists(spare.data()));
  EXPECT_FALSE(path_exists(spare.certs() + "/etcdctl-etcd-client.crt"));
  EXPECT_FALSE(path_exists(spare.conf()));
  EXPECT_EQ(member_list(hosts_[0]).size(), 3u);
  auto remove_healthy = etcdadm({"member", "remove", "m3", "--config-dir", hosts_[0].conf()});
  EXPECT_EQ(remove_healthy.exit_code, 2) << remove_healthy.output;
  EXPECT_NE(remove_healthy.output.find("healthy"), std::string::npos) << remove_healthy.output;

  // m3's host dies: etcd killed, everything on it gone.
  int pid = running_pid(hosts_[2].conf() + "/etcd.pid", bin() + "/etcd");
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  remove_all(hosts_[2].root);
  // With m3 down, removing a healthy member too would leave 1 of 2: refused even with --force.
  auto below = etcdadm({"member", "remove", "m2", "--force", "--config-dir", hosts_[0].conf()});
  EXPECT_NE(below.exit_code, 0) << below.output;
  EXPECT_NE(below.output.find("without quorum"), std::string::npos) << below.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 3u);

  // The rebuilt host: the CA copied in, then one command. Killed (SIGKILL) right after it removed
  // the old member and before it added itself, it is run again and goes on.
  copy_ca(hosts_[0], hosts_[2]);
  std::vector<std::string> join_args = {"join", hosts_[0].client_url()};
  auto flags = member_flags(hosts_[2]);
  join_args.insert(join_args.end(), flags.begin(), flags.end());
  join_args.insert(join_args.end(), {"--replace", "m3"});
  RunOptions kill_at;
  kill_at.env["ETCDADM_FAILPOINTS"] = "join/replace/removed";
  auto killed = etcdadm(join_args, kill_at);
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 2u) << "the old member was removed before the kill";
  auto replaced = run_with_member_flags({"join", hosts_[0].client_url()}, hosts_[2], {"--replace", "m3"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.output;
  auto members = member_list(hosts_[0]);
  ASSERT_EQ(members.size(), 3u) << members.dump();
  std::set<std::string> names;
  for (const auto& m : members) {
    names.insert(m.value("name", ""));
    EXPECT_FALSE(m.value("isLearner", false)) << m.dump();
    EXPECT_NE(fmt::format("{:x}", m["ID"].get<uint64_t>()), old_id) << "the old member must be gone";
  }
  EXPECT_EQ(names, (std::set<std::string>{"m1", "m2", "m3"}));
  auto health = etcdctl_json(hosts_[0], {"endpoint", "health", "--cluster"});
  ASSERT_EQ(health.size(), 3u) << health.dump();
  for (const auto& h : health) EXPECT_TRUE(h["health"].get<bool>()) << h.dump();
  auto got = etcdctl(hosts_[2], {"get", "/registry/before-replace", "--print-value-only", "--consistency", "s"});
  EXPECT_EQ(got.output, "1\n") << "the replacement has the cluster's data";
  // Running it again finds the replacement done.
  auto again = run_with_member_flags({"join", hosts_[0].client_url()}, hosts_[2], {"--replace", "m3"});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 3u);
}

// The DR runbook one minor up: a backup of the previous pinned etcd minor starts the first member
// of the etcd under test (what a rolling upgrade allows; etcd_version.h), restored by the
// installed etcd's own tool, with every key and the HashKV at the backup revision.
TEST_F(Lifecycle, InitFromABackupOfThePreviousMinor) {
  const EtcdRelease& now = etcd_under_test();
  const std::string previous = pinned_minor_beside(now.minor, -1);
  if (previous.empty()) {
    ETCDADM_SKIP_BY_DESIGN() << "no etcd minor before " << now.minor << " is pinned";
  }
  EtcdRelease older = etcd_release(previous);
  EtcdOptions o;
  o.name = "old";
  o.etcd_binary = older.etcd();
  EtcdMember source(dir_.path(), o);
  source.start();
  EtcdClient old_client(source.connection());
  load_keys(old_client, "/registry/configmaps/", 200, 400, 4);
  std::string store = dir_ / "store";
  auto saved = etcdadm({"backup", "save", "--store", store, "--endpoints", source.client_url(), "-o", "json"});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  auto j = nlohmann::json::parse(saved.output.substr(saved.output.find('{')));
  ASSERT_EQ(j["etcdVersion"], older.version);
  int64_t revision = j["revision"];
  auto expected = all_keys(old_client, revision);
  uint32_t hash = old_client.hash_kv(source.client_url(), revision).hash();
  source.stop();

  // At the backup's own revision: compared by HashKV there.
  auto r = run_with_member_flags({"init"}, hosts_[0], {"--from-backup", "latest", "--store", store, "--keep-revision"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a one-minor upgrade"), std::string::npos) << r.output;
  EtcdClient client(connection({&hosts_[0]}));
  EXPECT_EQ(client.status(hosts_[0].client_url()).version(), now.version);
  EXPECT_EQ(all_keys(client, revision), expected);
  EXPECT_EQ(client.hash_kv(hosts_[0].client_url(), revision).hash(), hash);
}

// init's preflight checks what would otherwise fail only in the start phase (a port another
// process listens on) or the install phase (a version the release source lacks), before anything
// is written: no certificates, state file, service, install or cache, so reset and info have no
// member to act on and say so.
TEST_F(Lifecycle, InitPreflightRefusesATakenPortAndAMissingReleaseBeforeWritingAnything) {
  const Host& h = hosts_[0];
  auto nothing_written = [&] {
    for (const std::string& p : {h.certs(), h.conf(), h.data(), bin(), std::string(dir_ / "cache")}) {
      EXPECT_FALSE(path_exists(p)) << p << " was written";
    }
  };
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(h.client_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(listener, 1), 0);
  auto taken = run_with_member_flags({"init"}, h);
  EXPECT_EQ(taken.exit_code, 4) << taken.output;
  EXPECT_NE(taken.output.find("127.0.0.1:" + std::to_string(h.client_port) + " (--client-port) is in use by PID " +
                              std::to_string(::getpid())),
            std::string::npos)
      << taken.output;
  nothing_written();
  auto reset_after = reset(h, {"--force"});
  EXPECT_EQ(reset_after.exit_code, 3) << reset_after.output;
  EXPECT_NE(reset_after.output.find("no etcdadm member state"), std::string::npos) << reset_after.output;
  // info, too, says there is no member here and how to point at one, rather than asking others
  // (there are none) and failing on a certificate file that was never written.
  auto info_after = etcdadm({"info", "--config-dir", h.conf()});
  EXPECT_EQ(info_after.exit_code, 3) << info_after.output;
  EXPECT_NE(info_after.output.find("no etcdadm member state in " + h.conf()), std::string::npos) << info_after.output;
  EXPECT_NE(info_after.output.find("--config-dir"), std::string::npos) << info_after.output;
  EXPECT_EQ(info_after.output.find("asking the others"), std::string::npos) << info_after.output;
  ::close(listener);

  auto flags = member_flags(h);
  auto version = std::find(flags.begin(), flags.end(), "--version");
  ASSERT_NE(version, flags.end());
  *(version + 1) = "3." + std::to_string(etcd_under_test().minor_number()) + ".99";
  // init's preflight, and the install phase on its own (which names the missing release too,
  // rather than suggesting to skip the checksum of a tarball that does not exist).
  for (const std::vector<std::string>& command : {std::vector<std::string>{"init"},
                                                  std::vector<std::string>{"init", "phase", "install"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), flags.begin(), flags.end());
    auto missing = etcdadm(args);
    EXPECT_EQ(missing.exit_code, 3) << missing.output;
    EXPECT_NE(missing.output.find("etcd " + *(version + 1) + " for linux-"), std::string::npos) << missing.output;
    EXPECT_NE(missing.output.find("no such tarball"), std::string::npos) << missing.output;
    EXPECT_EQ(missing.output.find("--skip-release-checksum"), std::string::npos)
        << "no checksum option installs a release that does not exist: " << missing.output;
  }
  for (const std::string& p : {h.certs(), h.conf(), h.data(), std::string(dir_ / "cache")}) {
    EXPECT_FALSE(path_exists(p)) << p << " was written";
  }
}

// /var/lib/etcd on its own disk: init --from-backup restores into the mount point (staging on its
// filesystem: no rename can replace a mount point), and reset empties it, leaving the mount and
// its lost+found for the next init.
TEST_F(Lifecycle, InitFromABackupOntoAMountedDataDirAndResetKeepsTheMount) {
  if (::geteuid() != 0) ETCDADM_SKIP_OUTSIDE_CI() << "mounting a tmpfs needs root";
  EtcdOptions o;
  o.name = "source";
  EtcdMember source(dir_.path(), o);
  source.start();
  EtcdClient source_client(source.connection());
  load_keys(source_client, "/registry/configmaps/", 100, 400, 5);
  auto expected = all_keys(source_client);
  std::string store = dir_ / "store";
  auto saved = etcdadm({"backup", "save", "--store", store, "--endpoints", source.client_url()});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  source.stop();

  ScopedTmpfs disk(hosts_[0].data(), "size=256m,mode=0755");
  make_dirs(hosts_[0].data() + "/lost+found", 0700);
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0], {"--from-backup", "latest", "--store", store}));
  {
    EtcdClient client(connection({&hosts_[0]}));
    EXPECT_EQ(all_keys(client), expected);
  }
  EXPECT_TRUE(is_filesystem_root(hosts_[0].data()));
  EXPECT_EQ(file_mode(hosts_[0].data()), 0700);
  EXPECT_TRUE(path_exists(hosts_[0].data() + "/lost+found"));

  auto done = reset(hosts_[0], {"--force"});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_TRUE(is_filesystem_root(hosts_[0].data()));
  EXPECT_FALSE(path_exists(hosts_[0].data() + "/member"));
  EXPECT_TRUE(path_exists(hosts_[0].data() + "/lost+found"));
  EXPECT_TRUE(is_empty_data_dir(hosts_[0].data()));
}

// init --snapshot FILE: the first member of a new cluster from an `etcdctl snapshot save` file; a
// damaged file is refused before anything is restored.
TEST_F(Lifecycle, InitFromSnapshotFileRestoresAndRefusesADamagedOne) {  // and bumps the revision
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0]));
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/secrets/s" + std::to_string(i), "v" + std::to_string(i)}).exit_code,
              0);
  }
  auto revision_of = [&](const std::vector<std::string>& get) {
    auto r = etcdctl(hosts_[0], get);
    auto brace = r.output.find('{');
    return brace == std::string::npos ? int64_t{-1}
                                      : nlohmann::json::parse(r.output.substr(brace))["header"]["revision"].get<int64_t>();
  };
  const int64_t before = revision_of({"get", "/registry/secrets/s0", "-w", "json"});
  std::string snapshot = dir_ / "etcdctl.db";
  auto saved = etcdctl(hosts_[0], {"snapshot", "save", snapshot});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  ASSERT_EQ(reset(hosts_[0], {"--force"}).exit_code, 0);

  std::string damaged = dir_ / "damaged.db";
  std::string bytes = read_file(snapshot);
  bytes[bytes.size() / 2] ^= 0x5a;
  write_file_atomic(damaged, bytes);
  auto bad = run_with_member_flags({"init"}, hosts_[0], {"--snapshot", damaged});
  EXPECT_EQ(bad.exit_code, 5) << bad.output;
  EXPECT_NE(bad.output.find("failed its SHA-256 check"), std::string::npos) << bad.output;
  EXPECT_TRUE(is_missing_or_empty_dir(hosts_[0].data()));
  // The failed run stopped before configure: a re-run with a good file goes through, here with
  // the revision bump a Kubernetes restore wants.
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0], {"--snapshot", snapshot, "--bump-revision", "1000", "--mark-compacted"}));
  auto keys = etcdctl(hosts_[0], {"get", "--prefix", "/registry/secrets/", "--keys-only"});
  EXPECT_EQ(std::count(keys.output.begin(), keys.output.end(), '/'), 20 * 3) << keys.output;
  EXPECT_EQ(revision_of({"get", "/registry/secrets/s0", "-w", "json"}), before + 1000);
  auto old = etcdctl(hosts_[0], {"get", "/registry/secrets/s0", "--rev", std::to_string(before)});
  EXPECT_NE(old.output.find("compacted"), std::string::npos) << old.output;
}

// init --from-backup reads and checks the backup before anything else: a damaged one costs an
// exit 5 and nothing installed, issued or written. The join command init prints works as printed
// (plus the new member's own name, address and dirs), offline: it names the release source, and
// join takes the verified etcd already installed instead of fetching it.
TEST_F(Lifecycle, DamagedBackupInstallsNothingAndThePrintedJoinWorksOffline) {
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0]));
  ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/k", "v"}).exit_code, 0);
  auto conn = connection({&hosts_[0]});
  std::string store = dir_ / "store";
  auto saved = etcdadm({"backup", "save", "--store", store, "--endpoints", hosts_[0].client_url(), "--cacert",
                        conn.cacert, "--cert", conn.cert, "--key", conn.key, "-o", "json"});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  std::string name = nlohmann::json::parse(saved.output.substr(saved.output.find('{')))["backup"];
  ASSERT_EQ(reset(hosts_[0], {"--force"}).exit_code, 0);
  std::string data_file = store + "/" + name + "/etcd.backup.gz";
  std::string good = read_file(data_file);
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x10;
  write_file_atomic(data_file, bad);

  std::string fresh_bin = dir_ / "fresh-bin";
  std::vector<std::string> init_args = {"init"};
  for (const auto& f : member_flags(hosts_[0])) init_args.push_back(init_args.back() == "--install-dir" ? fresh_bin : f);
  init_args.insert(init_args.end(), {"--from-backup", "latest", "--store", store});
  auto refused = etcdadm(init_args);
  EXPECT_EQ(refused.exit_code, 5) << refused.output;
  EXPECT_FALSE(path_exists(fresh_bin + "/etcd")) << "etcd was installed for a damaged backup";
  EXPECT_FALSE(path_exists(hosts_[0].certs() + "/server.crt")) << "a certificate was issued for a damaged backup";
  EXPECT_TRUE(is_missing_or_empty_dir(hosts_[0].data()));

  write_file_atomic(data_file, good);
  // With the revision bump of a Kubernetes restore: the joined member below serves it too.
  auto inited = run_with_member_flags({"init", "-o", "json"}, hosts_[0],
                                      {"--from-backup", name, "--store", store, "--bump-revision", "1000000",
                                       "--mark-compacted"});
  ASSERT_EQ(inited.exit_code, 0) << inited.output;
  std::string printed = nlohmann::json::parse(inited.output.substr(inited.output.find('{')))["joinCommand"];
  for (const char* flag : {"--release-url", "--cache-dir", "--install-dir", "--init-system process"}) {
    EXPECT_NE(printed.find(flag), std::string::npos) << flag << " missing from: " << printed;
  }
  // Offline from here: neither the release server nor the cache exists.
  std::filesystem::remove_all(release_.dir);
  std::filesystem::remove_all(dir_ / "cache");
  // The printed command, word for word, with what is this host's own: its name, address and dirs.
  std::vector<std::string> words;
  std::istringstream in(printed);
  for (std::string w; in >> w;) words.push_back(w);
  ASSERT_GE(words.size(), 3u);
  EXPECT_EQ(words[0], "etcdadm");
  std::map<std::string, std::string> own = {{"--certs-dir", hosts_[1].certs()},
                                            {"--data-dir", hosts_[1].data()},
                                            {"--config-dir", hosts_[1].conf()},
                                            {"--client-port", std::to_string(hosts_[1].client_port)},
                                            {"--peer-port", std::to_string(hosts_[1].peer_port)}};
  std::vector<std::string> args(words.begin() + 1, words.end());
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (own.count(args[i])) {
      args[i + 1] = own[args[i]];
      own.erase(args[i]);
    }
  }
  for (const auto& [flag, value] : own) args.insert(args.end(), {flag, value});
  args.insert(args.end(), {"--name", hosts_[1].name, "--bind-address", "127.0.0.1"});
  copy_ca(hosts_[0], hosts_[1]);
  auto joined = etcdadm(args);
  ASSERT_EQ(joined.exit_code, 0) << joined.output;
  EXPECT_NE(joined.output.find("already installed"), std::string::npos) << joined.output;
  EXPECT_EQ(member_list(hosts_[0]).size(), 2u);
  // The printed command names no key algorithm: the joined member's keys follow the CA's.
  EXPECT_EQ(printed.find("--key-algorithm"), std::string::npos) << printed;
  EXPECT_EQ(key_algorithms(hosts_[1]), std::set<std::string>{"ecdsa-p256"});
  auto value = etcdctl(hosts_[1], {"get", "/registry/k", "--print-value-only"});
  EXPECT_EQ(value.output, "v\n");
  auto bumped = etcdctl(hosts_[1], {"get", "/registry/k", "-w", "json"});
  auto brace = bumped.output.find('{');
  ASSERT_NE(brace, std::string::npos) << bumped.output;
  EXPECT_GT(nlohmann::json::parse(bumped.output.substr(brace))["header"]["revision"].get<int64_t>(), 1000000)
      << bumped.output;
}

// reset deletes nothing while a process other than the member it stops holds the data dir (an etcd
// started by hand, a backup tool reading the db): it names the PID and keeps data, config and
// certificates; once that process is gone, reset works.
TEST_F(Lifecycle, ResetRefusesADataDirAnotherProcessHolds) {
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0]));
  std::string db = hosts_[0].data() + "/member/snap/db";
  ASSERT_TRUE(path_exists(db));
  ChildProcess holder = ChildProcess::start({"sh", "-c", "exec sleep 60 < '" + db + "'"}, dir_ / "holder.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto refused = reset(hosts_[0], {"--force"});
  EXPECT_EQ(refused.exit_code, 4) << refused.output;
  EXPECT_NE(refused.output.find("PID " + std::to_string(holder.pid())), std::string::npos) << refused.output;
  EXPECT_TRUE(path_exists(db));
  EXPECT_TRUE(path_exists(hosts_[0].certs() + "/server.crt"));
  EXPECT_TRUE(path_exists(hosts_[0].conf() + "/etcdadm.json"));
  holder.stop(std::chrono::milliseconds(100));
  auto done = reset(hosts_[0], {"--force"});
  EXPECT_EQ(done.exit_code, 0) << done.output;
  EXPECT_FALSE(path_exists(hosts_[0].data()));
}

// `etcdadm download`: from a release URL into an install dir (then from the cache), cache only,
// and from existing binaries (air-gapped).
TEST_F(Lifecycle, DownloadInstallsFromReleaseCacheAndBinariesDir) {
  std::string cache = dir_ / "dl-cache", inst = dir_ / "dl-bin";
  auto first = etcdadm({"download", "--version", release_.version, "--release-url", release_.base_url, "--cache-dir", cache,
                        "--install-dir", inst});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("Installed etcd " + release_.version), std::string::npos) << first.output;
  EXPECT_EQ(file_mode(inst + "/etcd"), 0755);
  EXPECT_EQ(file_mode(inst + "/etcdctl"), 0755);
  auto again = etcdadm({"download", "--version", release_.version, "--release-url", release_.base_url, "--cache-dir", cache,
                        "--install-dir", dir_ / "dl-bin2"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("(cached)"), std::string::npos) << again.output;

  auto only = etcdadm({"download", "--cache-only", "--version", release_.version, "--release-url", release_.base_url,
                       "--cache-dir", dir_ / "dl-cache2"});
  ASSERT_EQ(only.exit_code, 0) << only.output;
  EXPECT_TRUE(path_exists(dir_ / ("dl-cache2/etcd/v" + release_.version + "/etcd-v" + release_.version + "-linux-" +
                                  release_.arch + ".tar.gz")));

  auto from_dir = etcdadm({"download", "--binaries-dir", etcd_under_test().bin_dir, "--install-dir", dir_ / "dl-bin3"});
  ASSERT_EQ(from_dir.exit_code, 0) << from_dir.output;
  EXPECT_NE(from_dir.output.find("Installed etcd " + release_.version), std::string::npos) << from_dir.output;

  auto wrong = etcdadm({"download", "--version", release_.version, "--release-url", release_.base_url, "--cache-dir",
                        dir_ / "dl-cache3", "--install-dir", dir_ / "dl-bin4", "--release-sha256", std::string(64, '0')});
  EXPECT_EQ(wrong.exit_code, 5) << wrong.output;
  EXPECT_FALSE(path_exists(dir_ / "dl-bin4/etcd"));
}

// 4. join without the CA, with another CA, and to an unreachable endpoint: a clear error each
//    time and nothing written on the joining host.
TEST_F(Lifecycle, JoinFailsClearlyAndLeavesNothingBehind) {
  ASSERT_NO_FATAL_FAILURE(init(hosts_[0]));
  const Host& h = hosts_[1];
  auto leftovers = [&] {
    std::vector<std::string> found;
    for (const auto& p : {h.data(), h.conf(), h.certs() + "/server.crt", h.certs() + "/etcdctl-etcd-client.key"}) {
      if (path_exists(p)) found.push_back(p);
    }
    return found;
  };

  auto no_ca = run_with_member_flags({"join", hosts_[0].client_url()}, h);
  EXPECT_EQ(no_ca.exit_code, 3) << no_ca.output;
  EXPECT_NE(no_ca.output.find("no CA in " + h.certs()), std::string::npos) << no_ca.output;
  EXPECT_NE(no_ca.output.find("copy ca.crt and ca.key"), std::string::npos) << no_ca.output;
  EXPECT_TRUE(leftovers().empty());

  make_dirs(h.certs(), 0700);
  auto gen = run_process({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", h.certs() + "/ca.key",
                          "-out", h.certs() + "/ca.crt", "-subj", "/CN=etcd", "-days", "30"});
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  auto wrong_ca = run_with_member_flags({"join", hosts_[0].client_url()}, h);
  EXPECT_EQ(wrong_ca.exit_code, 6) << wrong_ca.output;
  EXPECT_NE(wrong_ca.output.find("was not issued by the CA in " + h.certs() + "/ca.crt"), std::string::npos)
      << wrong_ca.output;
  EXPECT_TRUE(leftovers().empty());

  copy_ca(hosts_[0], h);
  auto unreachable =
      run_with_member_flags({"join", "https://127.0.0.1:" + std::to_string(free_port())}, h, {"--retry=false"});
  EXPECT_EQ(unreachable.exit_code, 6) << unreachable.output;
  EXPECT_NE(unreachable.output.find("cannot connect"), std::string::npos) << unreachable.output;
  EXPECT_TRUE(leftovers().empty());

  // An init system that cannot work here is refused in preflight, before the member is added.
  // (Only where systemd is not running: elsewhere this join would really install a unit.)
  if (!path_exists("/run/systemd/system")) {
    auto args = member_flags(h, "systemd");
    args.insert(args.begin(), {"join", hosts_[0].client_url()});
    auto no_systemd = etcdadm(args);
    EXPECT_EQ(no_systemd.exit_code, 6) << no_systemd.output;
    EXPECT_NE(no_systemd.output.find("systemd is not running"), std::string::npos) << no_systemd.output;
    EXPECT_TRUE(leftovers().empty());
  }

  EXPECT_EQ(member_list(hosts_[0]).size(), 1u) << "failed joins must not add members";
}

// 5. certs renew on every member with a rolling restart: new serials and expiry, served by etcd
//    after the restart, and the cluster answers after each step.
TEST_F(Lifecycle, CertsRenewWithRollingRestartKeepsServing) {
  ASSERT_NO_FATAL_FAILURE(three_member_cluster());
  auto table = etcdadm({"certs", "check-expiration", "--certs-dir", hosts_[0].certs()});
  ASSERT_EQ(table.exit_code, 0) << table.output;
  for (const char* s :
       {"CERTIFICATE", "EXPIRES", "RESIDUAL", "ca", "server", "peer", "etcdctl-etcd-client", "apiserver-etcd-client"}) {
    EXPECT_NE(table.output.find(s), std::string::npos) << s << "\n" << table.output;
  }
  int step = 0;
  for (const auto& h : hosts_) {
    auto before =
        nlohmann::json::parse(etcdadm({"certs", "check-expiration", "--certs-dir", h.certs(), "-o", "json"}).output);
    auto r = etcdadm({"certs", "renew", "--validity", "30d", "--restart", "--config-dir", h.conf()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto after =
        nlohmann::json::parse(etcdadm({"certs", "check-expiration", "--certs-dir", h.certs(), "-o", "json"}).output);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      if (after[i]["ca"].get<bool>()) {
        EXPECT_EQ(after[i]["serial"], before[i]["serial"]) << "the CA is not renewed";
        continue;
      }
      EXPECT_NE(after[i]["serial"], before[i]["serial"]) << after[i].dump();
      EXPECT_EQ(after[i]["keyAlgorithm"], "ecdsa-p256") << "renewal keeps the key: " << after[i].dump();
      EXPECT_NE(after[i]["notAfter"], before[i]["notAfter"]) << after[i].dump();
      EXPECT_LT(after[i]["residualSeconds"].get<int64_t>(), 31 * 86400);
    }
    // etcd serves the renewed server certificate after the restart.
    auto served = run_process({"sh", "-c",
                               "openssl s_client -connect 127.0.0.1:" + std::to_string(h.client_port) + " -CAfile " +
                                   h.certs() + "/ca.crt </dev/null 2>/dev/null | openssl x509 -noout -serial"});
    std::string server_serial;
    for (const auto& c : after) {
      if (c["name"] == "server") server_serial = c["serial"];
    }
    std::string served_serial = served.output.substr(served.output.find('=') + 1);
    served_serial.erase(served_serial.find_last_not_of("\n") + 1);
    EXPECT_EQ(strcasecmp(served_serial.c_str(), server_serial.c_str()), 0) << served.output << " vs " << server_serial;
    // The cluster keeps serving through the rolling restart.
    const Host& other = hosts_[(step + 1) % 3];
    ASSERT_EQ(etcdctl(other, {"put", "/renew/" + h.name, "ok"}).exit_code, 0);
    ++step;
  }
  auto keys = etcdctl(hosts_[0], {"get", "--prefix", "/renew/", "--keys-only"});
  EXPECT_EQ(std::count(keys.output.begin(), keys.output.end(), '/'), 6) << keys.output;
}

// 6. The service definitions the systemd and kubelet init systems write, produced through the CLI
//    (`init phase configure`): systemd-analyze accepts the unit, the manifest is YAML with the
//    expected fields.
TEST_F(Lifecycle, ConfigurePhaseWritesVerifiableUnitAndManifest) {
  const Host& h = hosts_[0];
  for (const char* phase : {"install", "certificates"}) {
    ASSERT_EQ(run_with_member_flags({"init", "phase", phase}, h).exit_code, 0);
  }
  std::string units = dir_ / "systemd";
  RunOptions env;
  env.env["ETCDADM_SYSTEMD_DIR"] = units;
  auto configure = [&](const std::string& init_system, std::vector<std::string> extra, const RunOptions& o) {
    auto args = std::vector<std::string>{"init", "phase", "configure"};
    auto f = member_flags(h, init_system);
    args.insert(args.end(), f.begin(), f.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_etcdadm(args, dir_ / "catalog.db", o);
  };
  auto r = configure("systemd", {"--service-name", "etcd-m1"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string unit = units + "/etcd-m1.service";
  ASSERT_TRUE(path_exists(unit)) << r.output;
  std::string text = read_file(unit);
  EXPECT_NE(text.find("EnvironmentFile=" + h.conf() + "/etcd.env"), std::string::npos) << text;
  EXPECT_NE(text.find("ExecStart=" + bin() + "/etcd"), std::string::npos) << text;
  if (find_executable("systemd-analyze")) {
    auto v = run_process({"systemd-analyze", "verify", unit});
    EXPECT_EQ(v.exit_code, 0) << v.output;
  }

  // Flags before `phase` would be ignored by the phase: refused instead.
  auto misplaced = etcdadm({"init", "--data-dir", "/etc", "phase", "preflight"});
  EXPECT_EQ(misplaced.exit_code, 2) << misplaced.output;
  EXPECT_NE(misplaced.output.find("--data-dir was given before `phase`"), std::string::npos) << misplaced.output;

  std::string manifests = dir_ / "manifests";
  r = configure("kubelet", {"--kubelet-pod-manifest-path", manifests}, {});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto yaml =
      run_process({"python3", "-c", "import yaml,json,sys; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                   manifests + "/etcd.yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.output;
  auto pod = nlohmann::json::parse(yaml.output);
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["namespace"], "kube-system");
  EXPECT_TRUE(pod["spec"]["hostNetwork"].get<bool>());
  const auto& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "quay.io/coreos/etcd:v" + release_.version);
  std::map<std::string, std::string> env_vars;
  for (const auto& e : c["env"]) env_vars[e["name"]] = e["value"];
  EXPECT_EQ(env_vars["ETCD_NAME"], "m1");
  EXPECT_EQ(env_vars["ETCD_DATA_DIR"], h.data());
  EXPECT_EQ(env_vars["ETCD_ADVERTISE_CLIENT_URLS"], h.client_url());
  EXPECT_EQ(env_vars["ETCD_CLIENT_CERT_AUTH"], "true");
}

}  // namespace
}  // namespace etcdadm::test
