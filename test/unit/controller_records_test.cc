// The controllers' records (controller/records.h) round trip, and hostile input is refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "controller/records.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

constexpr int64_t kMiB = 1 << 20;

TEST(ControllerRecords, RoundTripAndHostileInputIsRefusedByName) {
  ClusterPlan p = plan_of({"h1", "h2"});
  p.written_by = "h1";
  p.written_unix = 1800000000;
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(p), "plan"), p);
  ClusterPlan r = p;
  r.purpose = "restore";
  r.backup = "2027-01-15T07:00:00Z-000001";
  r.command_key = "control/2027-01-15T08:00:00Z-000000/_command.json";
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(r), "plan"), r);
  r.kubernetes_revision_bump = 1000000000;
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(r), "plan"), r);
  r.backup_db_sha256 = std::string(64, 'c');
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(r), "plan"), r);
  {
    auto bad = nlohmann::json::parse(cluster_plan_json(r));
    bad["backupDbSha256"] = "C" + std::string(63, 'c');
    EXPECT_THROW(parse_cluster_plan(bad.dump(), "plan"), Error) << "a digest in capitals is no digest it wrote";
  }
  {
    ClusterPlan a = r;
    a.purpose = "auto-restore";
    a.command_key.clear();
    a.to_revision = 7345;
    a.kubernetes_revision_bump = 23450;
    const std::string aj = cluster_plan_json(a);
    EXPECT_EQ(aj.find("\"command\""), std::string::npos) << aj;
    EXPECT_EQ(parse_cluster_plan(aj, "plan"), a);
    auto no_target = nlohmann::json::parse(aj);
    no_target.erase("toRevision");
    EXPECT_THROW(parse_cluster_plan(no_target.dump(), "plan"), Error);
    no_target["toRevision"] = -1;
    EXPECT_THROW(parse_cluster_plan(no_target.dump(), "plan"), Error);
  }
  {
    // `etcdadm auto adopt`'s plan: the cluster it names is required, and kept.
    ClusterPlan a = p;
    a.purpose = "adopt";
    a.adopts_cluster_id = 0x8e9e05c52164694d;
    const std::string aj = cluster_plan_json(a);
    EXPECT_NE(aj.find("\"adoptsClusterID\": 10276657743932975437"), std::string::npos) << aj;
    EXPECT_EQ(parse_cluster_plan(aj, "plan"), a);
    auto none = nlohmann::json::parse(aj);
    none["adoptsClusterID"] = 0;
    EXPECT_THROW(parse_cluster_plan(none.dump(), "plan"), Error);
    none.erase("adoptsClusterID");
    EXPECT_THROW(parse_cluster_plan(none.dump(), "plan"), Error);
  }
  const std::string rj = cluster_plan_json(r);
  // A restore plan written before the field existed: its hosts restored every keyspace as it was.
  {
    auto old_plan = nlohmann::json::parse(rj);
    old_plan.erase("kubernetesRevisionBump");
    EXPECT_EQ(parse_cluster_plan(old_plan.dump(), "plan").kubernetes_revision_bump, 0u);
  }
  HostRecord h = host("h3").record;
  h.sequence = 7;
  h.data = DataState::kMember;
  h.member_id = 0xdeadbeef;
  h.certs_expire_unix = 1830000000;
  h.ca_expires_unix = 2100000000;
  EXPECT_EQ(parse_host_record(host_record_json(h), "host"), h);
  h.host_id = new_host_id();
  EXPECT_TRUE(is_host_id(h.host_id)) << h.host_id;
  EXPECT_NE(h.host_id, new_host_id());
  EXPECT_EQ(parse_host_record(host_record_json(h), "host"), h);
  AutoSpec s{120, 5};
  EXPECT_EQ(parse_auto_spec(auto_spec_json(s), "spec"), s);

  auto corrupt = [](const std::function<void()>& f, const std::string& expected) {
    try {
      f();
      ADD_FAILURE() << "expected kCorrupt: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  std::string j = cluster_plan_json(p);
  corrupt([&] { parse_cluster_plan("{", "plan"); }, "plan is not JSON");
  for (const char* bad : {"-1", "1.5", "4611686018427387904", "\"1000\""}) {
    auto hostile = nlohmann::json::parse(rj);
    hostile["kubernetesRevisionBump"] = nlohmann::json::parse(bad);
    try {
      parse_cluster_plan(hostile.dump(), "plan");
      ADD_FAILURE() << "kubernetesRevisionBump " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt) << bad;
      EXPECT_NE(std::string(e.what()).find("kubernetesRevisionBump"), std::string::npos) << e.what();
    }
  }
  corrupt([&] { parse_cluster_plan(R"({"format":"etcdadm-auto-plan/2"})", "plan"); }, "not \"etcdadm-auto-plan/1\"");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("h2\""), 2, "../x"), "plan"); }, "no usable member name");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("https://10.0.0.2:2380"), 8, "http://"), "plan"); }, "no https:// URL");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("https://10.0.0.2:2380"), 21, "https://10.0.0.1:2380"), "plan"); }, "listed twice");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("\"sequence\": 1"), 13, "\"sequence\": -1"), "plan"); }, "not an integer in range");
  corrupt([&] { parse_cluster_plan(std::string(rj).replace(rj.find("control/"), 8, "../../"), "plan"); }, "not a command key");
  corrupt([&] { parse_cluster_plan(std::string(rj).replace(rj.find("2027-01-15T07"), 4, "a/.."), "plan"); }, "no backup name");
  corrupt([&] { parse_cluster_plan(std::string(j).replace(j.find("\"create\""), 8, "\"upgrade\""), "plan"); }, "not one this etcdadm knows");
  std::string hj = host_record_json(h);
  corrupt([&] { parse_host_record(std::string(hj).replace(hj.find("\"member\""), 8, "\"mine\""), "host"); }, "not empty, member, lost or unavailable");
  corrupt([&] { parse_host_record(std::string(hj).replace(hj.find(h.host_id), 32, std::string(32, 'G')), "host"); },
          "\"hostID\" is not 32 hex digits");
  corrupt([&] { parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","replaceAfterSeconds":0})", "spec"); }, "out of range");
  VersionTurn t{3, "h2", 0x8e9e05c52164694d, "3.6.11", "3.7.3", "h1", 1800000000};
  const std::string tj = version_turn_json(t);
  EXPECT_NE(tj.find("\"memberID\": \"8e9e05c52164694d\""), std::string::npos) << tj;
  EXPECT_EQ(parse_version_turn(tj, "turn"), t);
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("8e9e05"), 6, "zz9e05"), "turn"); }, "no member ID");
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("3.7.3"), 5, "three"), "turn"); }, "no etcd versions");
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("\"h2\""), 4, "\"../h\""), "turn"); }, "no usable member name");
  corrupt([&] { parse_version_turn(std::string(tj).replace(tj.find("turn/1"), 6, "turn/2"), "turn"); }, "not \"etcdadm-auto-version-turn/1\"");
}

