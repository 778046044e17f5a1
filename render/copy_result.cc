#include "render/copy_result.h"

#include "common/text.h"

namespace etcdadm::render {

nlohmann::json copy_result_json(const CopyResult& r, const std::string& from_url, const std::string& to_url) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& b : r.backups) list.push_back({{"backup", b.name}, {"copied", b.copied}, {"bytes", b.bytes}});
  return {{"from", from_url},
          {"to", to_url},
          {"backups", list},
          {"damaged", r.damaged},
          {"segmentsCopied", r.segments_copied},
          {"segmentsPresent", r.segments_present},
          {"bytes", r.bytes},
          {"seconds", r.seconds}};
}

std::string copy_result_text(const CopyResult& r, const std::string& to_url) {
  std::string out;
  for (const auto& b : r.backups) {
    out += (b.copied ? "copied  " : "present ") + b.name + (b.copied ? "  " + human_bytes(b.bytes) : "") + "\n";
  }
  out += std::to_string(r.backups.size()) + " backups in " + to_url + " (" + human_bytes(r.bytes) + " copied";
  if (r.segments_copied + r.segments_present > 0) {
    out += "; change log: " + std::to_string(r.segments_copied) + " segments copied, " +
           std::to_string(r.segments_present) + " present";
  }
  return out + ")\n";
}

}  // namespace etcdadm::render
