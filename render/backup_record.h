// The JSON of one backup as `backup list -o json`, `backup save -o json` and the sidecar's
// `GET /backups` give it: one schema for one backup wherever it is printed (docs/json.md, "A
// backup"). `backup list` adds `changeLog`, how far point-in-time restores from it reach.
#pragma once

#include <nlohmann/json.hpp>

#include "store/catalog.h"
#include "store/layout.h"

namespace etcdadm::render {

nlohmann::json backup_record_json(const BackupRecord& r);
// One backup attempt of this host's catalog (`backup list --history -o json`).
nlohmann::json attempt_json(const AttemptRecord& a);

}  // namespace etcdadm::render
