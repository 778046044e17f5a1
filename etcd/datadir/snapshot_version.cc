#include "etcd/datadir/snapshot_version.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "etcd/datadir/bolt_reader.h"

namespace etcdadm {

namespace {

std::optional<SnapshotOrigin> from_db(const std::string& db_path) {
  std::unique_ptr<BoltReader> db;
  try {
    db = BoltReader::open(db_path);
  } catch (const Error& e) {
    // Its hashes were checked: the restore tool has the last word on a db our reader refuses.
    spdlog::warn("cannot read the meta bucket of {} ({}): the version check relies on the backup metadata alone",
                 db_path, e.what());
    return std::nullopt;
  }
  if (db->has_bucket({"meta"})) {
    if (auto sv = db->get({"meta"}, "storageVersion")) {
      if (auto v = EtcdVersion::parse(*sv)) return SnapshotOrigin{*v, "storageVersion " + *sv + " in the db"};
      spdlog::warn("{}: meta/storageVersion is not a version ({}): judging the db as etcd 3.6", db_path, *sv);
      return SnapshotOrigin{EtcdVersion{3, 6, 0}, "a storageVersion key in the db (3.6+)"};
    }
    // 3.5 writes term with every applied entry and confState with every membership change (a
    // member upgraded from 3.4 may not have written confState yet); 3.4 writes neither.
    if (db->get({"meta"}, "term") || db->get({"meta"}, "confState")) {
      return SnapshotOrigin{EtcdVersion{3, 5, 0}, "meta/term or meta/confState in the db (written from etcd 3.5)"};
    }
  }
  return SnapshotOrigin{EtcdVersion{3, 4, 0},
                        "no storageVersion, confState or term in the db's meta bucket (etcd 3.4 or older)"};
}

std::optional<SnapshotOrigin> recorded_origin(const std::string& recorded) {
  auto rec = EtcdVersion::parse(recorded);
  if (!rec) return std::nullopt;
  return SnapshotOrigin{*rec, "etcd " + recorded + " recorded in the backup metadata"};
}

}  // namespace

void refuse_newer_recorded_version(const std::string& recorded, const EtcdVersion& target) {
  auto rec = recorded_origin(recorded);
  if (rec && rec->version.major == target.major && rec->version.minor > target.minor) {
    check_restore_target(*rec, target, /*tool_version=*/"");
  }
}

std::optional<SnapshotOrigin> snapshot_origin(const std::string& db_path, const std::string& recorded) {
  auto db = from_db(db_path);
  auto rec = recorded_origin(recorded);
  if (!rec || !db) return rec ? rec : db;
  if (db->version.major == rec->version.major && db->version.minor > rec->version.minor) {
    spdlog::warn("the backup metadata says etcd {}, but the snapshot holds {}: judging it as etcd {}", recorded,
                 db->evidence, db->version.minor_str());
    return db;
  }
  return rec;
}

void check_restore_target(const SnapshotOrigin& origin, const EtcdVersion& target, const std::string& tool_version) {
  auto verdict = cross_version_restore(origin.version, target);
  if (!verdict.allowed) {
    throw Error(ErrorKind::kInvalidArgument,
                "refusing to restore for etcd " + target.str() + ": " + verdict.reason + " (" + origin.evidence + ")",
                verdict.supported_path);
  }
  auto tool = EtcdVersion::parse(tool_version);
  if (tool && !tool->same_minor(target)) {
    throw Error(ErrorKind::kInvalidArgument,
                "refusing to restore for etcd " + target.str() + " with the restore tool of etcd " + tool_version +
                    ": the tool writes the data dir for its own version",
                "restore with etcd " + target.minor_str() +
                    "'s own tool: " + (restores_with_etcdutl(target) ? "etcdutl " : "etcdctl ") + target.minor_str() +
                    " first on PATH, or --restore-tool");
  }
  if (!origin.version.same_minor(target)) {
    spdlog::info("restoring an etcd {} snapshot for etcd {} ({}): a one-minor upgrade, as etcd supports",
                 origin.version.minor_str(), target.str(), origin.evidence);
  }
}

}  // namespace etcdadm
