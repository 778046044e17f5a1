// Base64 (RFC 4648 section 4, with padding) and base64url (section 5, without padding, as JWTs
// use it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace etcdadm {

std::string base64(std::string_view data);
std::string base64url(std::string_view data);
// Standard alphabet without '=' padding (as age writes it).
std::string base64_unpadded(std::string_view data);
// Decodes standard-alphabet base64 without padding, strictly: any other character, padding, or
// unused bits that are not zero (a non-canonical encoding) give nullopt.
std::optional<std::string> base64_unpadded_decode(std::string_view text);

}  // namespace etcdadm
