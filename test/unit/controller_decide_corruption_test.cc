// Corruption (controller/decide_corruption.cc).
#include <gtest/gtest.h>

#include "controller/decide.h"
#include "test/support/controller_observations.h"

namespace etcdadm {
namespace {

using namespace decide_test;

// Corrupt members: a voter whose HashKV differs from an agreeing majority is removed (recorded
// first, no backup from it), one without a majority waits for a person, etcd's CORRUPT alarm waits
// for a comparison and is disarmed only after a replacement, and the removed member's host keeps
// its data aside.
Observation::HashCheck hashes_of(std::initializer_list<uint32_t> hashes) {
  Observation::HashCheck c;
  c.survey.revision = 900;
  uint64_t id = 0;
  for (uint32_t h : hashes) {
    ++id;
    c.survey.members.push_back(MemberHash{id, "h" + std::to_string(id) + " (" + std::to_string(id) + ")", true, h, 40, ""});
  }
  c.verdict = judge_hashes(c.survey);
  return c;
}

TEST(ControllerDecide, ACorruptMemberIsReplacedAndItsAlarmDisarmedOnlyAfterwards) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3")});
  o.hashes = hashes_of({5, 5, 6});
  Decision d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 3u);
  ASSERT_TRUE(d.corrupt);
  EXPECT_EQ(d.corrupt->revision, 900);
  EXPECT_EQ(d.corrupt->hash, 6u);
  EXPECT_EQ(d.corrupt->majority_hash, 5u);
  EXPECT_EQ(d.corrupt->host, "h1");
  EXPECT_NE(d.reason.find("member h3 (3) is corrupt: 2 of 3 voters agree on HashKV 5 at revision 900"), std::string::npos) << d.reason;
  EXPECT_EQ(d.command.rfind("etcdadm member remove h3 --endpoints https://10.0.0.1:2379", 0), 0u) << d.command;
  // Before NOSPACE, which waits for it.
  for (auto& m : o.cluster.info.members) m.errors = {"memberID:2 alarm:NOSPACE "};
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);

  // No majority: nothing is removed.
  o.hashes = hashes_of({5, 6, 7});
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("a person decides"), std::string::npos) << d.reason;
  EXPECT_NE(d.command.find("restore-backup"), std::string::npos) << d.command;

  // etcd's CORRUPT alarm, not compared yet: wait for the comparison; compared and all agreeing
  // with no member known corrupt: wait for a person; after a replacement: disarm.
  for (auto& m : o.cluster.info.members) m.errors = {"memberID:0 alarm:CORRUPT "};
  o.hashes.reset();
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("comparing the voters' HashKV"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 5, 5});
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("no member was found corrupt and replaced in the last hour"), std::string::npos) << d.reason;
  o.maintenance.corrupt[9] = CorruptMember{o.now_unix - 30, "h1", 800, 6, 5};  // removed: not listed any more
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kDisarmCorrupt) << d.reason;
  EXPECT_EQ(d.members, std::vector<uint64_t>{0});
  // A replacement that already excused an alarm, or one more than an hour old, excuses no other.
  o.maintenance.corrupt[9].alarm_settled = true;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.maintenance.corrupt[9].alarm_settled = false;
  o.maintenance.corrupt[9].unix = o.now_unix - kCorruptDisarmWindowSeconds - 1;
  EXPECT_EQ(decide(o, "t").step, Step::kWait);
  o.maintenance.corrupt[9].unix = o.now_unix - 30;
  // A minority under the alarm: replaced first.
  o.hashes = hashes_of({5, 6, 5});
  EXPECT_EQ(decide(o, "t").step, Step::kRemoveMember);
  // Two voters that differ: neither is a majority, nothing is removed.
  Observation two = acting({member(1, "h1"), member(2, "h2")});
  two.hashes = hashes_of({5, 6});
  EXPECT_EQ(decide(two, "t").step, Step::kWait) << "two voters: no majority either way";
}

