#include "cmd/lifecycle_commands.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "backup/member_select.h"
#include "backup/pre_change.h"
#include "cmd/invocation.h"
#include "cmd/member_flags.h"
#include "cmd/output.h"
#include "cmd/restore_flags.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/text.h"
#include "etcd/client.h"
#include "etcdadm/lifecycle/init_join.h"
#include "etcdadm/lifecycle/local_member.h"
#include "etcdadm/lifecycle/reset.h"
#include "etcdadm/member_health.h"
#include "etcdadm/member_remove.h"
#include "etcdadm/release/install.h"
#include "etcdadm/upgrade/upgrade.h"
#include "render/member_lifecycle.h"
#include "render/release_install.h"
#include "render/upgrade.h"
#include "restore/damage.h"
#include "restore/member_restore.h"
#include "restore/new_cluster.h"
#include "restore/recover.h"
#include "restore/resolve.h"

namespace etcdadm::cli {

namespace {

void print_lifecycle_result(const char* verb, const LifecycleOptions& o, const LifecycleResult& r, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson)
    std::cout << render::lifecycle_result_json(o.member, r).dump(2) << "\n";
  else
    std::cout << render::lifecycle_result_text(verb, o.member, r);
}

struct InitFlags {
  MemberFlags member;
  std::string token;
  std::string snapshot;
  bool skip_hash_check = false;
  std::string from_backup;
  StoreFlags store;
  RestoreMethod restore;
  std::string to_revision, to_time;
  std::string initial_cluster;
};

void add_init_flags(CLI::App* c, InitFlags& f) {
  f.member.add_to(c);
  auto* g = c->add_option_group("Starting from a backup");
  g->add_option("--initial-cluster-token", f.token, "token of the new cluster (default: a fresh random one)");
  g->add_option("--initial-cluster", f.initial_cluster,
                "with --from-backup/--snapshot: restore the whole cluster at once (name=peerURL,... of every member, "
                "this one's included): run the same init on every host with the same backup and "
                "--initial-cluster-token; quorum as soon as a majority runs, no join needed");
  g->add_option("--snapshot", f.snapshot, "start the first member from this snapshot file (etcdctl snapshot save)");
  g->add_flag("--skip-hash-check", f.skip_hash_check,
              "accept a --snapshot without SHA-256 trailer (a db copied from a data dir)");
  g->add_option("--from-backup", f.from_backup,
                "start the first member from this backup (name, prefix or 'latest') in --store");
  g->add_option("--to-revision", f.to_revision,
                "with --from-backup: the backup's change log replayed up to exactly this revision (with 'latest': the "
                "newest backup at or before it whose log reaches it); 'end': as far as the change log reaches");
  g->add_option(
      "--to-time", f.to_time,
      "with --from-backup: the state at this time (RFC 3339, or relative: -10m): every revision received by then");
  f.store.add_to(g, /*with_output=*/false);
  f.store.add_key_flags(c, /*identities=*/true);
  add_restore_method_flags(g, f.restore);
}

void run_init_command(const InitFlags& f, const std::string& phase) {
  auto fmt = parse_output_format(f.member.output);
  LifecycleOptions o = f.member.options();
  o.initial_cluster_token = f.token;
  if (!f.initial_cluster.empty()) {
    // Checked whole now, before anything is fetched or installed: the restore plans the same cluster.
    NewCluster planned = plan_new_cluster(f.initial_cluster, f.token.empty() ? "check" : f.token);
    const NewMember& self = planned.member(o.member.name);
    if (std::find(self.peer_urls.begin(), self.peer_urls.end(), o.member.peer_url()) == self.peer_urls.end()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--initial-cluster gives " + o.member.name + " the peer URL " + join_list(self.peer_urls) +
                      ", but this member's is " + o.member.peer_url(),
                  "use this host's --bind-address and --peer-port in its entry");
    }
    o.initial_cluster = f.initial_cluster;
  }
  if (!f.snapshot.empty() && !f.from_backup.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "give at most one of --snapshot and --from-backup");
  }
  if (f.snapshot.empty() && f.from_backup.empty() && f.restore.any_given()) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "--restore-with, --bump-revision, --mark-compacted and --keep-revision go with --snapshot or --from-backup");
  }
  PointInTime pit = point_in_time_from_flags(f.to_revision, f.to_time, std::chrono::system_clock::now());
  if (pit.given() && f.from_backup.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "--to-revision and --to-time go with --from-backup (they replay its change log)");
  }
  if (!f.snapshot.empty()) {
    if (!path_exists(f.snapshot)) throw Error(ErrorKind::kNotFound, "snapshot " + f.snapshot + " does not exist");
    o.restore_snapshot =
        snapshot_file_restorer(absolute_path(f.snapshot), f.skip_hash_check, o.member.version, f.restore);
  } else if (!f.from_backup.empty()) {
    if (f.store.store.empty()) throw Error(ErrorKind::kInvalidArgument, "--from-backup needs --store");
    BackupStore store = f.store.open();
    Catalog catalog = f.store.open_catalog();
    // Resolved now, before anything is installed, so a wrong name fails first.
    BackupRecord backup = find_backup_for(*store, catalog, f.from_backup, pit);
    // Fetched and checked whole now (and the change log replayed onto it), before etcd is
    // installed or a certificate issued: a damaged backup or segment costs nothing but this
    // message, and the restore reads the verified copy.
    with_damage_recorded(
        *store, catalog, backup,
        [&] {
          o.restore_snapshot =
              prefetched_backup_restorer(store, backup, o.member.data_dir, o.member.version, f.restore, pit);
        },
        same_command_for(f.from_backup));
    spdlog::info("starting from backup {} in {} (verified)", backup.name, f.store.store);
  }
  auto r = run_init(o, phase);
  print_lifecycle_result("Initialized", o, r, fmt);
}