TEST(ControllerRecords, EventKeysSortInTimeOrder) {
  AutoEvent a{1800000000000001, "h2", "plan-cluster", "", "", "done"};
  AutoEvent b{1800000000100000, "h1", "wait", "", "", "waiting"};
  EXPECT_EQ(auto_event_key(a), "etcdadm-auto/events/20270115T080000.000001Z-h2.json");
  EXPECT_LT(auto_event_key(a), auto_event_key(b));
  EXPECT_EQ(parse_auto_event(auto_event_json(a), "event").time_micros, a.time_micros);
}

TEST(ControllerRecords, ACaRotationRecordRoundTripsAndRefusesHostileInput) {
  CaRotationRecord r;
  r.id = "20261202T100000Z";
  r.old_ca_sha256 = std::string(64, 'a');
  r.new_ca_sha256 = std::string(64, 'b');
  r.sealed = "c2VhbGVk";
  r.started_by = "root@h1";
  r.started_unix = 1800000000;
  r.reason = "the CA expires";
  EXPECT_EQ(parse_ca_rotation(ca_rotation_json(r), "x"), r);
  auto refused = [](nlohmann::json j) {
    try {
      parse_ca_rotation(j.dump(), "x");
      return false;
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kCorrupt;
    }
  };
  const nlohmann::json good = nlohmann::json::parse(ca_rotation_json(r));
  for (const char* id : {"../../etc/x", "2026120210000Z", "20261202T10000aZ", ""}) {
    auto j = good;
    j["id"] = id;
    EXPECT_TRUE(refused(j)) << id;
  }
  auto j = good;
  j["newCaSha256"] = j["oldCaSha256"];
  EXPECT_TRUE(refused(j)) << "the same CA twice";
  j = good;
  j["oldCaSha256"] = "ABC";
  EXPECT_TRUE(refused(j));
  j = good;
  j["sealed"] = std::string(70000, 'A');
  EXPECT_TRUE(refused(j));
  j = good;
  j["format"] = "etcdadm-auto-ca-rotation/2";
  EXPECT_TRUE(refused(j));
  // Host records: the step is one of two words.
  HostRecord h = host("h1").record;
  h.ca_rotation_id = r.id;
  h.ca_rotation_step = "reissued";
  EXPECT_EQ(parse_host_record(host_record_json(h), "x"), h);
  auto hj = nlohmann::json::parse(host_record_json(h));
  hj["caRotationStep"] = "done";
  EXPECT_THROW(parse_host_record(hj.dump(), "x"), Error);
}

