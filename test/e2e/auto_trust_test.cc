// `etcdadm auto` handed what a store writer, a typo or an outage can put in front of it: the
// controllers must never be tricked into breaking the cluster, and must say what they refuse
// (issue "Controllers you can trust"). Hosts as processes on loopback, as in auto_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "common/fs.h"
#include "common/subprocess.h"
#include "controller/records.h"
#include "store/backend/local/local_store.h"
#include "test/support/auto_fixture.h"
#include "test/support/etcd_manager_files.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class AutoTrust : public AutoFixture {
 protected:
  size_t members_listed() {
    auto r = etcdctl(hosts_[0], {"member", "list", "-w", "json"});
    return etcdctl_answer(r.output).value("members", nlohmann::json::array()).size();
  }
  bool every_host_waits_for(const std::string& words) {
    auto records = host_records();
    return records.size() == hosts_.size() && std::all_of(records.begin(), records.end(), [&](const HostRecord& r) {
             return r.waiting_for.find(words) != std::string::npos;
           });
  }
  uint64_t sequence_of(const std::string& host) {
    for (const auto& r : host_records()) {
      if (r.name == host) return r.sequence;
    }
    return 0;
  }
};

// Seen in a trial: a spec of 0 members made the acting controller remove two healthy members, a
// garbled shared record froze a host (no heartbeat, its crashed etcd left down), and `auto status`
// called a store that was renamed away "Spec: none". Now: every host names what it refuses,
// removes nothing, writes its heartbeat and restarts its own member, and status fails loudly.
TEST_F(AutoTrust, ASharedRecordItCannotObeyIsNamedAndNeverActedOnWhileEachHostKeepsItsOwnMember) {
  // A heartbeat the others would take for a dead host is refused before anything starts.
  std::vector<std::string> args = {"auto", "--heartbeat", "90s"};
  for (const auto& f : auto_flags(hosts_[0])) args.push_back(f);
  auto slow = with_store(args);
  EXPECT_NE(slow.exit_code, 0) << slow.output;
  EXPECT_NE(slow.output.find("--heartbeat 90s is out of range: 1s to 45s"), std::string::npos) << slow.output;
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());

  // etcd-manager-ctl configure-cluster stores whatever it is given.
  write_spec_as_etcd_manager(store_, 0, release_.version);
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("memberCount 0 is outside 1-9"); },
                         "every host refusing the spec of 0 members"));
  std::this_thread::sleep_for(5s);  // five rounds of each controller
  EXPECT_EQ(members_listed(), 3u);
  auto status = with_store({"auto", "status"});
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("REFUSED by every controller: memberCount 0 is outside 1-9"), std::string::npos)
      << status.output;
  // Refused by name, and said once per host, not once per round.
  std::map<std::string, int> refusals;
  for (const auto& e : events()) {
    if (e.action == "wait" && e.reason.find("memberCount 0") != std::string::npos) ++refusals[e.host];
  }
  EXPECT_EQ(refusals.size(), 3u);
  for (const auto& [host, n] : refusals) EXPECT_EQ(n, 1) << host;
  write_spec_as_etcd_manager(store_, 3, "3.5");
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("etcdVersion \"3.5\" is no etcd release"); },
                         "every host refusing version 3.5"));

  // A plan that does not parse: each host still writes its heartbeat and restarts its own member.
  write_spec_as_etcd_manager(store_, 3, release_.version);
  write_file_atomic(store_ + "/" + kAutoPlanKey, "{\"format\": \"etcdadm-auto-plan/1\", \"members\": [", 0600, true);
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("etcdadm-auto/plan.json"); },
                         "every host naming the plan it cannot read"));
  const Host& h2 = hosts_[1];
  const std::string pid_file = h2.conf() + "/etcd.pid";
  const int pid = std::stoi(read_file(pid_file));
  const uint64_t sequence = sequence_of(h2.name);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  EXPECT_TRUE(eventually(30s, [&] {
    return path_exists(pid_file) && std::stoi(read_file(pid_file)) != pid && one_healthy_cluster(3);
  }, "the killed member started again by its controller"));
  EXPECT_TRUE(eventually(15s, [&] { return sequence_of(h2.name) > sequence; }, "h2's heartbeat"));
  EXPECT_EQ(members_listed(), 3u);

  // The store renamed away: status is an error, never "no spec".
  const std::string moved = store_ + ".moved";
  ASSERT_EQ(::rename(store_.c_str(), moved.c_str()), 0);
  status = with_store({"auto", "status"});
  EXPECT_NE(status.exit_code, 0) << status.output;
  EXPECT_NE(status.output.find("does not exist"), std::string::npos) << status.output;
  EXPECT_EQ(status.output.find("Spec:"), std::string::npos) << status.output;
  std::this_thread::sleep_for(3s);  // the controllers meanwhile: the store cannot be read
  // Nothing made the store's directory again meanwhile (a heartbeat into an empty new store).
  EXPECT_FALSE(path_exists(store_)) << run_process({"find", store_}).output;
  ASSERT_EQ(::rename(moved.c_str(), store_.c_str()), 0);
  EXPECT_EQ(members_listed(), 3u);

  // Fixed by a person: the controllers go back to work.
  LocalStore(store_).remove(kAutoPlanKey);
  EXPECT_TRUE(eventually(30s, [&] {
    int at_work = 0;
    for (const auto& r : host_records()) {
      at_work += r.waiting_for.find("the leader's controller acts") != std::string::npos ||
                 r.waiting_for.find("as the spec asks") != std::string::npos;
    }
    return at_work == 3;
  },
                         "the controllers back at work"));
  EXPECT_TRUE(one_healthy_cluster(3));
}

