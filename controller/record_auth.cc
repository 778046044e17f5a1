#include "controller/record_auth.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "etcdadm/pki.h"

namespace etcdadm {

namespace {

constexpr const char* kAuthContext = "etcdadm-auto records";
constexpr const char* kAuthField = "auth";

nlohmann::json parse_record_object(const std::string& json_text, const std::string& key) {
  auto j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw Error(ErrorKind::kCorrupt, key + " is not a JSON object");
  return j;
}

// nlohmann's dump() of an object is the canonical form: its objects are std::maps (members sorted
// bytewise), no whitespace without an indent, UTF-8 kept as it is (invalid UTF-8 throws).
std::string record_hmac(const std::string& auth_key, const std::string& key, nlohmann::json record) {
  record.erase(kAuthField);
  std::string canonical;
  try {
    canonical = record.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kCorrupt, key + " is not valid UTF-8: " + e.what());
  }
  const std::string mac = hmac_sha256(auth_key, "etcdadm-auto-record/1\n" + key + "\n" + canonical);
  return to_hex(reinterpret_cast<const uint8_t*>(mac.data()), mac.size());
}

}  // namespace

const char* record_trust_name(RecordTrust trust) {
  switch (trust) {
    case RecordTrust::kAuthentic:
      return "authentic";
    case RecordTrust::kUnsigned:
      return "unsigned";
    case RecordTrust::kForged:
      return "forged";
  }
  return "?";
}

RecordKeyring RecordKeyring::of_certs_dir(const std::string& certs_dir) {
  RecordKeyring ring;
  const std::string current = certs_dir + "/ca.key";
  if (path_exists(current)) {
    ring.accept_key(read_file(current));
    ring.signs_ = true;
  }
  std::error_code ec;
  std::vector<std::string> retired;
  for (const auto& entry : std::filesystem::directory_iterator(certs_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("ca.retired-", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".key") == 0)
      retired.push_back(entry.path().string());
  }
  std::sort(retired.begin(), retired.end());
  for (const auto& path : retired) ring.accept_key(read_file(path));
  return ring;
}

void RecordKeyring::accept_key(const std::string& ca_key_pem) {
  std::string derived = ca_authentication_key(ca_key_pem, kAuthContext);
  if (std::find(keys_.begin(), keys_.end(), derived) == keys_.end()) keys_.push_back(std::move(derived));
}

std::string RecordKeyring::sign(const std::string& key, const std::string& json_text) const {
  if (!signs_) throw Error(ErrorKind::kInternal, "no CA key to sign " + key + " with");
  nlohmann::json j = parse_record_object(json_text, key);
  j[kAuthField] = {{"v", 1}, {"hmac", record_hmac(keys_.front(), key, j)}};
  return j.dump(2) + "\n";
}

RecordTrust RecordKeyring::check(const std::string& key, const std::string& json_text) const {
  const nlohmann::json j = parse_record_object(json_text, key);
  const auto auth = j.find(kAuthField);
  if (auth == j.end()) return RecordTrust::kUnsigned;
  if (!auth->is_object() || auth->value("v", nlohmann::json()) != 1 || !auth->contains("hmac") ||
      !(*auth)["hmac"].is_string())
    return RecordTrust::kForged;
  const std::string given = (*auth)["hmac"].get<std::string>();
  for (const auto& k : keys_) {
    const std::string expected = record_hmac(k, key, j);
    if (given.size() == expected.size() && CRYPTO_memcmp(given.data(), expected.data(), given.size()) == 0)
      return RecordTrust::kAuthentic;
  }
  return RecordTrust::kForged;
}

namespace {
constexpr size_t kTagBytes = 16;
std::string short_tag(const std::string& auth_key, const std::string& message) {
  const std::string mac = hmac_sha256(auth_key, message);
  return to_hex(reinterpret_cast<const uint8_t*>(mac.data()), kTagBytes);
}
}  // namespace

std::string RecordKeyring::tag(const std::string& message) const {
  if (!signs_) throw Error(ErrorKind::kInternal, "no CA key to sign with");
  return short_tag(keys_.front(), message);
}

RecordTrust RecordKeyring::check_tag(const std::string& message, const std::string& tag) const {
  if (tag.empty()) return RecordTrust::kUnsigned;
  for (const auto& k : keys_) {
    const std::string expected = short_tag(k, message);
    if (tag.size() == expected.size() && CRYPTO_memcmp(tag.data(), expected.data(), tag.size()) == 0)
      return RecordTrust::kAuthentic;
  }
  return RecordTrust::kForged;
}

std::string RecordPolicy::refusal(const std::string& key, const std::string& text) const {
  const RecordTrust trust = keyring != nullptr ? keyring->check(key, text) : RecordTrust::kForged;
  if (trust == RecordTrust::kAuthentic) return "";
  if (trust == RecordTrust::kUnsigned) {
    if (accept_unsigned) return "";
    return key +
           " carries no authenticator of this cluster's CA (written by an etcdadm that did not sign records yet, "
           "etcd-manager-ctl, or by hand): not acted on. `etcdadm seed` signs the spec, each controller its own "
           "records; a host "
           "started with --accept-unsigned-records takes unsigned records";
  }
  return key +
         " carries an authenticator that none of this host's CA keys verifies (forged, altered, moved from another "
         "key, or signed by another cluster's CA): never acted on";
}

void RecordPolicy::require(const std::string& key, const std::string& text) const {
  if (std::string why = refusal(key, text); !why.empty()) throw Error(ErrorKind::kCorrupt, why);
}

}  // namespace etcdadm
