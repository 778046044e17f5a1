#include "restore/verify.h"

#include <memory>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "restore/bolt_reader.h"

namespace etcdadm {

VerifyResult verify_backup_deep(BlobStore& store, const BackupRecord& backup) {
  ScratchDir scratch("etcdadm-verify");
  std::string db_path = scratch.path() + "/snapshot.db";
  VerifyResult r;
  r.fetch = fetch_verified(store, backup, db_path, /*overwrite=*/false, /*durable=*/false);
  try {
    auto db = BoltReader::open(db_path, r.fetch.digest.db_bytes);
    SnapshotInspection inspection = inspect_snapshot(*db);
    r.status = inspection.status;
    r.live_keys = inspection.live_keys;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kCorrupt && e.kind() != ErrorKind::kNotFound) throw;
    // The reader names the scratch copy, which is gone by the time anyone reads the message.
    std::string detail = e.what();
    if (detail.rfind(db_path + ": ", 0) == 0) detail = detail.substr(db_path.size() + 2);
    throw Error(ErrorKind::kCorrupt,
                "backup " + backup.name + " in " + store.url() +
                    ": every hash matches but the snapshot is structurally damaged: " + detail,
                "the snapshot was damaged before it was hashed (etcd or disk fault on the member); use another backup");
  }
  return r;
}

}  // namespace etcdadm