// Seen in a trial: a fourth controller started as --name m1 (its own dirs and ports) ran as a spare
// and the two rewrote m1's record in turn, no word in either log. The name is held by the host ID
// that claimed it: the second claimant does nothing, writes nothing, and says why.
TEST_F(AutoTrust, ASecondHostUnderATakenNameIsRefusedAndWritesNothing) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());
  LocalStore store(store_);
  const auto held = parse_host_record(store.read_small(host_record_key("m1")), "m1");
  ASSERT_TRUE(is_host_id(held.host_id)) << held.host_id;

  Host impostor;
  impostor.name = "m1";
  impostor.root = dir_ / "impostor";
  impostor.client_port = free_port();
  impostor.peer_port = free_port();
  hosts_.push_back(impostor);
  copy_ca(hosts_[0], hosts_.back());
  start_auto(hosts_.back(), {}, "impostor");
  EXPECT_TRUE(eventually(30s, [&] {
    for (const auto& e : events()) {
      if (e.host == "m1" && e.action == "wait" && e.reason.find("another host runs as m1 (host ID " + held.host_id) == 0)
        return true;
    }
    return false;
  }, "the second m1 saying it is refused"));
  // Ten rounds of both: the record stays the first m1's, and the first m1 never lost it.
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(1s);
    const auto now = parse_host_record(store.read_small(host_record_key("m1")), "m1");
    EXPECT_EQ(now.host_id, held.host_id);
    EXPECT_EQ(now.peer_url, held.peer_url);
  }
  EXPECT_EQ(read_file(log_of(hosts_[0])).find("another writer replaced"), std::string::npos);
  EXPECT_TRUE(is_empty_data_dir(hosts_.back().data()) || !path_exists(hosts_.back().data()));
  autos_.at("impostor").stop(5000ms);
  EXPECT_TRUE(one_healthy_cluster(3));
}

