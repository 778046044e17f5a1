// What a person's commands to the controllers of a store say they did: `auto pause`, `auto resume`,
// `auto rotate-ca`, `auto approve-restore` and `auto adopt`. (`auto status` renders itself: controller/status.h.)
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "controller/adopt.h"
#include "controller/records.h"
#include "controller/status.h"
#include "restore/etcd_manager_restore.h"

namespace etcdadm::render {

std::string auto_paused_text(const std::string& store_url);
std::string auto_resumed_text(const std::string& store_url);
std::string ca_rotation_started_text(const CaRotationRecord& r, const std::string& store_url);
std::string restore_approved_text(const ApprovedRestore& approved);
// `dry_run`: nothing was written ("Would adopt").
std::string adoption_text(const AdoptResult& r, const std::string& store_url, bool dry_run);
nlohmann::json adoption_json(const AdoptResult& r, bool dry_run);
// A restore queued for controllers without the CA key at hand to approve it.
std::string restore_unapproved_text(const QueuedEtcdManagerRestore& queued, const std::string& certs_dir);

}  // namespace etcdadm::render
