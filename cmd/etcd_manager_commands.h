// Wiring of `etcdadm etcd-manager ...`: what kops users run etcd-manager-ctl for (the cluster spec,
// the command queue, restore-backup), plus `check`, which finds backups etcd-manager lists but
// could not restore. Logic: store/etcd_manager.h.
#pragma once

#include <CLI/CLI.hpp>

namespace etcdadm::cli {

void add_etcd_manager_commands(CLI::App& app);

}  // namespace etcdadm::cli