// Write access to the store is not command of the cluster: the records that make the controllers
// act carry an authenticator only holders of the cluster CA's key can make (controller/
// record_auth.h). Each kind a store writer could forge or replay here is refused by every host,
// named in an event, and the cluster stays as it was: a spec changed beside seed, an old spec
// written back, a restore plan, a queued restore without an approval or with a forged one, a host
// record, a maintenance record (a lease, a member entered as corrupt).
TEST_F(AutoTrust, ForgedOrReplayedRecordsAreRefusedAndTheClusterStaysAsItWas) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());
  LocalStore store(store_);
  auto member_ids = [&] {
    std::set<uint64_t> ids;
    auto r = etcdctl(hosts_[0], {"member", "list", "-w", "json"});
    for (const auto& m : etcdctl_answer(r.output).value("members", nlohmann::json::array())) ids.insert(m["ID"].get<uint64_t>());
    return ids;
  };
  const auto members_before = member_ids();
  ASSERT_EQ(members_before.size(), 3u);
  // Each host's fence against an older plan written back: the sequence of the plan it was made by.
  const uint64_t creation = parse_cluster_plan(store.read_small(kAutoPlanKey), "plan").sequence;
  for (const auto& h : hosts_) {
    EXPECT_EQ(nlohmann::json::parse(read_file(h.conf() + "/etcdadm-auto.json"))["planSequence"], creation) << h.name;
  }
  auto refused_by_all = [&](const std::string& words) {
    std::set<std::string> hosts;
    for (const auto& e : events()) {
      if (e.action == "ignore-record" && e.reason.find(words) != std::string::npos) hosts.insert(e.host);
    }
    return hosts.size() == hosts_.size();
  };

  // The spec changed beside seed (etcd-manager-ctl configure-cluster, a store writer): not obeyed.
  write_spec_as_etcd_manager(store_, 1, release_.version);
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("someone other than seed changed it"); },
                         "every host refusing the spec seed did not sign"));
  auto status = with_store({"auto", "status"});
  EXPECT_NE(status.output.find("REFUSED by every controller: control/etcd-cluster-spec asks for 1 members"),
            std::string::npos)
      << status.output;
  std::this_thread::sleep_for(4s);
  EXPECT_EQ(member_ids(), members_before);
  write_spec_as_etcd_manager(store_, 3, release_.version);

  // An old signed spec written back: refused as older than the generation the hosts obeyed.
  const std::string generation_one = store.read_small(kAutoSpecKey);
  seed(3, {"--replace-after", "5m"});
  EXPECT_TRUE(eventually(30s, [&] {
    auto records = host_records();
    return records.size() == 3 && std::all_of(records.begin(), records.end(), [](const HostRecord& r) {
             return r.spec_generation == 2;
           });
  }, "every host obeying generation 2"));
  store.write_small(kAutoSpecKey, generation_one, /*overwrite=*/true);
  EXPECT_TRUE(eventually(30s, [&] { return every_host_waits_for("is generation 1, older than generation 2"); },
                         "every host refusing the replayed spec"));
  seed(3, {"--replace-after", "10m"});

  // A restore plan with the authenticator of the plan it replaces: altered, so forged.
  auto plan = nlohmann::json::parse(store.read_small(kAutoPlanKey));
  ASSERT_TRUE(plan.contains("auth")) << plan.dump();
  plan["sequence"] = plan["sequence"].get<uint64_t>() + 1;
  plan["purpose"] = "restore";
  plan["backup"] = "2026-01-01T00:00:00Z-000001";
  plan["commandKey"] = "control/2026-01-01T00:00:00Z-000000/_command.json";
  store.write_small(kAutoPlanKey, plan.dump(2), /*overwrite=*/true);
  EXPECT_TRUE(eventually(30s, [&] { return refused_by_all("plan.json carries an authenticator that none"); },
                         "every host refusing the forged plan"));

  // A restore queued as etcd-manager-ctl queues it: not carried out without an approval, nor with
  // an approval a store writer wrote.
  const std::string dir = queue_restore_as_etcd_manager(store_, "2026-01-01T00:00:00Z-000001", 3, release_.version);
  EXPECT_TRUE(eventually(30s, [&] { return refused_by_all("has no approval signed by the cluster's CA"); },
                         "every host refusing the unapproved restore"));
  const std::string command_key = "control/" + dir + "/_command.json";
  store.write_small(restore_approval_key(command_key),
                    restore_approval_json({command_key, "2026-01-01T00:00:00Z-000001", std::string(64, '0'), {3, release_.version}, "x@y", 1}),
                    /*overwrite=*/true);
  EXPECT_TRUE(eventually(30s, [&] { return refused_by_all("approvals/" + dir + ".json carries no authenticator"); },
                         "every host refusing the approval no CA holder wrote"));

  // A host record no controller wrote: not a host (never a spare to add, never live).
  HostRecord stranger;
  stranger.name = "m9";
  stranger.peer_url = "https://127.0.0.99:2380";
  stranger.client_url = "https://127.0.0.99:2379";
  stranger.heartbeat_unix = std::time(nullptr);
  stranger.sequence = 1;
  store.write_small(host_record_key("m9"), host_record_json(stranger), /*overwrite=*/true);
  EXPECT_TRUE(eventually(30s, [&] {
    return read_file(log_of(hosts_[0])).find("hosts/m9.json carries no authenticator") != std::string::npos;
  }, "the acting host refusing the stranger's record"));

  // A maintenance record no controller wrote: a lease that would hold every defrag for 900 s, and
  // m2's member entered as found corrupt (its host would set its data aside). Taken as empty: the
  // scheduled defrag runs on every member, and m2 keeps its member.
  const auto m2_status = etcdctl_answer(etcdctl(hosts_[1], {"endpoint", "status", "-w", "json"}).output);
  const uint64_t m2_id = m2_status["Status"]["header"]["member_id"].get<uint64_t>();
  MaintenanceRecord forged;
  forged.in_progress = MaintenanceLease{"defrag", "m9", std::time(nullptr) + 600};
  forged.corrupt[m2_id] = CorruptMember{std::time(nullptr), "m9", 1, 1, 2};
  forged.sequence = 99;
  store.write_small(kAutoMaintenanceKey, maintenance_record_json(forged), /*overwrite=*/true);
  seed(3, {"--defrag-schedule", "@hourly"});
  EXPECT_TRUE(eventually(90s, [&] {
    const std::string text = store.read_small(kAutoMaintenanceKey);
    const auto m = parse_maintenance_record(text, "maintenance");
    return text.find("\"auth\"") != std::string::npos && m.defrags.size() == 3 && !m.in_progress && m.corrupt.empty();
  }, "every member defragmented on schedule over the forged lease")) << logs();
  // The acting host wrote over the forged record, so it read it (a conditional write over the
  // record read); the others may have read only its own.
  bool ignored = false;
  for (const auto& h : hosts_) {
    ignored = ignored || read_file(log_of(h)).find("ignoring the maintenance record: etcdadm-auto/maintenance.json "
                                                   "carries no authenticator") != std::string::npos;
  }
  EXPECT_TRUE(ignored) << logs();

  std::this_thread::sleep_for(5s);
  EXPECT_EQ(member_ids(), members_before) << "no member restored, added or removed";
  EXPECT_TRUE(one_healthy_cluster(3));
  EXPECT_EQ(read_file(log_of(hosts_[0])).find("restore-member"), std::string::npos);
}

