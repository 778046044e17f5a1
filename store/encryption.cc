#include "store/encryption.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/base64.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/text.h"

namespace etcdadm {

namespace {

using json = nlohmann::json;

constexpr std::string_view kPassphraseCheckText = "etcdadm store passphrase check v1\n";

std::set<std::string> labels_of(const std::vector<age::X25519Recipient>& rs) {
  std::set<std::string> out;
  for (const auto& r : rs) out.insert(r.str());
  return out;
}

}  // namespace

std::vector<std::string> StoreEncryption::recipient_labels() const {
  if (passphrase) return {kPassphraseRecipient};
  std::vector<std::string> out;
  for (const auto& r : x25519) out.push_back(r.str());
  return out;
}

std::string StoreEncryption::key_id() const {
  std::vector<std::string> labels = recipient_labels();
  std::sort(labels.begin(), labels.end());
  std::string text = "etcdadm-age-recipients-v1\n";
  for (const auto& l : labels) text += l + "\n";
  text += passphrase_check;
  Sha256 h;
  h.update(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  return to_hex(h.finish()).substr(0, 16);
}

json store_encryption_json(const StoreEncryption& e) {
  json j = {{"format", kEncryptionAge}, {"recipients", e.recipient_labels()}};
  if (e.passphrase) j["passphraseCheck"] = e.passphrase_check;
  return j;
}

StoreEncryption parse_store_encryption(const json& j, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kCorrupt, "store marker " + where + ": \"encryption\" " + why);
  };
  if (!j.is_object()) throw bad("is not an object");
  if (j.value("format", "") != kEncryptionAge) throw bad("has an unknown format (this etcdadm knows \"age\")");
  if (!j.contains("recipients") || !j["recipients"].is_array() || j["recipients"].empty())
    throw bad("lists no recipients");
  StoreEncryption e;
  for (const auto& r : j["recipients"]) {
    if (!r.is_string()) throw bad("has a recipient that is not a string");
    std::string s = r.get<std::string>();
    if (s == kPassphraseRecipient) {
      e.passphrase = true;
      continue;
    }
    try {
      e.x25519.push_back(age::parse_recipient(s));
    } catch (const Error& err) {
      throw bad(std::string("has a bad recipient: ") + err.what());
    }
  }
  if (e.passphrase) {
    if (!e.x25519.empty()) throw bad("mixes a passphrase with recipients");
    e.passphrase_check = j.value("passphraseCheck", "");
    if (e.passphrase_check.empty()) throw bad("has a passphrase but no \"passphraseCheck\"");
  }
  return e;
}

std::optional<StoreEncryption> new_store_encryption(const EncryptionRequest& request) {
  if (!request.any()) return std::nullopt;
  if (request.passphrase && !request.x25519.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "a store is encrypted to recipients or to a passphrase, not both",
                "drop --passphrase-file (and ETCDADM_AGE_PASSPHRASE) or the --encrypt-to flags");
  }
  StoreEncryption e;
  if (request.passphrase) {
    if (request.passphrase->empty()) throw Error(ErrorKind::kInvalidArgument, "the passphrase is empty");
    e.passphrase = true;
    age::Recipients to;
    to.passphrase = request.passphrase;
    e.passphrase_check = base64_unpadded(age::encrypt(to, kPassphraseCheckText));
  } else {
    std::set<std::string> seen;
    for (const auto& r : request.x25519) {
      if (seen.insert(r.str()).second) e.x25519.push_back(r);
    }
  }
  return e;
}

void check_encryption_request(const std::optional<StoreEncryption>& existing, const EncryptionRequest& request,
                              const std::string& store_url) {
  if (!request.any()) return;
  if (!existing) {
    throw Error(ErrorKind::kInvalidArgument, "store " + store_url + " was created without encryption",
                "a store is encrypted from its creation on: use a new store for encrypted backups");
  }
  if (existing->passphrase != request.passphrase.has_value()) {
    throw Error(ErrorKind::kInvalidArgument,
                "store " + store_url + " is encrypted to " +
                    (existing->passphrase ? std::string("a passphrase")
                                          : "recipients " + join_list(existing->recipient_labels())) +
                    ", not to " + (request.passphrase ? std::string("a passphrase") : "recipients"),
                existing->passphrase ? "give the store's passphrase with --passphrase-file or ETCDADM_AGE_PASSPHRASE"
                                     : "drop --passphrase-file; the store's recipients need no secret to write");
  }
  if (!existing->passphrase && labels_of(request.x25519) != labels_of(existing->x25519)) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "store " + store_url + " encrypts to " + join_list(existing->recipient_labels()) +
            ", not to the recipients given",
        "drop --encrypt-to/--encrypt-to-file to use the store's recipients, or change them with `etcdadm backup "
        "rekey --store " +
            store_url + " --encrypt-to ...`");
  }
}

