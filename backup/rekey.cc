#include "backup/rekey.h"

#include <spdlog/spdlog.h>

#include <set>

#include "changelog/segment.h"
#include "common/byte_sink.h"
#include "common/error.h"
#include "common/failpoint.h"
#include "common/interrupt.h"
#include "common/sha256.h"
#include "common/text.h"
#include "store/audience.h"
#include "store/blob_capabilities.h"
#include "store/layout.h"

namespace etcdadm {

namespace {

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// Steps 1-4 of rekey.h for one backup, whose metadata as just read is `meta`.
void rekey_one(BlobStore& store, const std::string& name, BackupMeta meta, const age::Identities& keys,
               const age::Recipients& to, const std::vector<std::string>& to_labels) {
  const std::string what = "backup " + name + " in " + store.url();
  const std::string meta_key = name + "/" + kBackupMetaFile;
  BackupRecord record = record_from_meta(meta);
  const std::string data_key = name + "/" + meta.data_file;

  auto reader = store.open(data_key);
  auto writer = store.create(data_key, /*overwrite=*/true);  // visible only at commit()
  HashingSink old_stored(nullptr);
  HashingSink new_stored(writer.get());
  std::string head;  // the first bytes, until the old header is complete
  bool header_done = false;
  std::vector<uint8_t> buf(1 << 20);
  try {
    for (;;) {
      if (interrupted()) throw_if_interrupted("rekey of " + what);
      size_t n = reader->read(buf.data(), buf.size());
      if (n == 0) break;
      old_stored.write(buf.data(), n);
      if (header_done) {
        new_stored.write(buf.data(), n);
        continue;
      }
      head.append(reinterpret_cast<const char*>(buf.data()), n);
      if (!age::header_size(head)) continue;
      age::RewrappedHeader h = age::rewrap_header(head, keys, to);
      new_stored.write(reinterpret_cast<const uint8_t*>(h.header.data()), h.header.size());
      new_stored.write(reinterpret_cast<const uint8_t*>(head.data()) + h.old_header_size,
                       head.size() - h.old_header_size);
      header_done = true;
      failpoint("rekey/data/streaming");  // the new header and the first bytes are in the new file
    }
  } catch (const Error& e) {
    writer->abort();
    if (e.kind() == ErrorKind::kAuth) {
      throw Error(
          ErrorKind::kAuth,
          what + " cannot be opened with the keys given (" + e.what() + "); it is encrypted to " +
              join_list(record.recipients()),
          "give the identity file (or passphrase) of one of its recipients with --identity / --passphrase-file");
    }
    throw e.wrap(what);
  }
  std::string old_sha = to_hex(old_stored.finish());
  if (!header_done || !record.stored_sha256_matches(old_sha)) {
    writer->abort();
    throw Error(ErrorKind::kCorrupt,
                what + ": the data file does not match its recorded SHA-256" +
                    (header_done ? "" : " (it ends inside the age header)"),
                "a damaged backup is not rekeyed; `etcdadm backup verify` it, or delete it");
  }
  RekeyInProgress next{to_hex(new_stored.finish()), new_stored.bytes(), to_labels};

  meta.rekey = next;
  store.write_small(meta_key, backup_meta_to_json(meta), /*overwrite=*/true);
  failpoint("rekey/meta/in-progress");
  writer->commit();
  failpoint("rekey/data/committed");
  meta.stored_sha256 = next.stored_sha256;
  meta.stored_size = next.stored_size;
  meta.encrypted_to = next.encrypted_to;
  meta.rekey.reset();
  store.write_small(meta_key, backup_meta_to_json(meta), /*overwrite=*/true);
}

// The change log's part of --all: each encrypted segment whose name does not carry the store's key
// ID gets a re-wrapped copy (same range and time; new digest and key ID), created before the old
// one is deleted. A kill in between leaves both: readers take whichever the keys open
// (read_segment_or_twin), and the next run deletes the old one after re-wrapping it again.
void rekey_segments(BlobStore& store, const age::Identities* keys, const age::Recipients& to, const std::string& key_id,
                    RekeyResult& r) {
  std::vector<changelog::SegmentName> segments;
  for (const auto& blob : store.list(std::string(changelog::kChangeLogDir) + "/")) {
    if (auto s = changelog::parse_segment_key(blob.key); s && s->encrypted) segments.push_back(std::move(*s));
  }
  auto done_twin = [&](const changelog::SegmentName& old) -> const changelog::SegmentName* {
    for (const auto& s : segments) {
      if (s.key_id == key_id && s.cluster_id == old.cluster_id && s.first_revision == old.first_revision &&
          s.last_revision == old.last_revision) {
        return &s;
      }
    }
    return nullptr;
  };
  for (const auto& old : segments) {
    const changelog::SegmentName* segment = &old;
    if (segment->key_id == key_id) {
      ++r.segments_already;
      continue;
    }
    const std::string what = changelog::segment_description(store, *segment);
    // A run killed after the re-wrapped copy was made: that copy is checked, the old one goes.
    if (const auto* twin = done_twin(old)) {
      changelog::read_segment_bytes(store, *twin);
      store.remove(old.key());
      ++r.segments_rekeyed;
      continue;
    }
    if (keys == nullptr) {
      throw Error(
          ErrorKind::kAuth, "rekeying " + what + " needs a key that opens it: none was given",
          "give an identity of its current recipients with --identity (or the passphrase with --passphrase-file)");
    }
    if (interrupted()) throw_if_interrupted("rekey of " + what);
    std::string stored = changelog::read_segment_bytes(store, *segment);  // a damaged segment is never rekeyed
    age::RewrappedHeader h;
    try {
      h = age::rewrap_header(stored, *keys, to);
    } catch (const Error& e) {
      throw e.kind() == ErrorKind::kAuth
          ? Error(ErrorKind::kAuth, what + " cannot be opened with the keys given (" + e.what() + ")",
                  "give the identity file (or passphrase) of the recipients it was written for")
          : e.wrap(what);
    }
    std::string rewrapped = h.header + stored.substr(h.old_header_size);
    changelog::SegmentName renamed = *segment;
    renamed.sha256 = to_hex(sha256_of(rewrapped.data(), rewrapped.size()));
    renamed.key_id = key_id;
    // The tag authenticates the old bytes' SHA-256; a rekey holds no CA key to sign the new one
    // (store-format.md §8, "Authenticated segments": an auto-restore replays no further).
    renamed.tag.clear();
    auto writer = store.create(renamed.key(), /*overwrite=*/false);
    writer->write(reinterpret_cast<const uint8_t*>(rewrapped.data()), rewrapped.size());
    writer->commit();
    store.remove(segment->key());
    ++r.segments_rekeyed;
  }
  if (r.segments_rekeyed > 0) spdlog::info("rekeyed {} change log segments", r.segments_rekeyed);
}

}  // namespace

RekeyResult rekey_backups(const BackupStore& backups, Catalog* catalog, const RekeyOptions& o) {
  BlobStore& store = *backups;
  InterruptibleWork interruptible;
  auto settings = read_store_settings(store);
  if (!settings || !settings->encryption) {
    throw Error(ErrorKind::kInvalidArgument, "store " + store.url() + " is not encrypted: there is nothing to rekey",
                "a store is encrypted from its creation on: save encrypted backups into a new store");
  }
  set_file_mode(store, settings->effective_file_mode());
  RekeyResult r;
  EncryptionRequest writer;
  writer.passphrase = o.current_passphrase;
  if (o.new_recipients) {
    // The target's passphrase is checked against the check it gets (recipients_for_save below).
    *settings = change_store_recipients(store, *o.new_recipients);
    pin_after_rekey(store, catalog, *settings);
    writer = *o.new_recipients;
    r.store_changed = true;
    spdlog::info("store {}: backups saved from now on are encrypted to {}", store.url(),
                 join_list(settings->encryption->recipient_labels()));
  }
  if (!o.new_recipients) {
    // Re-wrapping to the marker's recipients writes for them as a save does: a marker someone else
    // changed must not get every old backup re-encrypted to them.
    StoreRequest as_is;
    as_is.encryption = writer;
    *settings = settings_for_writing(store, catalog, as_is);
  }
  age::Recipients to = recipients_for_save(*settings->encryption, writer, store.url());
  r.recipients = settings->encryption->recipient_labels();

  // With --all, the listing says which backups have our metadata (etcd-manager's have none and are
  // never encrypted); named backups are looked at one by one.
  std::vector<std::string> names = o.names;
  if (o.all) {
    names.clear();
    for (const auto& l : scan_backups(store)) {
      if (l.has_backup_meta) names.push_back(l.name);
    }
  }
  const age::Identities* keys = backups.keys();
  if (o.all) rekey_segments(store, keys, to, settings->encryption->key_id(), r);
  for (const auto& name : names) {
    const std::string meta_key = name + "/" + kBackupMetaFile;
    if (!o.all && !store.stat(meta_key)) {
      throw Error(ErrorKind::kNotFound, "backup " + name + " in " + store.url() + " has no etcdadm metadata",
                  "only encrypted etcdadm backups can be rekeyed");
    }
    BackupMeta meta = backup_meta_from_json(store.read_small(meta_key), store.url() + "/" + meta_key);
    if (meta.encryption == kEncryptionNone) {
      if (o.all) continue;
      throw Error(ErrorKind::kInvalidArgument, "backup " + name + " is not encrypted",
                  "only encrypted backups can be rekeyed");
    }
    // A passphrase target is re-made every time (its salt is new); recipients only when they differ.
    if (!meta.rekey && as_set(meta.encrypted_to) == as_set(r.recipients) && !settings->encryption->passphrase) {
      r.already.push_back(name);
      continue;
    }
    if (keys == nullptr) {
      throw Error(
          ErrorKind::kAuth, "rekeying backup " + name + " needs a key that opens it: none was given",
          "give an identity of its current recipients with --identity (or the passphrase with --passphrase-file)");
    }
    rekey_one(store, name, std::move(meta), *keys, to, r.recipients);
    r.rekeyed.push_back(name);
    spdlog::info("rekeyed backup {}", name);
  }
  // A versioned bucket keeps each replaced data file (and segment) as a noncurrent version, which
  // the retired key still opens: a rekey that leaves them has not retired it.
  std::vector<std::string> replaced;
  for (const auto& name : r.rekeyed) replaced.push_back(name + "/");
  if (r.segments_rekeyed > 0) replaced.push_back(std::string(changelog::kChangeLogDir) + "/");
  for (const auto& prefix : replaced) {
    auto purged = purge_noncurrent_versions(store, prefix);
    r.old_versions_removed += purged.removed;
    for (auto& kept : purged.refused) {
      spdlog::warn("the bucket keeps a version encrypted to the old recipients: {}", kept);
      r.old_versions_kept.push_back(std::move(kept));
    }
  }
  if (!r.rekeyed.empty()) sync_after(catalog, store, "rekey", SyncDepth::kFull);  // rewrote backups of any age
  return r;
}

}  // namespace etcdadm
