#include "render/certs.h"

#include <fmt/printf.h>

#include "render/json.h"

namespace etcdadm::render {

nlohmann::json cert_expiration_json(const std::vector<CertInfo>& certs, SystemTime now) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& ci : certs) {
    arr.push_back({{"name", ci.name},
                   {"subject", ci.subject},
                   {"serial", ci.serial_hex},
                   {"notAfter", time_json(ci.not_after)},
                   {"residualSeconds", std::chrono::duration_cast<std::chrono::seconds>(ci.not_after - now).count()},
                   {"sans", ci.sans},
                   {"ca", ci.is_ca},
                   {"keyAlgorithm", ci.key_algorithm}});
  }
  return arr;
}

std::string cert_expiration_text(const std::vector<CertInfo>& certs, SystemTime now) {
  std::string out =
      fmt::sprintf("%-24s  %-22s  %-10s  %-10s  %s\n", "CERTIFICATE", "EXPIRES", "RESIDUAL", "KEY", "SUBJECT");
  for (const auto& ci : certs) {
    auto left = std::chrono::duration_cast<std::chrono::seconds>(ci.not_after - now);
    std::string residual = left.count() <= 0 ? "EXPIRED" : format_duration_short(left);
    out += fmt::sprintf("%-24s  %-22s  %-10s  %-10s  %s\n", ci.name, format_rfc3339_seconds(ci.not_after), residual,
                        ci.key_algorithm, ci.subject);
  }
  return out;
}

std::string certs_renewed_text(const std::string& certs_dir, const std::vector<std::string>& renewed) {
  std::string out;
  for (const auto& r : renewed) out += "renewed " + certs_dir + "/" + r + ".crt\n";
  return out;
}

std::string certs_restart_text(const std::optional<std::string>& restarted_member) {
  if (restarted_member) {
    return "restarted member " + *restarted_member + ": it serves the renewed certificates and is healthy\n" +
           "renew and restart the other members one at a time, so the cluster keeps quorum.\n";
  }
  return "etcd reads its certificates at start: restart the members one at a time (wait for each to be healthy, or "
         "use --restart) so the cluster keeps quorum.\n";
}

}  // namespace etcdadm::render
