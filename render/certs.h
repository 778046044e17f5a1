// The member certificates: `certs check-expiration` (each certificate of a certs dir, when it
// expires and how long is left) and `certs renew` (which were re-issued, and what must restart).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/timefmt.h"
#include "etcdadm/pki.h"

namespace etcdadm::render {

// What is left is counted from `now`.
nlohmann::json cert_expiration_json(const std::vector<CertInfo>& certs, SystemTime now);
std::string cert_expiration_text(const std::vector<CertInfo>& certs, SystemTime now);

// `renewed`: the stems renew_certs re-issued in `certs_dir`.
std::string certs_renewed_text(const std::string& certs_dir, const std::vector<std::string>& renewed);
// After the renewal: `restarted_member`, the member --restart restarted (nullopt: none was, so the
// person must restart them).
std::string certs_restart_text(const std::optional<std::string>& restarted_member);

}  // namespace etcdadm::render
