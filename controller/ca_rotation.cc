#include "controller/ca_rotation.h"

#include <openssl/x509.h>

#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/openssl_ptr.h"
#include "common/sha256.h"
#include "common/timefmt.h"
#include "store/blob_capabilities.h"

namespace etcdadm {

using json = nlohmann::json;

namespace {

std::string fingerprint_of(const std::string& pem) { return to_hex(sha256_of(pem.data(), pem.size())); }

std::string file_fingerprint(const std::string& path) { return path_exists(path) ? ca_fingerprint(path) : ""; }

std::string restart_marker(const CaRotationRecord& r, const std::string& config_dir) {
  return config_dir + "/ca-rotation-" + r.id + ".restart";
}

// "20261202T104500Z"
std::string rotation_id(int64_t now_unix) {
  std::string t = format_rfc3339_seconds(SystemTime(std::chrono::seconds(now_unix)));  // 2026-12-02T10:45:00Z
  std::string id;
  for (char c : t) {
    if (c != '-' && c != ':') id += c;
  }
  return id;
}

}  // namespace

std::string ca_fingerprint(const std::string& ca_cert_path) { return fingerprint_of(read_file(ca_cert_path)); }

CaRotationRecord new_ca_rotation(const std::string& certs_dir, const std::string& started_by, const std::string& reason,
                                 int64_t now_unix) {
  RotationCa ca = make_rotation_ca(certs_dir);
  CaRotationRecord r;
  r.id = rotation_id(now_unix);
  r.old_ca_sha256 = file_fingerprint(certs_dir + "/ca.crt");
  r.new_ca_sha256 = fingerprint_of(ca.cert_pem);
  r.started_by = started_by;
  r.started_unix = now_unix;
  r.reason = reason;
  const std::string plain = json{{"cert", ca.cert_pem}, {"key", ca.key_pem}, {"cross", ca.cross_pem}}.dump();
  r.sealed = base64_unpadded(seal_for_ca_holders(certs_dir + "/ca.key", r.seal_context(), plain));
  return r;
}

std::optional<CaRotationRecord> read_ca_rotation(BlobStore& store) {
  auto& conditional = *capability<ConditionalWrites>(store);
  const auto read = conditional.read_versioned(kAutoCaRotationKey, 1 << 20);
  if (!read) return std::nullopt;
  return parse_ca_rotation(read->contents, store.url() + "/" + kAutoCaRotationKey);
}

std::optional<CaRotationRecord> write_new_ca_rotation(BlobStore& store, const CaRotationRecord& rotation) {
  auto& conditional = *capability<ConditionalWrites>(store);
  const auto read = conditional.read_versioned(kAutoCaRotationKey, 1 << 20);
  if (read) {
    CaRotationRecord current = parse_ca_rotation(read->contents, store.url() + "/" + kAutoCaRotationKey);
    if (current.completed_unix == 0) return current;
  }
  if (!conditional.write_if(kAutoCaRotationKey, ca_rotation_json(rotation), read ? read->version : "")) {
    auto now = read_ca_rotation(store);
    if (now && *now == rotation) return std::nullopt;  // ours: the answer to the write was lost
    if (now) return now;
    throw Error(ErrorKind::kUnavailable, "the CA rotation record changed while it was written: try again");
  }
  return std::nullopt;
}

bool complete_ca_rotation(BlobStore& store, const CaRotationRecord& rotation, int64_t now_unix) {
  auto& conditional = *capability<ConditionalWrites>(store);
  const auto read = conditional.read_versioned(kAutoCaRotationKey, 1 << 20);
  if (!read) return false;
  CaRotationRecord current = parse_ca_rotation(read->contents, store.url() + "/" + kAutoCaRotationKey);
  if (current.id != rotation.id || current.completed_unix != 0) return false;
  current.completed_unix = now_unix;
  return conditional.write_if(kAutoCaRotationKey, ca_rotation_json(current), read->version).has_value();
}

std::string ca_rotation_step(CaRotationState s) {
  switch (s) {
    case CaRotationState::kReissued:
    case CaRotationState::kSwitchRestart:
      return "reissued";
    case CaRotationState::kSwitched:
      return "switched";
    default:
      return "";
  }
}

CaRotationState local_ca_rotation_state(const CaRotationRecord& r, const std::string& certs_dir,
                                        const std::string& config_dir) {
  const std::string ca = file_fingerprint(certs_dir + "/ca.crt");
  const bool marker = path_exists(restart_marker(r, config_dir));
  if (ca == r.new_ca_sha256) return marker ? CaRotationState::kSwitchRestart : CaRotationState::kSwitched;
  if (ca != r.old_ca_sha256) return CaRotationState::kOtherCa;
  if (marker) return CaRotationState::kSwitchRestart;  // killed inside the switch's file steps
  // Reissued when every leaf present verifies with the key of the certificate after it in its file
  // (the cross certificate). Public parts only, no key opened for a check every round: the steps
  // that act open and check the record's CA first (open_ca_rotation).
  for (const auto& stem : member_cert_names()) {
    const std::string path = certs_dir + "/" + stem + ".crt";
    if (!path_exists(path)) continue;
    const std::vector<X509Ptr> chain = parse_pem_certs(read_file(path));
    if (chain.size() < 2 || X509_verify(chain[0].get(), X509_get0_pubkey(chain[1].get())) != 1)
      return CaRotationState::kDue;
  }
  return CaRotationState::kReissued;
}

RotationCa open_ca_rotation(const CaRotationRecord& r, const std::string& certs_dir) {
  std::string old_crt = certs_dir + "/ca.crt", old_key = certs_dir + "/ca.key";
  if (file_fingerprint(old_crt) != r.old_ca_sha256) {
    old_crt = certs_dir + "/ca.retired-" + r.id + ".crt";
    old_key = certs_dir + "/ca.retired-" + r.id + ".key";
    if (file_fingerprint(old_crt) != r.old_ca_sha256) {
      throw Error(ErrorKind::kNotFound,
                  "this host holds neither the CA rotation " + r.id + " replaces (" + r.old_ca_sha256.substr(0, 12) +
                      "...) nor its new CA",
                  "copy the cluster's current ca.crt and ca.key into " + certs_dir);
    }
  }
  const auto sealed = base64_unpadded_decode(r.sealed);
  if (!sealed) throw Error(ErrorKind::kCorrupt, "the CA rotation " + r.id + " holds no base64 sealed text");
  const std::string plain = open_sealed(old_key, r.seal_context(), *sealed);
  RotationCa ca;
  try {
    json j = json::parse(plain);
    ca = RotationCa{j.at("cert").get<std::string>(), j.at("key").get<std::string>(), j.at("cross").get<std::string>()};
  } catch (const json::exception& e) {
    throw Error(ErrorKind::kCorrupt, std::string("the CA rotation ") + r.id + " opens, but not to its CA: " + e.what());
  }
  if (fingerprint_of(ca.cert_pem) != r.new_ca_sha256) {
    throw Error(ErrorKind::kCorrupt, "the CA rotation " + r.id + "'s new CA is not the one its record names");
  }
  check_rotation_ca(old_crt, ca);
  return ca;
}

void switch_to_rotation_ca(const CaRotationRecord& r, const RotationCa& ca, const std::string& certs_dir,
                           const std::string& config_dir) {
  write_file_atomic(restart_marker(r, config_dir), r.id + "\n", 0644, /*overwrite=*/true);
  adopt_rotation_ca(certs_dir, ca, r.id);
}

void trust_retired_ca_for_clients(const CaRotationRecord& r, const MemberConfig& member) {
  auto pem = [](std::string text) {
    if (!text.empty() && text.back() != '\n') text += '\n';
    return text;
  };
  const std::string bundle =
      pem(read_file(member.ca_cert())) + pem(read_file(member.certs_dir + "/ca.retired-" + r.id + ".crt"));
  write_file_atomic(member.clients_ca_cert(), bundle, 0644, /*overwrite=*/true);
  set_member_env(member, "ETCD_TRUSTED_CA_FILE", member.clients_ca_cert());
}

void finish_ca_switch(const CaRotationRecord& r, const std::string& config_dir) {
  remove_all(restart_marker(r, config_dir));
}

}  // namespace etcdadm
