// judge_hashes (etcdadm/maintenance/consistency.h): which voters' data differs, from a survey of
// their HashKV at one revision. Known answers for each kind of verdict.
#include "etcdadm/maintenance/consistency.h"

#include <gtest/gtest.h>

namespace etcdadm {
namespace {

HashSurvey survey(std::initializer_list<uint32_t> hashes, int64_t compact_revision = 10) {
  HashSurvey s;
  s.revision = 500;
  uint64_t id = 0;
  for (uint32_t h : hashes) {
    MemberHash m;
    m.member_id = ++id;
    m.label = "m" + std::to_string(id) + " (" + std::to_string(id) + ")";
    m.answered = true;
    m.hash = h;
    m.compact_revision = compact_revision;
    s.members.push_back(m);
  }
  return s;
}

using Kind = HashVerdict::Kind;

TEST(HashVerdict, AMinorityThatDiffersFromAnAgreeingMajorityIsNamed) {
  HashVerdict agree = judge_hashes(survey({7, 7, 7}));
  EXPECT_EQ(agree.kind, Kind::kAgree);
  EXPECT_EQ(agree.majority_hash, 7u);
  EXPECT_EQ(agree.explanation, "every voter's HashKV at revision 500 is 7");

  HashVerdict one = judge_hashes(survey({7, 9, 7}));
  EXPECT_EQ(one.kind, Kind::kMinorityDiffers);
  EXPECT_EQ(one.majority_hash, 7u);
  EXPECT_EQ(one.differing, std::vector<uint64_t>{2});
  EXPECT_EQ(one.explanation, "2 of 3 voters agree on HashKV 7 at revision 500; m2 (2) (9) differs");

  // Five voters, two differing (each its own way): three agree, a majority.
  HashVerdict two = judge_hashes(survey({1, 2, 1, 3, 1}));
  EXPECT_EQ(two.kind, Kind::kMinorityDiffers);
  EXPECT_EQ(two.differing, (std::vector<uint64_t>{2, 4}));
  // A single member agrees with itself.
  EXPECT_EQ(judge_hashes(survey({5})).kind, Kind::kAgree);
}

TEST(HashVerdict, WithoutAMajorityNobodyIsBlamed) {
  for (auto s : {survey({1, 2, 3}), survey({1, 1, 2, 2}), survey({1, 2})}) {
    HashVerdict v = judge_hashes(s);
    EXPECT_EQ(v.kind, Kind::kNoMajority) << v.explanation;
    EXPECT_TRUE(v.differing.empty());
    EXPECT_NE(v.explanation.find("cannot be told"), std::string::npos) << v.explanation;
  }
}

TEST(HashVerdict, AMissingAnswerOrAnotherCompactionRevisionIsIncomplete) {
  HashSurvey missing = survey({7, 9, 7});
  missing.members[1].answered = false;
  missing.members[1].error = "deadline exceeded";
  HashVerdict v = judge_hashes(missing);
  EXPECT_EQ(v.kind, Kind::kIncomplete);
  EXPECT_NE(v.explanation.find("m2 (2): no answer (deadline exceeded)"), std::string::npos) << v.explanation;

  // A compaction being applied: one member has it, the others not yet; hashes are not comparable.
  HashSurvey compacting = survey({7, 9, 7});
  compacting.members[1].compact_revision = 11;
  EXPECT_EQ(judge_hashes(compacting).kind, Kind::kIncomplete);
  EXPECT_EQ(judge_hashes(HashSurvey{}).kind, Kind::kIncomplete);
}

}  // namespace
}  // namespace etcdadm
