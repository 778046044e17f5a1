// The change log beside the snapshots (docs/store-format.md §8): every revision of the cluster
// after a snapshot, in segments under changelog/<cluster ID>/. A segment's name is its metadata
// (revision range, time of its last revision, SHA-256 of its stored bytes), so one listing gives
// the restorable window without reading any segment. Its bytes are built like a backup's data
// file: the records, compressed as the store says, then encrypted to the store's recipients when
// the store is encrypted; each segment is one blob, visible at once or not at all.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "etcd/proto/changelog.pb.h"
#include "store/age.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/codec.h"

namespace etcdadm::changelog {

inline constexpr const char* kChangeLogDir = "changelog";
// Beside the segments: changelog/<cluster>/heartbeat.json (heartbeat.h).
inline constexpr const char* kHeartbeatFile = "heartbeat.json";

// A segment failed a check (digest, decryption, decompression, records). The snapshot it extends
// is not damaged by it: callers must not record the backup as damaged (restore/damage.h).
class SegmentError : public Error {
 public:
  using Error::Error;
  explicit SegmentError(const Error& e) : Error(e) {}
};
// The first bytes of every segment's plaintext: the format and its version.
inline constexpr const char* kSegmentMagic = "etcdadm-changelog-v1\n";

struct SegmentName {
  std::string cluster_id;        // lower-case hex, as backup metadata records it
  int64_t first_revision = 0;    // the first record's revision
  int64_t last_revision = 0;     // the last record's; every revision in between is in the segment
  int64_t last_observed_ms = 0;  // unix milliseconds when the last revision was received
  std::string sha256;            // lower-case hex SHA-256 of the stored bytes
  Compression compression = Compression::kGzip;
  bool encrypted = false;
  // Encrypted: whom to, as StoreEncryption::key_id() (16 hex digits; empty in names written
  // before it was added). A rekey re-wraps exactly the segments whose key ID is not the store's.
  std::string key_id;
  // The segment's authenticator (addition, "Authenticated segments"): 32 lower-case hex digits, a
  // MAC over segment_tag_message() that only a holder of the cluster CA's key can make (the
  // controllers' sidecars sign each segment they write); empty when unsigned. A store writer can
  // plant a segment but cannot tag it, so an auto-restore replays tagged segments only.
  std::string tag;
  // changelog/<cluster>/<first %020>-<last %020>-<ms %013>-<sha256>[-<key id>][-m<tag>].seg[.gz|.zst][.age]
  std::string key() const;
};
inline constexpr size_t kSegmentTagHexDigits = 32;
// What a segment's tag authenticates: the name's cluster, range, time and stored bytes' SHA-256
// ("etcdadm-changelog-segment/1\n<cluster>\n<first>\n<last>\n<ms>\n<sha256>\n", numbers in
// decimal). The key ID is not covered: the SHA-256 already fixes the bytes, and a rekey that
// re-wraps them writes a new SHA-256 (and so no tag) anyway.
std::string segment_tag_message(const SegmentName& segment);
// Makes a segment's tag from segment_tag_message() (the controllers' record keyring); an empty
// function, or an empty tag (no CA key at hand), leaves the segment unsigned.
using SegmentTagger = std::function<std::string(const std::string& message)>;
// nullopt for a key that is not a segment's (other files are ignored, not errors).
std::optional<SegmentName> parse_segment_key(const std::string& key);

// Revisions whose commit times the log knows only approximately (docs/store-format.md §8, "Late windows"): a
// capture that started behind the cluster (after the sidecar, its member or the leadership was
// away) received them in one catch-up, so each was committed after `committed_after_ms` (when the
// log was last known complete) and by `received_ms`, not when it was received. Their records carry
// the same bound (Record.committed_after_unix_micros); this marker beside the segments (its name is
// its content; a small JSON body repeats it for people) lets one listing show the windows. Written
// by the capture once the catch-up is stored.
struct LateWindow {
  std::string cluster_id;
  int64_t first_revision = 0;
  int64_t last_revision = 0;
  int64_t committed_after_ms = 0;
  int64_t received_ms = 0;
  // changelog/<cluster>/<first %020>-<last %020>-<committed after ms %013>-<received ms %013>.late
  std::string key() const;
};
std::optional<LateWindow> parse_late_key(const std::string& key);

// Every segment of one cluster's log in the store, ordered by first revision, then last.
// `heartbeat_listed`: set to whether the same listing showed the log's heartbeat (heartbeat.h);
// `late`: set to the late windows it showed, ordered by first revision.
std::vector<SegmentName> list_segments(BlobStore& store, const std::string& cluster_id,
                                       bool* heartbeat_listed = nullptr, std::vector<LateWindow>* late = nullptr);

// One segment in the making: records in, the stored bytes built in memory as they come (the
// segment size bounds the memory), written to the store in one atomic create.
class SegmentBuilder {
 public:
  // `encrypt_to`: the store's recipients when it is encrypted (recipients_for_save).
  SegmentBuilder(Compression compression, std::optional<age::Recipients> encrypt_to);
  ~SegmentBuilder();
  // Appends the next revision. Throws kInternal unless it is exactly last() + 1 (or the first).
  void add(const Record& record);
  bool empty() const { return first_ == 0; }
  int64_t first() const { return first_; }
  int64_t last() const { return last_; }
  uint64_t plaintext_bytes() const { return plaintext_bytes_; }
  // Finishes the bytes and creates the segment (never overwriting); returns its name. The builder
  // is spent afterwards, except for stored_bytes(). `key_id`: the store's (encrypted segments);
  // `tagger`: signs the name (SegmentName::tag) when given.
  SegmentName write(BlobStore& store, const std::string& cluster_id, const std::string& key_id = {},
                    const SegmentTagger& tagger = {});
  // After write(): the segment's size as stored.
  uint64_t stored_bytes() const { return stored_bytes_; }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  int64_t first_ = 0, last_ = 0, last_observed_ms_ = 0;
  uint64_t plaintext_bytes_ = 0;
  uint64_t stored_bytes_ = 0;
};

// Reads a segment whole and checks it: the stored bytes against the name's SHA-256 (before any
// decryption), age (the keys on the store handle), the decompression, the magic,
// and the records: exactly first..last of the name, one per revision, in order. `record` gets
// each record as it is decoded. Throws kCorrupt naming the segment (kAuth: no key opens it).
void read_segment(const BackupStore& store, const SegmentName& segment,
                  const std::function<void(const Record&)>& record);
// read_segment, falling back on a twin when no key given opens `segment` (kAuth): another segment
// of `all` with the same revision range. A rekey killed between writing a segment's re-wrapped
// copy and deleting the old one leaves two, each opening with one set of keys; their payloads are
// the same bytes. Other failures are not retried: records may have been handed out already.
void read_segment_or_twin(const BackupStore& store, const SegmentName& segment, const std::vector<SegmentName>& all,
                          const std::function<void(const Record&)>& record);
// Only the first check: the stored bytes, read whole, against the name's SHA-256 (what can be
// checked of an encrypted segment without its key; what `backup rekey` re-wraps). Throws
// SegmentError (kCorrupt) naming the segment.
std::string read_segment_bytes(BlobStore& store, const SegmentName& segment);
// "change log segment <key> in <store URL>", as every message about a segment names it.
std::string segment_description(BlobStore& store, const SegmentName& segment);

// The segments that carry a log from `from_revision` (exclusive: the snapshot's revision) as far
// as it reaches without a gap, at most to `to_revision` (0: as far as it goes). Overlapping
// segments (two sidecars racing at a hand-over) are resolved by revision: each revision comes from
// exactly one segment, never twice.
struct LogChain {
  int64_t from_revision = 0;  // the snapshot's revision the chain extends
  std::vector<SegmentName> segments;
  int64_t reaches = 0;                        // the last revision the chain holds (from_revision when none)
  int64_t reaches_observed_ms = 0;            // when that revision was received (0 when none)
  std::optional<int64_t> next_segment_start;  // first revision after a gap, when the log goes on beyond one
};
LogChain chain_from(const std::vector<SegmentName>& segments, int64_t from_revision, int64_t to_revision = 0);

}  // namespace etcdadm::changelog
