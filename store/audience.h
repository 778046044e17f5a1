// A store's audience: who can read what a write puts into it. For an encrypted store, the age
// recipients (or the passphrase) of its marker; for a plain store, everyone who can read the store.
// Saves, imports and change-log segments take their recipients from the marker when no
// --encrypt-to is given, so a writer of the store who replaces the marker's recipients with their
// own, or deletes the marker, would make every later backup readable by them or unencrypted
// (docs/security.md). This host therefore pins each store's audience in its catalog the first time
// it writes there (Catalog::audience_pin) and refuses, from then on, an audience it did not set
// itself: only `backup rekey` run here, `backup pin` (a person accepting a change) and a write that
// names its recipients explicitly move the pin.
#pragma once

#include <string>
#include <vector>

#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

struct StoreAudience {
  std::string key_id;               // StoreEncryption::key_id(); "" in the clear
  std::vector<std::string> labels;  // StoreEncryption::recipient_labels(); empty in the clear
  bool encrypted() const { return !key_id.empty(); }
  // "age recipients age1..., age1..." | "a passphrase (key ID ...)" | "nobody in particular: in the clear"
  std::string describe() const;
  bool operator==(const StoreAudience& other) const { return key_id == other.key_id; }
};
StoreAudience audience_of(const StoreSettings& settings);

// The settings a write into `store` uses (ensure_store_settings: the marker is created when the
// store has none), once its audience is one this host accepts:
//   - The store's audience must be this host's pin (catalog). Else kInvalidArgument, naming the
//     pinned and the present audience, `etcdadm backup pin` to accept the change and `backup rekey`
//     to make one. A request that names the recipients (or the passphrase) is itself the
//     acceptance: the pin follows it (logged).
//   - Never in the clear into a store that holds encrypted backups (no marker, or a plain one): a
//     store is encrypted from its creation on, so its marker was deleted or replaced. Checked with
//     one listing whenever a plain audience is about to be pinned, and before a write that names no
//     audience creates a marker.
//   - First write of this host (no pin): the audience is pinned (logged).
// `catalog` null (or in memory): nothing is remembered, every write is a first one.
StoreSettings settings_for_writing(BlobStore& store, Catalog* catalog, const StoreRequest& request);

// `backup rekey` on this host changed the recipients to `settings`': the pin follows.
void pin_after_rekey(BlobStore& store, Catalog* catalog, const StoreSettings& settings);

// `backup pin`: pins the store's audience as its marker now says (a person accepting a change made
// elsewhere). Refuses (kInvalidArgument) a store without marker, and a plain marker over encrypted
// backups. Returns the pin before (nullopt: none) and after.
struct PinChange {
  std::optional<StoreAudience> before;
  StoreAudience after;
};
PinChange pin_store_audience(BlobStore& store, Catalog& catalog);

}  // namespace etcdadm
