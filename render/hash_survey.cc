#include "render/hash_survey.h"

#include <fmt/printf.h>

#include <algorithm>

#include "common/text.h"

namespace etcdadm::render {

namespace {

bool differs(const HashVerdict& verdict, uint64_t id) {
  return std::find(verdict.differing.begin(), verdict.differing.end(), id) != verdict.differing.end();
}

}  // namespace

nlohmann::json hash_survey_json(const HashSurvey& survey, const HashVerdict& verdict) {
  nlohmann::json members = nlohmann::json::array();
  for (const auto& h : survey.members) {
    members.push_back({{"memberId", id_hex(h.member_id)},
                       {"member", h.label},
                       {"hash", h.answered ? nlohmann::json(h.hash) : nlohmann::json(nullptr)},
                       {"compactRevision", h.compact_revision},
                       {"error", h.error},
                       {"differs", differs(verdict, h.member_id)}});
  }
  static const char* const kKinds[] = {"agree", "minority-differs", "no-majority", "incomplete"};
  return {{"revision", survey.revision},
          {"verdict", kKinds[static_cast<int>(verdict.kind)]},
          {"explanation", verdict.explanation},
          {"members", members}};
}

std::string hash_survey_text(const HashSurvey& survey, const HashVerdict& verdict) {
  std::string out = fmt::sprintf("%-28s  %-12s  %s\n", "MEMBER", "HASHKV", "COMPACTED AT");
  for (const auto& h : survey.members) {
    out += fmt::sprintf("%-28s  %-12s  %s%s\n", h.label, h.answered ? std::to_string(h.hash) : "-",
                        h.answered ? std::to_string(h.compact_revision) : h.error,
                        differs(verdict, h.member_id) ? "   <- differs" : "");
  }
  return out + verdict.explanation + "\n";
}

}  // namespace etcdadm::render
