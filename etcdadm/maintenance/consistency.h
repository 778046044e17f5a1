// Whether the members hold the same data (`etcdadm hashkv --cluster`, and the controllers' check
// for corrupt members): every voter's HashKV at one revision all of them have, compared. A member
// whose hash differs from that of a majority that agrees is corrupt (its db was damaged on disk,
// or it applied something the others did not) and is to be replaced from the healthy ones; when
// no hash has a majority, nobody can tell which data is right, and nothing is done.
//
// etcd hashes the key bucket up to the revision from its compaction revision on, so hashes are
// comparable only at the same compaction revision: a survey taken while a compaction was being
// applied (members answer with different compaction revisions) is incomplete, and taken again.
// etcd 3.4 answers no HashKV at its compaction's revision (3.5+ answer from the compaction's
// record): the survey asks at the newest revision every voter serves, which is above it as soon
// as the cluster has taken a write since the compaction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "etcd/client_pool.h"
#include "etcdadm/lifecycle/local_member.h"

namespace etcdadm {

struct MemberHash {
  uint64_t member_id = 0;
  std::string label;  // member_label
  bool answered = false;
  uint32_t hash = 0;
  int64_t compact_revision = 0;
  std::string error;  // why it did not answer
};

struct HashSurvey {
  int64_t revision = 0;             // where every voter was asked
  std::vector<MemberHash> members;  // the voters, in the order of the member list
};

// Every voter of `info`'s HashKV at the lowest revision the voters' Status reported (each asked
// on its first client URL through `pool`, all at once). A voter that did not answer Status or
// HashKV is in the survey with its error. Learners are left out: they do not vote, and they are
// promoted only once caught up.
HashSurvey survey_hashes(EtcdClientPool& pool, const ClusterInfo& info);

struct HashVerdict {
  enum class Kind {
    kAgree,            // every voter answered with the same hash
    kMinorityDiffers,  // a majority of the voters agrees; `differing` do not
    kNoMajority,       // no hash is held by a majority of the voters: which data is right is unknown
    kIncomplete,       // a voter did not answer, or they answered at different compaction revisions
  };
  Kind kind = Kind::kIncomplete;
  uint32_t majority_hash = 0;
  std::vector<uint64_t> differing;  // kMinorityDiffers: the members whose hash is not the majority's
  std::string explanation;          // for people: each member's hash, or what was missing
};

// The rule, a pure function of the survey.
HashVerdict judge_hashes(const HashSurvey& survey);

}  // namespace etcdadm
