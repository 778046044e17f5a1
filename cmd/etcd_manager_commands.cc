#include "cmd/etcd_manager_commands.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cmd/invocation.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "controller/records.h"
#include "render/json.h"
#include "restore/etcd_manager_restore.h"
#include "store/etcd_manager.h"

namespace etcdadm::cli {

namespace {

using json = nlohmann::json;

json spec_json(const EtcdManagerClusterSpec& s) { return {{"memberCount", s.member_count}, {"etcdVersion", s.etcd_version}}; }

std::string describe(const EtcdManagerClusterSpec& s) {
  return std::to_string(s.member_count) + " member" + (s.member_count == 1 ? "" : "s") + ", etcd " +
         (s.etcd_version.empty() ? "(no version)" : s.etcd_version);
}

std::string when(int64_t unix_nanos) {
  return format_rfc3339_seconds(SystemTime(std::chrono::duration_cast<SystemTime::duration>(std::chrono::nanoseconds(unix_nanos))));
}

// What to do after queueing a restore: etcd-manager reads its queue when it starts.
constexpr const char* kRestartHint =
    "etcd-manager reads the command when it starts: restart etcd-manager on every control-plane node (kops: "
    "`kubectl -n kube-system delete pod -l k8s-app=etcd-manager-main`, or `...-events` for the events cluster). It then "
    "creates a new, empty cluster, restores the backup into it and deletes the command; the API servers see the "
    "restored data once it is done.";
constexpr const char* kAutoRestoreHint =
    "This store's hosts run `etcdadm auto`: their controllers plan the restore within a round or two (30 s while "
    "idle), then every listed host stops its member, sets its data aside, restores the backup natively (revisions "
    "kept) and starts; the command is deleted once the restored cluster has a leader. Follow it with `etcdadm auto "
    "status`.";

void add_get(CLI::App& group) {
  auto f = std::make_shared<StoreFlags>();
  auto* c = group.add_subcommand("get", "show the cluster spec etcd-manager runs (control/etcd-cluster-spec)");
  f->add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto store = f->open();
    auto spec = read_etcd_manager_cluster_spec(*store);
    if (!spec) {
      throw Error(ErrorKind::kNotFound, "no etcd-manager cluster spec in " + store->url() + " (control/etcd-cluster-spec)",
                  "is --store the store etcd-manager backs up to (kops: s3://BUCKET/CLUSTER/backups/etcd/main)? "
                  "`etcdadm etcd-manager configure-cluster` writes one");
    }
    auto created = read_etcd_manager_cluster_created(*store);
    if (fmt == OutputFormat::kJson) {
      json j = spec_json(*spec);
      // etcd-manager records that the cluster was created, and usually when (0: it did not say).
      j["clusterCreated"] = created.has_value();
      j["clusterCreatedAt"] = created ? render::time_json(*created / 1000) : json(nullptr);
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << "Cluster spec: " << describe(*spec) << "\n"
              << "Cluster created: " << (created ? (*created ? when(*created) : std::string("yes")) : std::string("no (etcd-manager will create a new cluster)")) << "\n";
  });
}

void add_configure_cluster(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    int member_count = 0;
    std::string etcd_version;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand("configure-cluster",
                                 "set the cluster spec etcd-manager runs (its member count and etcd version), as etcd-manager-ctl does");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("--member-count", f->member_count, "members of the cluster (kept when not given)")->check(CLI::Range(1, 99));
  c->add_option("--etcd-version", f->etcd_version, "etcd version etcd-manager runs, e.g. 3.5.30 (kept when not given)");
  c->callback([f] {
    auto store = f->store.open();
    auto spec = configure_etcd_manager_cluster(*store, {f->member_count, f->etcd_version});
    std::cout << "Cluster spec set: " << describe(spec) << "\n";
  });
}

void add_list_backups(CLI::App& group) {
  auto f = std::make_shared<StoreFlags>();
  auto* c = group.add_subcommand("list-backups", "list the backups etcd-manager sees, and whether it could restore each");
  f->add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto store = f->open();
    auto listed = etcd_manager_listings(*store);
    if (fmt == OutputFormat::kJson) {
      json out = json::array();
      for (const auto& l : listed) {
        out.push_back({{"backup", l.name}, {"restorable", !l.blocker}, {"reason", l.blocker ? json(*l.blocker) : json(nullptr)}});
      }
      std::cout << out.dump(2) << "\n";
      return;
    }
    for (const auto& l : listed) {
      std::cout << l.name << (l.blocker ? "  CANNOT BE RESTORED by etcd-manager: " + *l.blocker : std::string()) << "\n";
    }
  });
}