struct JoinFlags {
  MemberFlags member;
  std::string endpoint;
  bool retry = true;
  std::string replace;
  bool force_replace = false;
};

void add_join_flags(CLI::App* c, JoinFlags& f) {
  c->add_option("endpoint", f.endpoint, "client URL of a member of the cluster, e.g. https://10.0.0.1:2379");
  f.member.add_to(c);
  c->add_flag("--retry,!--no-retry", f.retry, "retry transient failures with backoff (default true; --retry=false)");
  c->add_option("--promote-timeout", f.member.promote_timeout, "how long the learner may take to catch up")
      ->capture_default_str();
  auto* g = c->add_option_group("Replacing a failed member");
  g->add_option("--replace", f.replace,
                "take the place of this failed member (name or hex ID): it is removed through a healthy member "
                "first, if the cluster keeps quorum without it");
  g->add_flag("--force-replace", f.force_replace, "with --replace: also when that member still answers");
}

void run_join_command(const JoinFlags& f, const std::string& phase) {
  auto fmt = parse_output_format(f.member.output);
  if (f.endpoint.empty())
    throw Error(ErrorKind::kInvalidArgument, "no endpoint given", "etcdadm join https://<member>:2379");
  LifecycleOptions o = f.member.options();
  o.join_endpoint = f.endpoint;
  o.retry = f.retry;
  o.replace = f.replace;
  o.force_replace = f.force_replace;
  if (f.force_replace && f.replace.empty())
    throw Error(ErrorKind::kInvalidArgument, "--force-replace goes with --replace");
  auto r = run_join(o, phase);
  print_lifecycle_result("Joined", o, r, fmt);
}

// The first option given on the command line to `app` itself or its option groups (which CLI11
// keeps as nameless subcommands), not to its named subcommands.
const CLI::Option* first_given_option(CLI::App* app) {
  for (const auto* opt : app->get_options()) {
    if (opt->count() > 0) return opt;
  }
  for (auto* group : app->get_subcommands([](CLI::App* a) { return a->get_name().empty(); })) {
    if (const auto* opt = first_given_option(group)) return opt;
  }
  return nullptr;
}

