// Encryption of a store's backups with age (store/age.h): what the store marker records, which
// recipients a save encrypts to, the keys a reader brings, and reading the secrets themselves
// without leaking them. The format is docs/store-format.md §2b; the model docs/encryption.md.
//
// A store is encrypted or not from its creation on. Writers need only the public recipients
// (`age1...`, recorded in the marker): a sidecar never holds a key that opens its own backups. A
// passphrase store is the exception: the passphrase both writes and reads, so writers need it and
// the marker carries a check that refuses a mistyped one before any backup is written with it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "store/age.h"

namespace etcdadm {

// Appended to the data file name of an encrypted backup: "etcd.backup.gz.age", so that
// `age -d -i key.txt etcd.backup.gz.age | gunzip` is the obvious manual path.
inline constexpr const char* kAgeFileExtension = ".age";
// Stands for the passphrase in recipient lists (marker, metadata, messages): age's stanza type.
inline constexpr const char* kPassphraseRecipient = "scrypt";
inline constexpr const char* kEncryptionAge = "age";
inline constexpr const char* kEncryptionNone = "none";

// The "encryption" object of an encrypted store's marker.
struct StoreEncryption {
  std::vector<age::X25519Recipient> x25519;
  bool passphrase = false;
  // A passphrase store's check: an age file (scrypt, the work factor of the backups) of a fixed
  // text, base64. Opening it proves a writer's passphrase is the store's.
  std::string passphrase_check;
  // "age1..." each, or {"scrypt"}: what metadata and messages show (public, never a secret).
  std::vector<std::string> recipient_labels() const;
  // 16 hex digits naming this set of recipients (or this passphrase, by its check): the first 8
  // bytes of SHA-256("etcdadm-age-recipients-v1\n" + each label + "\n" + passphrase_check).
  // Change-log segments carry it in their names, so a rekey knows which are done (§8).
  std::string key_id() const;
};
nlohmann::json store_encryption_json(const StoreEncryption& e);
// Throws kCorrupt naming `where` for anything malformed.
StoreEncryption parse_store_encryption(const nlohmann::json& j, const std::string& where);

// What a writing command was given (--encrypt-to, --encrypt-to-file, --passphrase-file,
// ETCDADM_AGE_PASSPHRASE): the recipients of a new store, or the passphrase of a passphrase store.
struct EncryptionRequest {
  std::vector<age::X25519Recipient> x25519;
  std::optional<std::string> passphrase;
  bool any() const { return !x25519.empty() || passphrase.has_value(); }
};

// The marker section of a new store made as requested (nullopt: not encrypted). Refuses
// recipients and a passphrase together (age allows a passphrase only alone).
std::optional<StoreEncryption> new_store_encryption(const EncryptionRequest& request);
// Refuses a request that contradicts an existing store's setting (kInvalidArgument, with what to
// do): encryption asked of a plain store, other recipients than the marker's.
void check_encryption_request(const std::optional<StoreEncryption>& existing, const EncryptionRequest& request,
                              const std::string& store_url);
// The recipients a save into an encrypted store encrypts to. A passphrase store takes the
// request's passphrase once it opens the marker's check: kAuth when it does not, kInvalidArgument
// when none was given.
age::Recipients recipients_for_save(const StoreEncryption& e, const EncryptionRequest& request,
                                    const std::string& store_url);

// Before any byte of a backup encrypted to `recipients` is fetched: kAuth when `keys` cannot be
// among them (no keys, or X25519 identities none of which is a recipient, or no passphrase for a
// passphrase backup), naming the recipients and what was given. `what` names the backup.
void require_keys_for(const std::vector<std::string>& recipients, const age::Identities* keys, const std::string& what);
// "identities age1abc..., age1def... and a passphrase": public keys only, for messages.
std::string describe_keys(const age::Identities* keys);

// ---- secrets in files and the environment ----
// The contents of a file that holds a secret (identity, passphrase). Refused (kInvalidArgument,
// naming the chmod that fixes it) when it is not a regular file or its group or others may read
// or write it: a key that others can read is already leaked.
std::string read_secret_file(const std::string& path, const std::string& what);
std::vector<age::X25519Identity> load_identity_file(const std::string& path);
// The first line, without its line ending; an empty passphrase is refused.
std::string load_passphrase_file(const std::string& path);
// Recipients are public: any mode.
std::vector<age::X25519Recipient> load_recipients_file(const std::string& path);
// The value of environment variable `name`, removed from the environment at once so that no child
// process (etcd, etcdutl) inherits it. nullopt when unset or empty.
std::optional<std::string> take_secret_env(const char* name);

}  // namespace etcdadm
