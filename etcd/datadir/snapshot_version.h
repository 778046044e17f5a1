// Which etcd a snapshot comes from, and whether a member of another version may start on it
// (the rules are etcd_version.h's cross_version_restore). Every restore checks this before it
// writes anything: `backup restore`, `init --from-backup` (before installing etcd) and `init --snapshot`.
#pragma once

#include <optional>
#include <string>

#include "etcd/etcd_version.h"

namespace etcdadm {

struct SnapshotOrigin {
  EtcdVersion version;   // minor (and patch when recorded) of the etcd that wrote the snapshot
  std::string evidence;  // how we know: "recorded in the backup metadata", "storageVersion 3.6.0 in the db", ...
};

// `recorded`: the version the backup's metadata names ("" for plain files and unlabelled imports).
// The db tells its own lower bound: a storageVersion key in the meta bucket (written by 3.6+: its
// value), else meta/term or meta/confState (written from 3.5), else neither (3.4 or older). The
// newer of the two wins, so a mislabelled backup is judged by what it really holds. nullopt when
// neither tells (nothing recorded, and a db our reader cannot open: the tool then decides alone).
std::optional<SnapshotOrigin> snapshot_origin(const std::string& db_path, const std::string& recorded);

// Before a backup is fetched: throws as check_restore_target() would when the version its metadata
// records (`recorded`) is already newer than `target`. The db can only raise what the metadata
// says, so that refusal is certain; anything else waits for the fetched db (snapshot_origin).
void refuse_newer_recorded_version(const std::string& recorded, const EtcdVersion& target);

// Throws kInvalidArgument (nothing written yet) unless etcd `target` may start on data restored
// from a snapshot of `origin`, and unless the restore tool (`tool_version`, "" = not known yet) is
// of the target's minor: the data dir is written for the tool's own version (measured: etcd 3.6
// panics, "failed to update; member unknown", on a 3.4 snapshot restored by etcdctl 3.4).
void check_restore_target(const SnapshotOrigin& origin, const EtcdVersion& target, const std::string& tool_version);

}  // namespace etcdadm