TEST(ControllerRecords, MaintenanceRecordAndSpecAdditionsRoundTripAndRefuseHostileInput) {
  MaintenanceRecord r;
  r.sequence = 9;
  r.defrags[0x8e9e05c52164694dULL] = MemberDefrag{1800000000, 52428800, 40960, 27};
  r.last_space_recovery = SpaceRecoveryRecord{1800000100, "h1", 1000, 5000, 4000, 2 * kMiB, 30 * kMiB, 24 * kMiB, true, "n"};
  r.in_progress = MaintenanceLease{"defrag", "h2", 1800000200};
  r.corrupt[0x2f2af311a04f72b2ULL] = CorruptMember{1800000300, "h1", 900, 4294967295u, 12, true};
  const std::string j = maintenance_record_json(r);
  EXPECT_NE(j.find("\"8e9e05c52164694d\""), std::string::npos) << j;
  EXPECT_EQ(parse_maintenance_record(j, "m"), r);
  EXPECT_EQ(parse_maintenance_record(R"({"format":"etcdadm-auto-maintenance/1"})", "m"), MaintenanceRecord{});
  auto corrupt = [](const std::string& text, const std::string& expected) {
    try {
      parse_maintenance_record(text, "m");
      ADD_FAILURE() << "expected kCorrupt: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","defrags":{"zz":{"unix":1}}})", "defrags.zz is no member ID");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","defrags":[]})", "\"defrags\" is not an object");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","inProgress":{"step":"defrag","host":"../x","sinceUnix":1}})",
          "no usable member name");
  corrupt(R"({"format":"etcdadm-auto-maintenance/2"})", "not \"etcdadm-auto-maintenance/1\"");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","corrupt":{"0":{"unix":1}}})", "corrupt.0 is no member ID");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","corrupt":{"2f":{"unix":1,"hash":4294967296}}})", "not an integer in range");
  corrupt(R"({"format":"etcdadm-auto-maintenance/1","corrupt":[]})", "\"corrupt\" is not an object");

  AutoSpec s;
  s.defrag_free_percent = 30;
  s.defrag_min_free_bytes = 1;
  s.defrag_schedule = "0 3 * * SUN";
  s.nospace_keep_revisions = 5;
  s.corrupt_check_seconds = 0;
  s.auto_restore = true;
  s.auto_restore_delay_seconds = 90;
  s.cert_renew_before_seconds = 0;
  s.ca_warn_before_seconds = 86400;
  EXPECT_EQ(parse_auto_spec(auto_spec_json(s), "spec"), s);
  EXPECT_FALSE(parse_auto_spec(R"({"format":"etcdadm-auto-spec/1"})", "spec").auto_restore) << "off unless turned on";
  EXPECT_EQ(parse_auto_spec(R"({"format":"etcdadm-auto-spec/1"})", "spec").corrupt_check_seconds, 300) << "absent: the default";
  try {
    parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","corruptCheckSeconds":604801})", "spec");
    ADD_FAILURE() << "a corrupt check interval over a week accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("corruptCheckSeconds"), std::string::npos) << e.what();
  }
  // A spec written before the additions: the defaults.
  EXPECT_EQ(parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","replaceAfterSeconds":600})", "spec"), AutoSpec{});
  try {
    parse_auto_spec(R"({"format":"etcdadm-auto-spec/1","defragSchedule":"every now and then"})", "spec");
    ADD_FAILURE() << "a schedule that does not parse";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorrupt);
  }
}