void add_list_commands(CLI::App& group) {
  auto f = std::make_shared<StoreFlags>();
  auto* c = group.add_subcommand("list-commands", "list the commands queued for etcd-manager (control/*/_command.json)");
  f->add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto store = f->open();
    auto commands = list_etcd_manager_commands(*store);
    if (fmt == OutputFormat::kJson) {
      json out = json::array();
      for (const auto& cmd : commands) {
        json j = {{"key", cmd.key}, {"timestamp", render::time_json(cmd.timestamp_nanos / 1000)}};
        if (cmd.restore_backup) {
          j["restoreBackup"] = {{"backup", cmd.restore_backup->backup}, {"clusterSpec", spec_json(cmd.restore_backup->cluster_spec)}};
        }
        out.push_back(j);
      }
      std::cout << out.dump(2) << "\n";
      return;
    }
    if (commands.empty()) std::cout << "No commands queued in " << store->url() << "\n";
    for (const auto& cmd : commands) {
      std::cout << cmd.key << "  " << when(cmd.timestamp_nanos) << "  ";
      if (cmd.restore_backup) {
        std::cout << "restore-backup " << cmd.restore_backup->backup << " into " << describe(cmd.restore_backup->cluster_spec);
      } else {
        std::cout << "(a command this etcdadm does not know)";
      }
      std::cout << "\n";
    }
  });
}

void add_delete_command(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string what;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand("delete-command",
                                 "remove queued commands: those restoring backup NAME (as etcd-manager-ctl), or the command at KEY");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("what", f->what, "a backup name, or a command's key as list-commands shows it")->required();
  c->callback([f] {
    auto store = f->store.open();
    for (const auto& key : remove_etcd_manager_commands(*store, f->what)) std::cout << "Deleted " << key << "\n";
  });
}

void add_restore_backup(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string query;
    bool skip_verify = false;
    int member_count = 0;
    std::string etcd_version;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand(
      "restore-backup",
      "queue a restore of a backup for etcd-manager (as etcd-manager-ctl restore-backup), after checking that etcd-manager can "
      "restore it and that it is intact");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("backup", f->query, "backup name (or `latest`, a unique prefix, a time)")->required();
  c->add_flag("--skip-verify", f->skip_verify,
              "do not stream the backup to check its hashes first (etcd-manager wipes the cluster before it finds out)");
  c->add_option("--member-count", f->member_count, "restore into this many members (default: the current cluster spec)")
      ->check(CLI::Range(1, 99));
  c->add_option("--etcd-version", f->etcd_version, "restore into this etcd version (default: the current cluster spec)");
  c->callback([f] {
    auto store = f->store.open();
    Catalog catalog = f->store.open_catalog();
    EtcdManagerRestoreRequest request;
    request.query = f->query;
    request.into_overrides = {f->member_count, f->etcd_version};
    request.verify = !f->skip_verify;
    request.command_for = same_command_for(f->query);
    request.etcdadm_restores = read_auto_spec(*store).has_value();
    auto queued = queue_etcd_manager_restore(*store, catalog, request);
    std::cout << "Queued a restore of backup " << queued.backup << (queued.verified ? " (verified intact)" : "") << " into "
              << describe(queued.into) << ": " << store->url() << "/" << queued.command_key << "\n"
              << (queued.etcdadm_restores ? kAutoRestoreHint : kRestartHint) << "\n";
  });
}

void add_check(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    bool fix = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand(
      "check", "find backups etcd-manager lists but could not restore (it would wipe the cluster, then fail); --fix takes them off its list");
  f->store.add_to(c);
  c->add_flag("--fix", f->fix,
              "delete _etcd_backup.meta of those that have etcdadm metadata: etcdadm still lists and restores them");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    auto findings = check_etcd_manager_store(*store, f->fix);
    size_t left = 0;
    json out = json::array();
    for (const auto& x : findings) {
      if (!x.hidden) ++left;
      out.push_back({{"backup", x.name}, {"reason", x.reason}, {"command", x.command_key}, {"hidden", x.hidden}});
      if (fmt == OutputFormat::kTable) {
        std::cout << (x.command_key.empty() ? "backup " + x.name + ": " : "") << x.reason
                  << (x.hidden ? " -> no longer listed to etcd-manager" : "") << "\n";
      }
    }
    if (fmt == OutputFormat::kJson) std::cout << json{{"findings", out}, {"atRisk", left}}.dump(2) << "\n";
    else if (findings.empty()) std::cout << "etcd-manager can restore every backup it lists in " << store->url() << "\n";
    if (left > 0) {
      throw Error(ErrorKind::kCorrupt,
                  std::to_string(left) + " finding(s) in " + store->url() +
                      " would make an etcd-manager restore create an empty cluster and then fail",
                  f->fix ? "delete the queued commands (`etcdadm etcd-manager delete-command NAME`) and the backups etcdadm "
                           "cannot describe by hand"
                         : "run `etcdadm etcd-manager check --fix`");
    }
  });
}

}  // namespace

void add_etcd_manager_commands(CLI::App& app) {
  auto* group = app.add_subcommand("etcd-manager", "the store as kops' etcd-manager reads it: cluster spec, command queue, restores");
  group->require_subcommand(1);
  add_get(*group);
  add_configure_cluster(*group);
  add_list_backups(*group);
  add_list_commands(*group);
  add_delete_command(*group);
  add_restore_backup(*group);
  add_check(*group);
}

}  // namespace etcdadm::cli
