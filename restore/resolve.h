// Turning what the operator typed (`latest`, a full backup name, a unique prefix such as
// "2026-11-21T10", or a time) into one backup. When nothing matches, the error names the
// nearest backups in time so the 3 a.m. operator can pick one.
#pragma once

#include <string>
#include <vector>

#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm {

// `backups` newest first (as Catalog::backups returns them). Throws kNotFound / kInvalidArgument.
const BackupRecord& resolve_backup(const std::vector<BackupRecord>& backups, const std::string& query,
                                   const std::string& store_url);

// Syncs the catalog with the store, then resolves `query` among its backups.
BackupRecord find_backup(BlobStore& store, Catalog& catalog, const std::string& query);

}  // namespace etcdadm