// A voter etcd refused to start (its initial corruption check found its data differs from a
// peer's, without saying whose is damaged): replaced as corrupt once the other voters agree and are
// a majority, never when they disagree or too few are left; a host whose record is stale proves
// nothing. The refusing host starts it again only every 30 s. Both records carry it.
TEST(ControllerDecide, AMemberEtcdRefusedToStartIsReplacedAsCorruptOnlyWhenTheOthersAgree) {
  Observation o = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  o.hosts[2].record.member_id = 3;
  Decision d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("unhealthy: h3 (3)"), std::string::npos) << "without the refusal: the grace; " << d.reason;
  o.hosts[2].record.etcd_refused = kEtcdRefusedInconsistent;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("comparing the other voters' HashKV first"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 5});  // h1 and h2
  d = decide(o, "t");
  ASSERT_EQ(d.step, Step::kRemoveMember) << d.reason;
  EXPECT_EQ(d.member_id, 3u);
  ASSERT_TRUE(d.corrupt);
  EXPECT_TRUE(d.corrupt->refused_to_start);
  EXPECT_EQ(d.corrupt->hash, 0u);
  EXPECT_EQ(d.corrupt->majority_hash, 5u);
  EXPECT_EQ(d.corrupt->revision, 900);
  EXPECT_NE(d.reason.find("etcd refused to start member h3 (3) on h3"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("every voter's HashKV at revision 900 is 5"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 6});
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("the other voters do not agree either"), std::string::npos) << d.reason;
  o.hashes = hashes_of({5, 5});
  o.hosts[2].live = false;
  d = decide(o, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("unhealthy: h3 (3)"), std::string::npos) << "a stale record: the grace; " << d.reason;
  // Two of three refusing: the one left is no majority.
  Observation two_down = acting({member(1, "h1"), member(2, "h2", false), member(3, "h3", false)});
  for (int i : {1, 2}) {
    two_down.hosts[i].record.member_id = static_cast<uint64_t>(i + 1);
    two_down.hosts[i].record.etcd_refused = kEtcdRefusedInconsistent;
  }
  two_down.hashes = hashes_of({5});
  d = decide(two_down, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("the 1 voters that agree are no majority of 3"), std::string::npos) << d.reason;

  // The refusing host: started again only every kRefusedRestartSeconds.
  Observation host3 = acting({member(1, "h1"), member(2, "h2"), member(3, "h3", false)});
  host3.local.etcd_running = false;
  host3.local.etcd_refused = kEtcdRefusedInconsistent;
  host3.local.seconds_since_start = 10;
  d = decide(host3, "t");
  EXPECT_EQ(d.step, Step::kWait);
  EXPECT_NE(d.reason.find("started again every 30 s"), std::string::npos) << d.reason;
  host3.local.seconds_since_start = kRefusedRestartSeconds;
  EXPECT_EQ(decide(host3, "t").step, Step::kStartLocalMember);
  host3.local.etcd_refused.clear();
  host3.local.seconds_since_start = 1;
  EXPECT_EQ(decide(host3, "t").step, Step::kStartLocalMember) << "a stop that was no refusal";

  // Removed so: its host sets the data aside as corrupt, saying how it was found.
  Observation gone = acting({member(2, "h2"), member(3, "h3")});
  gone.local.member_id = 1;
  gone.maintenance.corrupt[1] = CorruptMember{gone.now_unix, "h2", 900, 0, 5, true};
  d = decide(gone, "t");
  ASSERT_EQ(d.step, Step::kForgetMember) << d.reason;
  EXPECT_EQ(d.set_aside, SetAside::kCorrupt);
  EXPECT_NE(d.reason.find("etcd refused to start it on data that differs from its peers', which agreed on HashKV 5 at revision 900"),
            std::string::npos) << d.reason;

  // The records: round trips, and only known words.
  MaintenanceRecord m;
  m.corrupt[3] = CorruptMember{1800000000, "h1", 900, 0, 5, true};
  EXPECT_EQ(parse_maintenance_record(maintenance_record_json(m), "x").corrupt, m.corrupt);
  HostRecord h = host("h3").record;
  h.etcd_refused = kEtcdRefusedInconsistent;
  EXPECT_EQ(parse_host_record(host_record_json(h), "x"), h);
  auto hj = nlohmann::json::parse(host_record_json(h));
  hj["etcdRefused"] = "bored";
  EXPECT_THROW(parse_host_record(hj.dump(), "x"), Error);
  hj.erase("etcdRefused");
  EXPECT_EQ(parse_host_record(hj.dump(), "x").etcd_refused, "") << "absent: none (older hosts)";
}

}  // namespace
}  // namespace etcdadm