age::Recipients recipients_for_save(const StoreEncryption& e, const EncryptionRequest& request,
                                    const std::string& store_url) {
  age::Recipients to;
  if (!e.passphrase) {
    to.x25519 = e.x25519;
    return to;
  }
  if (!request.passphrase) {
    throw Error(ErrorKind::kInvalidArgument,
                "store " + store_url + " is encrypted with a passphrase and none was given",
                "give it with --passphrase-file FILE (mode 0600) or the environment variable ETCDADM_AGE_PASSPHRASE");
  }
  age::Identities check;
  check.passphrase = request.passphrase;
  auto file = base64_unpadded_decode(e.passphrase_check);
  if (!file)
    throw Error(ErrorKind::kCorrupt, "store " + store_url + ": the marker's \"passphraseCheck\" is not base64");
  try {
    if (age::decrypt(check, *file) != kPassphraseCheckText) throw Error(ErrorKind::kAuth, "check text differs");
  } catch (const Error& err) {
    if (err.kind() != ErrorKind::kAuth)
      throw Error(ErrorKind::kCorrupt,
                  "store " + store_url + ": the marker's passphrase check is damaged: " + err.what());
    throw Error(
        ErrorKind::kAuth, "the passphrase given is not store " + store_url + "'s: nothing was written",
        "check --passphrase-file / ETCDADM_AGE_PASSPHRASE (a trailing space counts; only the line ending is dropped)");
  }
  to.passphrase = request.passphrase;
  return to;
}

std::string describe_keys(const age::Identities* keys) {
  if (keys == nullptr || (keys->x25519.empty() && !keys->passphrase)) return "no identity and no passphrase";
  std::vector<std::string> parts;
  if (!keys->x25519.empty()) {
    std::vector<std::string> pubs;
    for (const auto& id : keys->x25519) pubs.push_back(id.recipient().str());
    parts.push_back(std::string(keys->x25519.size() == 1 ? "identity " : "identities ") + join_list(pubs));
  }
  if (keys->passphrase) parts.push_back("a passphrase");
  return parts.size() == 2 ? parts[0] + " and " + parts[1] : parts[0];
}

void require_keys_for(const std::vector<std::string>& recipients, const age::Identities* keys,
                      const std::string& what) {
  bool passphrase_backup = recipients.size() == 1 && recipients[0] == kPassphraseRecipient;
  bool can = false;
  if (keys != nullptr) {
    if (passphrase_backup) {
      can = keys->passphrase.has_value();
    } else if (recipients.empty()) {
      can = !keys->x25519.empty() || keys->passphrase;  // metadata without recipients: let age decide
    } else {
      for (const auto& id : keys->x25519) {
        if (std::find(recipients.begin(), recipients.end(), id.recipient().str()) != recipients.end()) can = true;
      }
    }
  }
  if (can) return;
  std::string to = passphrase_backup    ? std::string("a passphrase")
                   : recipients.empty() ? "unrecorded recipients"
                                        : join_list(recipients);
  throw Error(ErrorKind::kAuth, what + " is encrypted (age) to " + to + "; given: " + describe_keys(keys),
              passphrase_backup
                  ? "give the passphrase with --passphrase-file FILE (mode 0600) or ETCDADM_AGE_PASSPHRASE"
                  : "give the identity file of one of these recipients with --identity FILE (mode 0600) or "
                    "ETCDADM_AGE_IDENTITY_FILE");
}

// ---- secrets ----

std::string read_secret_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error(ErrorKind::kNotFound, what + " " + path + " cannot be read: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::kInvalidArgument, what + " " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(ErrorKind::kInvalidArgument,
                what + " " + path + " has mode " + mode + ": its group or other users may read or change it, refused",
                "chmod 600 " + path + " (in Kubernetes: defaultMode: 0400 on the Secret volume)");
  }
  return read_file(path);
}

std::vector<age::X25519Identity> load_identity_file(const std::string& path) {
  return age::parse_identity_file(read_secret_file(path, "identity file"), "identity file " + path);
}

std::string load_passphrase_file(const std::string& path) {
  std::string text = read_secret_file(path, "passphrase file");
  std::string line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw Error(ErrorKind::kInvalidArgument, "passphrase file " + path + " starts with an empty line");
  return line;
}

std::vector<age::X25519Recipient> load_recipients_file(const std::string& path) {
  return age::parse_recipients_file(read_file(path), "recipients file " + path);
}

std::optional<std::string> take_secret_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return std::nullopt;
  std::string value = v;
  ::unsetenv(name);
  return value;
}

}  // namespace etcdadm
