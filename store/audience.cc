#include "store/audience.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/error.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "store/encryption.h"

namespace etcdadm {

namespace {

constexpr const char* kFirstWrite = "first write";

StoreAudience audience_of_pin(const AudiencePin& pin) { return {pin.key_id, pin.labels}; }

AudiencePin pin_of(const StoreAudience& a, const char* by) {
  return {a.key_id, a.labels, to_unix_micros(std::chrono::system_clock::now()), by};
}

std::string when_pinned(const AudiencePin& pin) {
  return "pinned by " + pin.pinned_by + ", " + format_rfc3339_seconds(from_unix_micros(pin.pinned_at_micros));
}

// The name of an encrypted backup in `store` ("" when it holds none): one listing. A local store
// that does not exist yet holds none (the first write creates its directory).
std::string an_encrypted_backup(BlobStore& store) {
  std::vector<BackupListing> backups;
  try {
    backups = scan_backups(store);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNotFound) throw;
    return "";
  }
  for (const auto& b : backups) {
    if (b.data_key.ends_with(kAgeFileExtension)) return b.name;
  }
  return "";
}

// A store is encrypted from its creation on: a plain marker (or none) over encrypted backups was
// deleted or replaced by someone, and a write in the clear would hand them the next backup.
void refuse_clear_over_encrypted(BlobStore& store, const std::string& marker_state) {
  std::string name = an_encrypted_backup(store);
  if (name.empty()) return;
  throw Error(
      ErrorKind::kInvalidArgument,
      "store " + store.url() + " holds encrypted backups (" + name + " is one) but " + marker_state +
          ": a backup written now would be in the clear; nothing was written",
      std::string("a store is encrypted from its creation on, so its ") + kStoreMarkerFile +
          " was deleted or replaced. Remove a plain marker, then write once with --encrypt-to, "
          "--encrypt-to-file or --passphrase-file naming the audience the store must have: that writes a new marker");
}

}  // namespace

std::string StoreAudience::describe() const {
  if (!encrypted()) return "nobody in particular (backups in the clear)";
  if (labels.size() == 1 && labels[0] == "scrypt") return "a passphrase (key ID " + key_id + ")";
  return "age recipients " + join_list(labels);
}

StoreAudience audience_of(const StoreSettings& settings) {
  if (!settings.encryption) return {};
  return {settings.encryption->key_id(), settings.encryption->recipient_labels()};
}

StoreSettings settings_for_writing(BlobStore& store, Catalog* catalog, const StoreRequest& request) {
  std::optional<AudiencePin> pin = catalog != nullptr ? catalog->audience_pin(store.url()) : std::nullopt;
  // --encrypt-to, --encrypt-to-file, --passphrase-file: the command names its audience, and
  // ensure_store_settings refuses a marker that says otherwise.
  const bool named = request.encryption.any();
  StoreSettings settings = ensure_store_settings(store, request, [&] {
    if (named) return;
    if (pin && !pin->key_id.empty()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "store " + store.url() + " has no " + kStoreMarkerFile + ", but this host writes its backups for " +
                      audience_of_pin(*pin).describe() + " (" + when_pinned(*pin) +
                      "): a backup written now would be in the clear; nothing was written",
                  "someone deleted the marker: put it back, or write once with --encrypt-to, --encrypt-to-file or "
                  "--passphrase-file naming the audience the store must have, which writes a new marker");
    }
    refuse_clear_over_encrypted(store, std::string("it has no ") + kStoreMarkerFile);
  });
  const StoreAudience now = audience_of(settings);
  if (pin && audience_of_pin(*pin) == now) return settings;
  if (pin && !named) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "the audience of store " + store.url() + " changed: this host writes its backups for " +
            audience_of_pin(*pin).describe() + " (" + when_pinned(*pin) + "), but its " + kStoreMarkerFile +
            " now says " + now.describe() +
            ". Only `etcdadm backup rekey` on this host changes it unchecked: whoever can write the store may "
            "be trying to read the backups saved from now on. Nothing was written",
        "if the change is deliberate (a rekey on another host), accept it here with `etcdadm backup pin --store " +
            store.url() + "`; or name the recipients with --encrypt-to/--encrypt-to-file");
  }
  if (!now.encrypted())
    refuse_clear_over_encrypted(store, std::string("its ") + kStoreMarkerFile + " says it is not encrypted");
  if (catalog == nullptr) return settings;
  const char* by = pin ? "a write that named its audience" : kFirstWrite;
  catalog->pin_audience(store.url(), pin_of(now, by));
  if (pin) {
    spdlog::info("store {}: this host now writes for {} (was {}), as the command named", store.url(), now.describe(),
                 audience_of_pin(*pin).describe());
  } else {
    spdlog::info(
        "store {}: this host writes its backups for {} from now on; a change made elsewhere is refused until "
        "accepted with `etcdadm backup pin --store {}`",
        store.url(), now.describe(), store.url());
  }
  return settings;
}

void pin_after_rekey(BlobStore& store, Catalog* catalog, const StoreSettings& settings) {
  if (catalog == nullptr) return;
  catalog->pin_audience(store.url(), pin_of(audience_of(settings), "backup rekey"));
}

PinChange pin_store_audience(BlobStore& store, Catalog& catalog) {
  auto settings = read_store_settings(store);
  if (!settings) {
    throw Error(ErrorKind::kInvalidArgument,
                "store " + store.url() + " has no " + kStoreMarkerFile + ": there is no audience to pin",
                "the first write into the store creates the marker and pins it");
  }
  PinChange change;
  if (auto pin = catalog.audience_pin(store.url())) change.before = audience_of_pin(*pin);
  change.after = audience_of(*settings);
  if (!change.after.encrypted())
    refuse_clear_over_encrypted(store, std::string("its ") + kStoreMarkerFile + " says it is not encrypted");
  catalog.pin_audience(store.url(), pin_of(change.after, "backup pin"));
  return change;
}

}  // namespace etcdadm
