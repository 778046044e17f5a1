// The backup sidecar's flags (schedule, retention, verification, change log, second copy, drills,
// HTTP endpoints), shared by `etcdadm backup sidecar` and `etcdadm auto`, whose acting controller's
// host runs the same sidecar in-process (leader-only: the controller beside the Raft leader acts).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "cmd/store_flags.h"
#include "restore/drill.h"
#include "sidecar/sidecar.h"
#include "store/backup_store.h"
#include "store/catalog.h"

namespace etcdadm::cli {

struct SidecarFlags {
  std::string schedule = "@hourly", retention, verify = "always", listen = "127.0.0.1:9791", token_file;
  bool keep_versions = false;
  StoreCreationFlags creation;
  std::string ready_max_age = "2h", grace = "30s", stall = "30s", abandoned = "24h";
  bool any_member = false;
  bool continuous = false;
  std::string segment_interval = "5s", max_rpo = "60s", heartbeat_interval = "1m";
  int segment_size_mib = 16;
  std::string drill_schedule;
  DrillOptions drill;
  std::string copy_to, copy_retention;

  // `with_any_member`: offer --any-member (auto backs up from the acting controller's host only).
  void add_to(CLI::App* c, StoreFlags& store, bool with_any_member);
};

// A sidecar ready to run, with what its options point into.
struct PreparedSidecar {
  SidecarOptions options;
  std::optional<BackupStore> copy_store;  // --copy-to
  std::string trigger_token;
};

// The schedule's time zone is applied to the process (TZ): call it while no other thread runs.
// `member_endpoint` is the member the sidecar saves from and asks whether it leads.
std::unique_ptr<PreparedSidecar> prepare_sidecar(const SidecarFlags& f, const StoreFlags& store,
                                                 const BackupStore& backups, Catalog& catalog,
                                                 const std::string& member_endpoint);

}  // namespace etcdadm::cli
