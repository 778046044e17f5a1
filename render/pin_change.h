// `backup pin`: the audience (age recipients, passphrase, or none) this host now writes a store
// for, and the one it was pinned to before.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "store/audience.h"

namespace etcdadm::render {

nlohmann::json pin_change_json(const PinChange& change, const std::string& store_url);
std::string pin_change_text(const PinChange& change, const std::string& store_url);

}  // namespace etcdadm::render
