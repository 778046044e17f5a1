#include "render/pin_change.h"

namespace etcdadm::render {

nlohmann::json pin_change_json(const PinChange& change, const std::string& store_url) {
  nlohmann::json j = {{"store", store_url}, {"keyId", change.after.key_id}, {"recipients", change.after.labels}};
  if (change.before) j["before"] = {{"keyId", change.before->key_id}, {"recipients", change.before->labels}};
  return j;
}

std::string pin_change_text(const PinChange& change, const std::string& store_url) {
  std::string out = "This host writes into " + store_url + " for " + change.after.describe();
  if (change.before && !(*change.before == change.after)) out += " (was " + change.before->describe() + ")";
  return out + "\n";
}

}  // namespace etcdadm::render
