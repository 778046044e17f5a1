// `backup verify`'s report on one backup: what the check read (stored bytes only, the db's hashes,
// or its whole structure) and what it found of the backup's change log. One JSON schema whatever
// was checked: what a shallow or keyless check did not read is null.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "restore/fetch.h"
#include "restore/pitr.h"
#include "restore/verify.h"
#include "store/catalog.h"

namespace etcdadm::render {

struct BackupVerification {
  BackupRecord backup;
  std::string store_url;
  FetchResult fetch;                      // the hash checks
  std::optional<VerifyResult> structure;  // the walk of every bucket; nullopt: not walked (--shallow)
  bool stored_bytes_only = false;         // an encrypted backup checked without its key: db not read
  ChangeLogCheck change_log;              // segments == 0: the backup has no change log
};

nlohmann::json backup_verification_json(const BackupVerification& v);
std::string backup_verification_text(const BackupVerification& v);

}  // namespace etcdadm::render
