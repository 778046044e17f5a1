#include "cmd/etcd_manager_commands.h"

#include <iostream>
#include <memory>

#include "cmd/invocation.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "controller/records.h"
#include "controller/status.h"
#include "etcdadm/member_config.h"
#include "render/auto_control.h"
#include "render/etcd_manager.h"
#include "restore/etcd_manager_restore.h"
#include "store/etcd_manager.h"

namespace etcdadm::cli {

namespace {

void add_get(CLI::App& group) {
  auto f = std::make_shared<StoreFlags>();
  auto* c = group.add_subcommand("get", "show the cluster spec etcd-manager runs (control/etcd-cluster-spec)");
  f->add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto store = f->open();
    auto spec = read_etcd_manager_cluster_spec(*store);
    if (!spec) {
      throw Error(ErrorKind::kNotFound,
                  "no etcd-manager cluster spec in " + store->url() + " (control/etcd-cluster-spec)",
                  "is --store the store etcd-manager backs up to (kops: s3://BUCKET/CLUSTER/backups/etcd/main)? "
                  "`etcdadm etcd-manager configure-cluster` writes one");
    }
    auto created = read_etcd_manager_cluster_created(*store);
    if (fmt == OutputFormat::kJson)
      std::cout << render::cluster_spec_json(*spec, created).dump(2) << "\n";
    else
      std::cout << render::cluster_spec_text(*spec, created);
  });
}

void add_configure_cluster(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    int member_count = 0;
    std::string etcd_version;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand(
      "configure-cluster",
      "set the cluster spec etcd-manager runs (its member count and etcd version), as etcd-manager-ctl does");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("--member-count", f->member_count, "members of the cluster (kept when not given)")
      ->check(CLI::Range(1, 99));
  c->add_option("--etcd-version", f->etcd_version, "etcd version etcd-manager runs, e.g. 3.5.30 (kept when not given)");
  c->callback([f] {
    auto store = f->store.open();
    auto spec = configure_etcd_manager_cluster(*store, {f->member_count, f->etcd_version});
    std::cout << render::configured_cluster_spec_text(spec);
  });
}

void add_list_backups(CLI::App& group) {
  auto f = std::make_shared<StoreFlags>();
  auto* c =
      group.add_subcommand("list-backups", "list the backups etcd-manager sees, and whether it could restore each");
  f->add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto store = f->open();
    auto listed = etcd_manager_listings(*store);
    if (fmt == OutputFormat::kJson)
      std::cout << render::etcd_manager_listings_json(listed).dump(2) << "\n";
    else
      std::cout << render::etcd_manager_listings_text(listed);
  });
}

void add_list_commands(CLI::App& group) {
  auto f = std::make_shared<StoreFlags>();
  auto* c =
      group.add_subcommand("list-commands", "list the commands queued for etcd-manager (control/*/_command.json)");
  f->add_to(c);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    auto store = f->open();
    auto commands = list_etcd_manager_commands(*store);
    if (fmt == OutputFormat::kJson)
      std::cout << render::etcd_manager_commands_json(commands).dump(2) << "\n";
    else
      std::cout << render::etcd_manager_commands_text(commands, store->url());
  });
}

void add_delete_command(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string what;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand(
      "delete-command",
      "remove queued commands: those restoring backup NAME (as etcd-manager-ctl), or the command at KEY");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("what", f->what, "a backup name, or a command's key as list-commands shows it")->required();
  c->callback([f] {
    auto store = f->store.open();
    std::cout << render::deleted_commands_text(remove_etcd_manager_commands(*store, f->what));
  });
}

void add_restore_backup(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    std::string query;
    bool skip_verify = false;
    int member_count = 0;
    std::string etcd_version;
    std::string certs_dir = MemberConfig{}.certs_dir;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand("restore-backup",
                                 "queue a restore of a backup for etcd-manager (as etcd-manager-ctl restore-backup), "
                                 "after checking that etcd-manager can "
                                 "restore it and that it is intact");
  f->store.add_to(c, /*with_output=*/false);
  c->add_option("backup", f->query, "backup name (or `latest`, a unique prefix, a time)")->required();
  c->add_flag(
      "--skip-verify", f->skip_verify,
      "do not stream the backup to check its hashes first (etcd-manager wipes the cluster before it finds out)");
  c->add_option("--member-count", f->member_count, "restore into this many members (default: the current cluster spec)")
      ->check(CLI::Range(1, 99));
  c->add_option("--etcd-version", f->etcd_version,
                "restore into this etcd version (default: the current cluster spec)");
  c->add_option("--certs-dir", f->certs_dir,
                "where the cluster's ca.key is, for a store whose hosts run `etcdadm auto`: the restore is approved "
                "with it (their controllers carry out no other)")
      ->capture_default_str();
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
    std::cout << render::queued_restore_text(queued, store->url());
    if (queued.etcdadm_restores) {
      const RecordKeyring keyring = RecordKeyring::of_certs_dir(f->certs_dir);
      if (!keyring.can_sign()) {
        std::cout << render::restore_unapproved_text(queued, f->certs_dir);
        return;
      }
      std::cout << render::restore_approved_text(approve_restore_command(
          store, catalog, queued.command_key, keyring, user_at_host(),
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
          queued.db_sha256));
    }
  });
}

void add_check(CLI::App& group) {
  struct Flags {
    StoreFlags store;
    bool fix = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = group.add_subcommand("check",
                                 "find backups etcd-manager lists but could not restore (it would wipe the cluster, "
                                 "then fail); --fix takes them off its list");
  f->store.add_to(c);
  c->add_flag("--fix", f->fix,
              "delete _etcd_backup.meta of those that have etcdadm metadata: etcdadm still lists and restores them");
  c->callback([f] {
    auto fmt = parse_output_format(f->store.output);
    auto store = f->store.open();
    auto findings = check_etcd_manager_store(*store, f->fix);
    size_t left = 0;
    for (const auto& x : findings) left += x.hidden ? 0 : 1;
    if (fmt == OutputFormat::kJson)
      std::cout << render::etcd_manager_check_json(findings, left).dump(2) << "\n";
    else
      std::cout << render::etcd_manager_check_text(findings, store->url());
    if (left > 0) {
      throw Error(
          ErrorKind::kCorrupt,
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
  auto* group = app.add_subcommand("etcd-manager",
                                   "the store as kops' etcd-manager reads it: cluster spec, command queue, restores");
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
