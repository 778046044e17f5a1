// Turning what the operator typed (`latest`, a full backup name, a unique prefix such as
// "2026-11-21T10", or a time) into one backup. When nothing matches, the error names the
// nearest backups in time so the 3 a.m. operator can pick one.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/timefmt.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

// How far ahead of this host's clock a backup may be dated and still be `latest`: the clocks of
// the hosts that write backups differ by seconds; an entry further ahead is a clock that is wrong
// or a store's garbage (a directory named 2099-...).
inline constexpr std::chrono::minutes kLatestFutureTolerance{5};

// Why `r` is never `latest` (the newest backup, taken without being named), "" when it may be:
// recorded damaged; its metadata names no data file the store holds (an `_etcd_backup.meta`
// alone); dated more than kLatestFutureTolerance after `now`.
std::string why_not_latest(const BackupRecord& r, SystemTime now);

// `backups` newest first (as Catalog::backups returns them). `latest` is the newest backup
// why_not_latest() passes, each one passed over named in a warning. Throws kNotFound /
// kInvalidArgument.
const BackupRecord& resolve_backup(const std::vector<BackupRecord>& backups, const std::string& query,
                                   const std::string& store_url, SystemTime now = std::chrono::system_clock::now());

// Syncs the catalog with the store, then resolves `query` among its backups.
BackupRecord find_backup(BlobStore& store, Catalog& catalog, const std::string& query);

}  // namespace etcdadm