// `<verb>` runs every phase; `<verb> phase <name>` one of them, with the same flags.
template <typename Flags>
void add_phased_command(CLI::App& app, const char* verb, const char* description, const std::vector<Phase>& phases,
                        void (*add_flags)(CLI::App*, Flags&), void (*run)(const Flags&, const std::string&)) {
  auto f = std::make_shared<Flags>();
  auto* c = app.add_subcommand(verb, description);
  add_flags(c, *f);
  auto* phase_cmd = c->add_subcommand("phase", "run one phase on its own");
  phase_cmd->require_subcommand(1);
  for (const auto& p : phases) {
    auto pf = std::make_shared<Flags>();
    auto* pc = phase_cmd->add_subcommand(p.name, p.description);
    add_flags(pc, *pf);
    pc->callback([pf, run, c, verb, name = p.name] {
      // Flags belong to the phase (`init phase certificates --certs-dir X`); given before `phase`
      // they would be silently ignored and the phase would act on the defaults. (This runs before
      // the parent's callback, so the check is here.)
      if (const CLI::Option* given = first_given_option(c)) {
        throw Error(ErrorKind::kInvalidArgument, given->get_name() + " was given before `phase`",
                    std::string("put the flags after the phase name: etcdadm ") + verb + " phase <name> [flags]");
      }
      run(*pf, name);
    });
  }
  c->callback([f, c, run] {
    if (c->got_subcommand("phase")) return;  // the phase's own callback ran it
    run(*f, "");
  });
}

void add_reset(CLI::App& app) {
  struct Flags {
    LocationFlags location;
    ResetOptions reset;
    std::string endpoints;
  };
  auto f = std::make_shared<Flags>();
  auto* c = app.add_subcommand(
      "reset", "remove this host's member from the cluster and delete its data, config and certificates");
  f->location.add_to(c);
  c->add_flag("--skip-remove-member", f->reset.skip_remove_member, "do not remove the member from the cluster");
  c->add_flag("--force", f->reset.force, "also reset the last member of a cluster (its data is gone afterwards)");
  c->add_flag("--remove-ca", f->reset.remove_ca, "delete ca.crt and ca.key too");
  c->add_flag("--remove-binaries", f->reset.remove_binaries, "delete etcd, etcdctl and etcdutl from --install-dir");
  c->add_flag("--keep-data", f->reset.keep_data,
              "set the data dir aside (renamed to <data-dir>.set-aside-reset-<time>) instead of deleting it: a "
              "member whose cluster was recovered elsewhere, before it joins that cluster");
  c->add_option("--endpoints", f->endpoints,
                "other members' client URLs, to reach the cluster when this member is down");
  c->callback([f] {
    // Without a member to reset, the defaults (the host name, /var/lib/etcd) are nobody's: a reset
    // of them said "Reset member <host>" and exited 0, having done nothing, or worse.
    if (!f->location.names_a_member()) {
      throw f->location.no_member_state("",
                                        "point --config-dir at the member's config dir, or give --name and "
                                        "--data-dir to reset what is left of a member whose state file is gone");
    }
    ResetOptions o = f->reset;
    o.member = f->location.located();
    o.endpoints = split_endpoints(f->endpoints);
    auto r = run_reset(o);
    std::cout << render::reset_result_text(o.member, r);
  });
}

void add_recover(CLI::App& app) {
  struct Flags {
    LocationFlags location;
    RecoverOptions recover;
    StoreFlags store;
  };
  auto f = std::make_shared<Flags>();
  auto* c = app.add_subcommand(
      "recover",
      "when most members are gone for good: make this host's surviving member a cluster of one from its own "
      "data (etcd's --force-new-cluster for one start; its data dir copied aside first), then join the others "
      "to it. With --store, when the change log there reaches further than the member, from the member's db plus "
      "the log after it. Refused while a quorum answers");
  f->location.add_to(c);
  f->store.add_to(c, /*with_output=*/false);
  c->add_flag("--force", f->recover.force,
              "recover here even though another member that answers is further along (what it has more is lost)");
  c->callback([f] {
    if (!f->location.names_a_member()) {
      throw f->location.no_member_state("", "point --config-dir at the surviving member's config dir");
    }
    RecoverOptions o = f->recover;
    o.member = f->location.located();
    if (!f->store.store.empty()) o.store = f->store.open();
    std::cout << render::recover_result_text(o.member, run_recover(o));
  });
}

