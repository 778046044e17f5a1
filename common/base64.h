// Base64 (RFC 4648 section 4, with padding) and base64url (section 5, without padding, as JWTs
// use it).
#pragma once

#include <string>
#include <string_view>

namespace etcdadm {

std::string base64(std::string_view data);
std::string base64url(std::string_view data);

}  // namespace etcdadm