// What the controllers obey of etcd-manager's spec: known answers.
TEST(ControllerRecords, TheSpecsTheControllersObey) {
  EXPECT_EQ(cluster_spec_problem({1, "3.4.23"}), "");
  EXPECT_EQ(cluster_spec_problem({9, "v3.6.16"}), "");
  EXPECT_EQ(cluster_spec_problem({0, "3.4.23"}), "memberCount 0 is outside 1-9");
  EXPECT_EQ(cluster_spec_problem({10, "3.4.23"}), "memberCount 10 is outside 1-9");
  EXPECT_EQ(cluster_spec_problem({3, "3.5"}),
            "etcdVersion \"3.5\" is no etcd release (major.minor.patch, such as 3.5.17)");
  EXPECT_EQ(cluster_spec_problem({0, ""}),
            "memberCount 0 is outside 1-9; etcdVersion \"\" is no etcd release (major.minor.patch, such as 3.5.17)");
  for (const char* bad : {"3.5", "3", "latest", "3.6.0-rc.1", "3.5.17 ", "03.5.1", "3.5.17\n", "3..1"})
    EXPECT_FALSE(is_etcd_release(bad)) << bad;
  for (const char* good : {"3.5.17", "v3.7.3", "3.4.0", "10.0.0"}) EXPECT_TRUE(is_etcd_release(good)) << good;
  const std::vector<std::pair<int, int>> tolerance = {{0, 0}, {1, 0}, {2, 0}, {3, 1}, {4, 1}, {5, 2}, {7, 3}, {9, 4}};
  for (const auto& [n, f] : tolerance) EXPECT_EQ(fault_tolerance(n), f) << n;
  // A plan of more than 9 members, or of a version that is no release, does not parse.
  ClusterPlan p;
  p.cluster_token = "etcd-auto-1";
  p.etcd_version = "3.5.17";
  for (int i = 1; i <= 10; ++i)
    p.members.push_back({"h" + std::to_string(i), "https://10.0.0." + std::to_string(i) + ":2380",
                         "https://10.0.0." + std::to_string(i) + ":2379"});
  EXPECT_THROW(parse_cluster_plan(cluster_plan_json(p), "plan"), Error);
  p.members.pop_back();
  EXPECT_EQ(parse_cluster_plan(cluster_plan_json(p), "plan"), p);
  p.etcd_version = "3.5";
  EXPECT_THROW(parse_cluster_plan(cluster_plan_json(p), "plan"), Error);
}