void add_info(CLI::App& app) {
  struct Flags {
    LocationFlags location;
    std::string output = "table";
  };
  auto f = std::make_shared<Flags>();
  auto* c = app.add_subcommand("info", "this host's member and the cluster: members, leader, versions, db sizes");
  f->location.add_to(c);
  add_output_format_option(c, f->output);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    MemberConfig m = f->location.recorded("info");
    ConnectionConfig conn = local_connection(m);
    uint64_t local_id = 0;
    try {
      local_id = EtcdClient(conn).status(m.loopback_client_url()).header().member_id();
    } catch (const Error& e) {
      spdlog::warn("the local member does not answer ({}): asking the others", e.what());
    }
    conn.endpoints = cluster_endpoints_of(m, {});
    ClusterInfo info = cluster_info(conn, local_id);
    if (fmt == OutputFormat::kJson)
      std::cout << render::cluster_info_json(m, info).dump(2) << "\n";
    else
      std::cout << render::cluster_info_text(m, info);
  });
}

void add_download(CLI::App& app) {
  struct Flags {
    ReleaseFlags release;
    std::string install_dir = "/opt/bin";
    bool cache_only = false;
  };
  auto f = std::make_shared<Flags>();
  auto* c = app.add_subcommand("download", "download, verify and install etcd, etcdctl and etcdutl");
  f->release.add_to(c);
  c->add_option("--install-dir", f->install_dir, "where the binaries go")->capture_default_str();
  c->add_flag("--cache-only", f->cache_only, "only fetch and verify the tarball into the cache");
  c->callback([f] {
    ReleaseSpec spec = f->release.resolved();
    if (f->cache_only) {
      std::cout << render::release_cached_text(download_release(spec));
      return;
    }
    auto r = install_release(spec, f->install_dir);
    std::cout << render::release_installed_text(r);
  });
}

// ---- upgrade plan | apply | rollback ----

void print_upgrade_result(const char* verb, const MemberConfig& m, const UpgradeResult& r, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson)
    std::cout << render::upgrade_result_json(r, m.name).dump(2) << "\n";
  else
    std::cout << render::upgrade_result_text(verb, m.name, r);
}

struct UpgradeFlags {
  LocationFlags location;
  ReleaseFlags release;
  PreChangeBackupFlags backup;
  std::string endpoints;
  bool allow_downtime = false;
  std::string health_timeout = "5m";

  void add_common(CLI::App* c) {
    location.add_to(c);
    release.add_to(c);
    c->add_option("--endpoints", endpoints, "more members' client URLs, to reach the cluster through");
    c->add_flag("--allow-downtime", allow_downtime,
                "a one-member cluster: accept that it is unavailable while its member restarts");
    c->add_option("--health-timeout", health_timeout,
                  "how long the restarted member may take to be healthy and caught up")
        ->capture_default_str();
    add_output_format_option(c, backup.store.output);
  }

  UpgradeOptions options(bool with_backup) const {
    UpgradeOptions o;
    o.member = location.recorded("upgrade");
    o.release = release.resolved();
    o.endpoints = split_endpoints(endpoints);
    o.allow_downtime = allow_downtime;
    o.health_timeout = duration_flag("--health-timeout", health_timeout, false);
    if (with_backup) o.backup = backup.resolve("the change");
    return o;
  }
};

void add_upgrade_apply_flags(CLI::App* c, UpgradeFlags& f) {
  f.add_common(c);
  f.backup.add_to(c, "Backup before the change");
}

void run_upgrade_apply(const UpgradeFlags& f, const std::string& phase) {
  auto fmt = parse_output_format(f.backup.store.output);
  if (f.release.version.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "no --version given", "etcdadm upgrade plan --version V shows the steps");
  }
  UpgradeOptions o = f.options(/*with_backup=*/true);
  auto r = run_upgrade(o, phase);
  print_upgrade_result("Changed", o.member, r, fmt);
}

