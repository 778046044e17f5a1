// The store as kops' etcd-manager reads it (`etcdadm etcd-manager ...`): its cluster spec, the
// backups it lists and whether it could restore each, its command queue, a queued restore, and
// the findings of `check`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "restore/etcd_manager_restore.h"
#include "store/etcd_manager.h"

namespace etcdadm::render {

// `get`: the spec, and whether (and when: nanoseconds, 0 unsaid) etcd-manager created the cluster.
nlohmann::json cluster_spec_json(const EtcdManagerClusterSpec& spec, std::optional<int64_t> created_nanos);
std::string cluster_spec_text(const EtcdManagerClusterSpec& spec, std::optional<int64_t> created_nanos);
// `configure-cluster`: the spec written.
std::string configured_cluster_spec_text(const EtcdManagerClusterSpec& spec);

nlohmann::json etcd_manager_listings_json(const std::vector<EtcdManagerListing>& listed);
std::string etcd_manager_listings_text(const std::vector<EtcdManagerListing>& listed);

nlohmann::json etcd_manager_commands_json(const std::vector<EtcdManagerCommand>& commands);
std::string etcd_manager_commands_text(const std::vector<EtcdManagerCommand>& commands, const std::string& store_url);
// `delete-command`: the keys of the commands removed.
std::string deleted_commands_text(const std::vector<std::string>& keys);

// `restore-backup`: the command queued, and what happens next (etcd-manager restarted by a person,
// or this store's controllers, which restore on their own).
std::string queued_restore_text(const QueuedEtcdManagerRestore& queued, const std::string& store_url);

// `check`: `at_risk`, the findings still listed to etcd-manager (not hidden by --fix).
nlohmann::json etcd_manager_check_json(const std::vector<EtcdManagerFinding>& findings, size_t at_risk);
std::string etcd_manager_check_text(const std::vector<EtcdManagerFinding>& findings, const std::string& store_url);

}  // namespace etcdadm::render
