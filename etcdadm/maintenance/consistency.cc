#include "etcdadm/maintenance/consistency.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <map>

#include "common/error.h"
#include "etcdadm/quorum.h"

namespace etcdadm {

HashSurvey survey_hashes(EtcdClientPool& pool, const ClusterInfo& info) {
  HashSurvey survey;
  std::vector<const MemberInfo*> voters;
  for (const auto& m : info.members) {
    if (m.learner) continue;
    voters.push_back(&m);
    if (m.reachable && (survey.revision == 0 || m.revision < survey.revision)) survey.revision = m.revision;
  }
  // Asked side by side: HashKV walks each member's whole key bucket (seconds at 8 GiB), and the
  // answers are compared at one revision anyway. The pool is used on this thread only.
  std::vector<std::future<etcdserverpb::HashKVResponse>> asked(voters.size());
  for (size_t i = 0; i < voters.size(); ++i) {
    const MemberInfo* m = voters[i];
    if (!m->reachable || m->client_urls.empty()) continue;
    const std::string url = m->client_urls.front();
    EtcdClient* client = &pool.client(url);
    asked[i] = std::async(std::launch::async,
                          [client, url, revision = survey.revision] { return client->hash_kv(url, revision); });
  }
  for (size_t i = 0; i < voters.size(); ++i) {
    const MemberInfo* m = voters[i];
    MemberHash h;
    h.member_id = m->id;
    h.label = member_label(*m);
    if (!asked[i].valid()) {
      h.error = m->client_urls.empty() ? "not started" : "no Status: " + m->status_error;
    } else {
      try {
        const auto r = asked[i].get();
        h.answered = true;
        h.hash = r.hash();
        h.compact_revision = r.compact_revision();
      } catch (const Error& e) {
        h.error = e.what();
      }
    }
    survey.members.push_back(std::move(h));
  }
  return survey;
}

HashVerdict judge_hashes(const HashSurvey& survey) {
  HashVerdict v;
  std::string hashes;
  for (const auto& m : survey.members) {
    hashes += (hashes.empty() ? "" : ", ") + m.label + ": " +
              (m.answered ? std::to_string(m.hash) : "no answer (" + m.error + ")");
  }
  const std::string at = " at revision " + std::to_string(survey.revision);
  if (survey.members.empty()) {
    v.explanation = "no voter to compare";
    return v;
  }
  for (const auto& m : survey.members) {
    if (!m.answered) {
      v.explanation = "not every voter answered HashKV" + at + " (" + hashes + "): compared again later";
      return v;
    }
    if (m.compact_revision != survey.members.front().compact_revision) {
      v.explanation =
          "the voters answered at different compaction revisions (a compaction was being applied): compared again "
          "later";
      return v;
    }
  }
  std::map<uint32_t, std::vector<uint64_t>> by_hash;
  for (const auto& m : survey.members) by_hash[m.hash].push_back(m.member_id);
  const size_t quorum = survey.members.size() / 2 + 1;
  auto majority =
      std::find_if(by_hash.begin(), by_hash.end(), [&](const auto& e) { return e.second.size() >= quorum; });
  if (by_hash.size() == 1) {
    v.kind = HashVerdict::Kind::kAgree;
    v.majority_hash = by_hash.begin()->first;
    v.explanation = "every voter's HashKV" + at + " is " + std::to_string(v.majority_hash);
    return v;
  }
  if (majority == by_hash.end()) {
    v.kind = HashVerdict::Kind::kNoMajority;
    v.explanation = "no HashKV" + at + " is held by a majority of the " + std::to_string(survey.members.size()) +
                    " voters (" + hashes + "): which data is right cannot be told";
    return v;
  }
  v.kind = HashVerdict::Kind::kMinorityDiffers;
  v.majority_hash = majority->first;
  std::string differing;
  for (const auto& m : survey.members) {
    if (m.hash == v.majority_hash) continue;
    v.differing.push_back(m.member_id);
    differing += (differing.empty() ? "" : ", ") + m.label + " (" + std::to_string(m.hash) + ")";
  }
  v.explanation =
      fmt::format("{} of {} voters agree on HashKV {}{}; {} differ{}", majority->second.size(), survey.members.size(),
                  v.majority_hash, at, differing, v.differing.size() == 1 ? "s" : "");
  return v;
}

}  // namespace etcdadm