// The etcd-manager spec is obeyed only as `etcdadm seed` signed it (its copy in spec.json), never
// from a generation older than one a host obeyed; --accept-unsigned-records obeys it as it is.
TEST(ControllerRecords, TheEtcdManagerSpecIsObeyedOnlyAsSeedSignedIt) {
  AutoSpec signed_spec;
  signed_spec.generation = 4;
  signed_spec.cluster_spec = EtcdManagerClusterSpec{3, "3.5.17"};
  const auto round = parse_auto_spec(auto_spec_json(signed_spec), "spec");
  EXPECT_EQ(round, signed_spec);
  EXPECT_EQ(parse_auto_spec(auto_spec_json(AutoSpec{}), "spec").cluster_spec, std::nullopt);

  EXPECT_EQ(spec_authority_problem({3, "3.5.17"}, signed_spec, false, 4), "");
  EXPECT_EQ(spec_authority_problem({3, "3.5.17"}, signed_spec, false, 0), "");
  const std::string changed = spec_authority_problem({1, "3.5.17"}, signed_spec, false, 4);
  EXPECT_NE(changed.find("asks for 1 members of etcd \"3.5.17\", the spec `etcdadm seed` signed for 3 members"),
            std::string::npos)
      << changed;
  EXPECT_NE(spec_authority_problem({3, "3.6.0"}, signed_spec, false, 4), "");
  const std::string replay = spec_authority_problem({3, "3.5.17"}, signed_spec, false, 5);
  EXPECT_NE(replay.find("generation 4, older than generation 5"), std::string::npos) << replay;
  const std::string none = spec_authority_problem({3, "3.5.17"}, std::nullopt, false, 0);
  EXPECT_NE(none.find("has no copy signed by the cluster's CA"), std::string::npos) << none;
  EXPECT_NE(spec_authority_problem({3, "3.5.17"}, AutoSpec{}, false, 0), "") << "a spec.json without the copy";
  EXPECT_EQ(spec_authority_problem({1, "3.5.17"}, std::nullopt, true, 9), "") << "unsigned records accepted";
}

TEST(ControllerRecords, ARestoreCommandIsCarriedOutOnlyWithItsOwnApproval) {
  EtcdManagerCommand cmd;
  cmd.key = "control/2026-12-05T23:00:00Z-000000/_command.json";
  cmd.restore_backup = EtcdManagerRestoreCommand{{3, "3.5.17"}, "2026-12-05T22:00:00Z-000001"};
  EXPECT_EQ(restore_approval_key(cmd.key), "etcdadm-auto/approvals/2026-12-05T23:00:00Z-000000.json");
  const RestoreApproval good{cmd.key, "2026-12-05T22:00:00Z-000001", std::string(64, 'd'), {3, "3.5.17"}, "ops@admin",
                             1796500000};
  EXPECT_EQ(parse_restore_approval(restore_approval_json(good), "approval"), good);
  EXPECT_EQ(restore_approval_problem(cmd, good), "");
  const std::string none = restore_approval_problem(cmd, std::nullopt);
  EXPECT_NE(none.find("has no approval signed by the cluster's CA"), std::string::npos) << none;
  EXPECT_NE(none.find("etcdadm auto approve-restore"), std::string::npos) << none;
  RestoreApproval other_backup = good, other_spec = good, other_command = good;
  other_backup.backup = "2026-12-01T00:00:00Z-000001";
  other_spec.into = {1, "3.5.17"};
  other_command.command_key = "control/2026-12-04T00:00:00Z-000000/_command.json";
  for (const auto& a : {other_backup, other_spec, other_command}) {
    const std::string why = restore_approval_problem(cmd, a);
    EXPECT_NE(why.find("not of the command queued"), std::string::npos) << why;
  }
  // One written before approvals bound the backup's db: the backup could have been replaced since.
  RestoreApproval no_digest = good;
  no_digest.backup_db_sha256.clear();
  const std::string unbound = restore_approval_problem(cmd, no_digest);
  EXPECT_NE(unbound.find("binds no digest of backup 2026-12-05T22:00:00Z-000001"), std::string::npos) << unbound;
  EXPECT_THROW(parse_restore_approval(R"({"format":"etcdadm-auto-approval/1","command":"x"})", "a"), Error);
}

}  // namespace
}  // namespace etcdadm