void add_upgrade(CLI::App& app) {
  auto* upgrade =
      app.add_subcommand("upgrade", "change the etcd version of the members, one at a time, keeping quorum");
  upgrade->require_subcommand(1);

  auto pf = std::make_shared<UpgradeFlags>();
  auto* plan = upgrade->add_subcommand(
      "plan", "the members, their versions, whether the step to --version is allowed, and the order");
  pf->add_common(plan);
  auto* pg = plan->add_option_group("The backup each apply takes");
  pf->backup.store.add_to(pg, /*with_output=*/false);
  pg->add_option("--max-backup-age", pf->backup.max_backup_age, "as for apply: a backup this recent is reused")
      ->capture_default_str();
  plan->callback([pf] {
    auto fmt = parse_output_format(pf->backup.store.output);
    if (pf->release.version.empty()) throw Error(ErrorKind::kInvalidArgument, "no --version given");
    MemberConfig m = pf->location.recorded("upgrade plan");
    auto p = plan_upgrade(m, pf->release.version, split_endpoints(pf->endpoints));
    std::string backup_note = "each apply takes a backup of the cluster into --store first (give --store to see it)";
    if (!pf->backup.store.store.empty()) {
      auto store = pf->backup.store.open();
      Catalog catalog = pf->backup.store.open_catalog();
      auto max_age = duration_flag("--max-backup-age", pf->backup.max_backup_age, true);
      auto recent = recent_backup_of(*store, catalog, id_hex(p.survey.info.cluster_id), max_age);
      backup_note = recent ? "each apply reuses backup " + recent->name + " of this cluster in " + store->url() +
                                 " while it is younger than " + pf->backup.max_backup_age
                           : "each apply takes a new backup of the cluster into " + store->url() + " first";
    }
    if (fmt == OutputFormat::kJson)
      std::cout << render::upgrade_plan_json(p, backup_note).dump(2) << "\n";
    else
      std::cout << render::upgrade_plan_text(p, backup_note);
    if (!p.allowed) {
      throw Error(ErrorKind::kInvalidArgument,
                  "the cluster cannot move to etcd " + p.target.str() + " now: " + p.problems.front());
    }
  });

  add_phased_command<UpgradeFlags>(*upgrade, "apply",
                                   "move this host's member to --version: check, back up, install, restart, wait",
                                   upgrade_phases(), add_upgrade_apply_flags, run_upgrade_apply);

  auto rf = std::make_shared<UpgradeFlags>();
  auto* rollback = upgrade->add_subcommand(
      "rollback", "put this host's member back on the version it ran before its last upgrade (while etcd allows it)");
  rf->add_common(rollback);
  rollback->callback([rf] {
    auto fmt = parse_output_format(rf->backup.store.output);
    UpgradeOptions o = rf->options(/*with_backup=*/false);
    auto r = run_upgrade_rollback(o);
    print_upgrade_result("Rolled back", o.member, r, fmt);
  });
}

void add_member(CLI::App& app) {
  struct Flags {
    LocationFlags location;
    MemberRemoveOptions remove;
    std::string endpoints;
    std::string output = "table";
  };
  auto* member = app.add_subcommand("member", "change the cluster's membership");
  member->require_subcommand(1);
  auto f = std::make_shared<Flags>();
  auto* c = member->add_subcommand(
      "remove", "remove a failed member (its host is gone) through this host's member, if the cluster keeps quorum");
  c->add_option("member", f->remove.target, "the member's name or hex ID (etcdadm info)")->required();
  f->location.add_to(c);
  c->add_flag("--force", f->remove.force, "also a member that still answers (it stops once it learns of its removal)");
  c->add_option("--endpoints", f->endpoints, "more members' client URLs, to reach the cluster through");
  add_output_format_option(c, f->output);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    MemberRemoveOptions o = f->remove;
    o.member = f->location.recorded("member remove");
    o.endpoints = split_endpoints(f->endpoints);
    auto r = run_member_remove(o);
    if (fmt == OutputFormat::kJson)
      std::cout << render::member_removed_json(r).dump(2) << "\n";
    else
      std::cout << render::member_removed_text(r);
  });
}

}  // namespace

void add_lifecycle_commands(CLI::App& app) {
  add_phased_command<InitFlags>(app, "init", "create the first member of a new cluster (or restore one from a backup)",
                                init_phases(), add_init_flags, run_init_command);
  add_phased_command<JoinFlags>(app, "join", "add this host as a new member of an existing cluster", join_phases(),
                                add_join_flags, run_join_command);
  add_reset(app);
  add_recover(app);
  add_info(app);
  add_download(app);
  add_upgrade(app);
  add_member(app);
}

}  // namespace etcdadm::cli