// Found in review: a restore whose backup cannot be fetched stopped every member first (their data
// set aside), then fetched the backup again every round. The backup is fetched and verified while
// the old member still runs, and a failed attempt is tried again after 30 s, then doubling. And a
// store writer who replaces an approved backup (its data and metadata, another snapshot's) gets
// nothing restored: the approval binds the db its approver verified.
TEST_F(AutoTrust, ARestoreOfABackupReplacedAfterItsApprovalCostsTheClusterNothingAndIsRetriedWithBackoff) {
  ASSERT_NO_FATAL_FAILURE(bootstrap_three());
  ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/kept", "v"}).exit_code, 0);
  auto conn = connection({&hosts_[0]});
  auto backup = [&] {
    auto saved = etcdadm({"backup", "save", "--store", store_, "--endpoints", hosts_[0].client_url(), "--cacert",
                          conn.cacert, "--cert", conn.cert, "--key", conn.key});
    EXPECT_EQ(saved.exit_code, 0) << saved.output;
  };
  backup();
  ASSERT_EQ(etcdctl(hosts_[0], {"put", "/registry/only-in-the-second", "v"}).exit_code, 0);
  backup();
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(store_))
    if (e.path().filename().string().rfind("20", 0) == 0) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names.size(), 2u);
  const std::string approved = names[0], other = names[1];

  // Approved while the controllers are frozen, then replaced before they read the approval.
  for (const auto& h : hosts_) ::kill(autos_[h.name].pid(), SIGSTOP);
  queue_restore_as_etcd_manager(store_, approved, 3, release_.version);
  auto approval = etcdadm({"auto", "approve-restore", "--store", store_, "--certs-dir", hosts_[0].certs()});
  EXPECT_EQ(approval.exit_code, 0) << approval.output;
  EXPECT_NE(approval.output.find("(verified now)"), std::string::npos) << approval.output;
  EXPECT_NE(approval.output.find("is not attested"), std::string::npos)
      << "a person's backup: the approver is told to make sure of it\n" << approval.output;
  for (const auto& e : std::filesystem::directory_iterator(store_ + "/" + approved)) std::filesystem::remove(e.path());
  for (const auto& e : std::filesystem::directory_iterator(store_ + "/" + other))
    std::filesystem::copy_file(e.path(), store_ + "/" + approved + "/" + e.path().filename().string());
  for (const auto& h : hosts_) ::kill(autos_[h.name].pid(), SIGCONT);

  auto attempts = [&](const Host& h) {
    const std::string log = read_file(log_of(h));
    size_t n = 0;
    for (size_t at = log.find("restore-member (starting)"); at != std::string::npos;
         at = log.find("restore-member (starting)", at + 1))
      ++n;
    return n;
  };
  ASSERT_TRUE(eventually(60s, [&] {
    return std::all_of(hosts_.begin(), hosts_.end(), [&](const Host& h) { return attempts(h) >= 1; });
  }, "every host trying the restore"));
  std::this_thread::sleep_for(20s);  // about 20 rounds: without the backoff, 20 fetches per host
  for (const auto& h : hosts_) {
    EXPECT_LE(attempts(h), 2u) << h.name << "\n" << read_file(log_of(h));
    EXPECT_NE(read_file(log_of(h)).find("the backup was replaced after the restore was approved or planned"),
              std::string::npos)
        << h.name;
  }
  EXPECT_TRUE(one_healthy_cluster(3)) << "nothing was stopped for a backup that is not the one approved";
  auto kept = etcdctl(hosts_[1], {"get", "/registry/kept", "--print-value-only"});
  EXPECT_NE(kept.output.find("v"), std::string::npos) << kept.output;
  for (const auto& h : hosts_) {
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(h.data()).parent_path()))
      EXPECT_EQ(e.path().filename().string().find(".set-aside-"), std::string::npos) << e.path();
  }
  // Approving a backup that is not there is refused at once.
  ASSERT_EQ(etcdadm({"etcd-manager", "delete-command", approved, "--store", store_}).exit_code, 0);
  queue_restore_as_etcd_manager(store_, "2026-01-01T00:00:00Z-000001", 3, release_.version);
  auto missing = etcdadm({"auto", "approve-restore", "--store", store_, "--certs-dir", hosts_[0].certs()});
  EXPECT_NE(missing.exit_code, 0) << missing.output;
  EXPECT_NE(missing.output.find("2026-01-01T00:00:00Z-000001"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace etcdadm::test
