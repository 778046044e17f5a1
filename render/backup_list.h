// `backup list`: the backups of a store, newest first, with how far the change log reaches from
// each; and with --history, this host's backup attempts. Each as JSON (-o json) and as a table.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "common/timefmt.h"
#include "restore/pitr.h"
#include "store/catalog.h"

namespace etcdadm::render {

// `windows`: how far each backup's change log reaches (restore/pitr.h log_windows), by name.
// Written to `os` record by record rather than returned: a store of 10,000 backups is not held as
// one document.
void write_backup_list_json(std::ostream& os, const std::vector<BackupRecord>& newest_first,
                            const std::map<std::string, LogWindow>& windows);
// Ages ("2h") are counted back from `now`.
std::string backup_list_text(const std::vector<BackupRecord>& newest_first,
                             const std::map<std::string, LogWindow>& windows, SystemTime now);

nlohmann::json attempt_list_json(const std::vector<AttemptRecord>& newest_first);
std::string attempt_list_text(const std::vector<AttemptRecord>& newest_first);

}  // namespace etcdadm::render
