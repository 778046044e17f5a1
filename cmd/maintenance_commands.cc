#include "cmd/maintenance_commands.h"

#include <iostream>
#include <memory>

#include "changelog/heartbeat.h"
#include "cmd/member_flags.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "etcd/client_pool.h"
#include "etcdadm/maintenance/consistency.h"
#include "etcdadm/maintenance/defrag.h"
#include "etcdadm/maintenance/space.h"
#include "etcdadm/member_health.h"
#include "render/alarms.h"
#include "render/defrag.h"
#include "render/hash_survey.h"

namespace etcdadm::cli {

namespace {

struct DefragFlags {
  LocationFlags location;
  PreChangeBackupFlags backup;
  bool cluster = false;
  std::vector<std::string> members;
  std::string endpoints;
  int min_free_percent = 0;
  int64_t min_free_mib = 0;
  std::string timeout = "10m";
  std::string health_timeout = "2m";
  bool dry_run = false;
};

void add_defrag(CLI::App& app) {
  auto f = std::make_shared<DefragFlags>();
  auto* c = app.add_subcommand(
      "defrag",
      "defragment this host's member (or --cluster: every member, followers first, the leader last after its "
      "leadership moved), one at a time, with every member healthy and a backup first");
  f->location.add_to(c);
  c->add_flag("--cluster", f->cluster, "every member of the cluster, one at a time");
  c->add_option("--member", f->members, "this member (name or hex ID; repeatable) instead of this host's");
  c->add_option("--endpoints", f->endpoints, "more members' client URLs, to reach the cluster through");
  c->add_option("--min-free-percent", f->min_free_percent,
                "only members with at least this share of their db file free (size minus size in use)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  c->add_option("--min-free-mib", f->min_free_mib, "and at least this many MiB free")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--timeout", f->timeout, "how long one member's defrag may take")->capture_default_str();
  c->add_option("--health-timeout", f->health_timeout, "how long a member may take to catch up after its defrag")
      ->capture_default_str();
  c->add_flag("--dry-run", f->dry_run, "show the order and what each member holds; change nothing");
  add_output_format_option(c, f->backup.store.output);
  f->backup.add_to(c, "Backup before the defrag");
  c->callback([f] {
    auto fmt = parse_output_format(f->backup.store.output);
    if (f->cluster && !f->members.empty())
      throw Error(ErrorKind::kInvalidArgument, "give --cluster or --member, not both");
    MemberConfig m = f->location.recorded("defrag");
    DefragOptions o;
    o.connection = connection_to(m, cluster_endpoints_of(m, split_endpoints(f->endpoints)));
    o.rule.min_free_fraction = f->min_free_percent / 100.0;
    o.rule.min_free_bytes = f->min_free_mib << 20;
    o.only =
        f->cluster ? std::vector<std::string>{} : (f->members.empty() ? std::vector<std::string>{m.name} : f->members);
    o.defrag_timeout = duration_flag("--timeout", f->timeout, false);
    o.health_timeout = duration_flag("--health-timeout", f->health_timeout, false);
    if (f->dry_run) {
      EtcdClient cluster(o.connection);
      auto plan = plan_defrag(cluster_info(o.connection, 0), list_alarms(cluster), o.rule, o.only);
      if (fmt == OutputFormat::kJson)
        std::cout << render::defrag_plan_json(plan).dump(2) << "\n";
      else
        std::cout << render::defrag_plan_text(plan);
      return;
    }
    o.backup = f->backup.resolve("the defrag");
    const DefragResult r = run_defrag(o);
    if (fmt == OutputFormat::kJson)
      std::cout << render::defrag_result_json(r).dump(2) << "\n";
    else
      std::cout << render::defrag_result_text(r);
  });
}

struct AlarmFlags {
  LocationFlags location;
  PreChangeBackupFlags backup;
  std::string endpoints;
  int64_t keep_revisions = 1000;
  int disarm_below_percent = 90;
  std::string timeout = "10m";
  std::string health_timeout = "2m";
};

void add_alarm(CLI::App& app) {
  auto* alarm = app.add_subcommand("alarm", "etcd's alarms (NOSPACE, CORRUPT): list them, recover from NOSPACE");
  alarm->require_subcommand(1);

  auto lf = std::make_shared<AlarmFlags>();
  auto* list = alarm->add_subcommand("list", "the alarms the cluster has raised");
  lf->location.add_to(list);
  list->add_option("--endpoints", lf->endpoints, "more members' client URLs, to reach the cluster through");
  add_output_format_option(list, lf->backup.store.output);
  list->callback([lf] {
    auto fmt = parse_output_format(lf->backup.store.output);
    MemberConfig m = lf->location.recorded("alarm list");
    EtcdClient cluster(connection_to(m, cluster_endpoints_of(m, split_endpoints(lf->endpoints))));
    const auto alarms = list_alarms(cluster);
    if (fmt == OutputFormat::kJson)
      std::cout << render::alarm_list_json(alarms).dump(2) << "\n";
    else
      std::cout << render::alarm_list_text(alarms);
  });

  auto f = std::make_shared<AlarmFlags>();
  auto* c = alarm->add_subcommand(
      "recover",
      "recover from NOSPACE: a backup, compaction to the current revision minus a margin (never past a running "
      "change log's capture), every member defragmented (the leader last), then the alarm disarmed, only when "
      "every member is then well under its quota");
  f->location.add_to(c);
  c->add_option("--endpoints", f->endpoints, "more members' client URLs, to reach the cluster through");
  c->add_option("--keep-revisions", f->keep_revisions,
                "revisions below the current one kept from compaction (watchers that far behind stay whole)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->add_option("--disarm-below-percent", f->disarm_below_percent,
                "disarm only when every member's db file is then under this share of its quota")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  c->add_option("--timeout", f->timeout, "how long one member's defrag may take")->capture_default_str();
  c->add_option("--health-timeout", f->health_timeout, "how long a member may take to catch up after its defrag")
      ->capture_default_str();
  add_output_format_option(c, f->backup.store.output);
  f->backup.add_to(c, "Backup before the recovery");
  c->callback([f] {
    auto fmt = parse_output_format(f->backup.store.output);
    MemberConfig m = f->location.recorded("alarm recover");
    SpaceRecoveryOptions o;
    o.connection = connection_to(m, cluster_endpoints_of(m, split_endpoints(f->endpoints)));
    o.quota_bytes = m.quota_backend_bytes;
    o.keep_revisions = f->keep_revisions;
    o.headroom = f->disarm_below_percent / 100.0;
    o.defrag_timeout = duration_flag("--timeout", f->timeout, false);
    o.health_timeout = duration_flag("--health-timeout", f->health_timeout, false);
    o.backup = f->backup.resolve("the recovery");
    if (!f->backup.store.store.empty()) {
      // The change log in the store, when a capture writes it now: compaction stops where it is.
      auto store = f->backup.store.open();
      const std::string cluster_id = id_hex(EtcdClient(o.connection).member_list().header().cluster_id());
      o.keep_from_revision =
          changelog::live_capture_revision(*store, cluster_id, to_unix_micros(std::chrono::system_clock::now()));
    }
    const auto r = recover_space(o);
    if (fmt == OutputFormat::kJson)
      std::cout << render::space_recovery_json(r).dump(2) << "\n";
    else
      std::cout << render::space_recovery_text(r);
    if (!r.not_under_quota.empty()) {
      throw Error(ErrorKind::kUnavailable, "the NOSPACE alarm stays armed: the data does not fit the quota",
                  "raise --quota-backend-bytes (see above)");
    }
  });
}

struct HashFlags {
  LocationFlags location;
  std::string endpoints;
  std::string output = "table";
};

void add_hashkv(CLI::App& app) {
  auto f = std::make_shared<HashFlags>();
  auto* c = app.add_subcommand(
      "hashkv",
      "compare every voter's HashKV at one revision they all serve: a member that differs from a majority that "
      "agrees is corrupt and named (exit 5), with how to replace it");
  f->location.add_to(c);
  c->add_option("--endpoints", f->endpoints, "more members' client URLs, to reach the cluster through");
  add_output_format_option(c, f->output);
  c->callback([f] {
    auto fmt = parse_output_format(f->output);
    MemberConfig m = f->location.recorded("hashkv");
    const ConnectionConfig connection = connection_to(m, cluster_endpoints_of(m, split_endpoints(f->endpoints)));
    EtcdClientPool pool(connection);
    const ClusterInfo info = cluster_info(pool, connection.endpoints, 0);
    const HashSurvey survey = survey_hashes(pool, info);
    const HashVerdict verdict = judge_hashes(survey);
    if (fmt == OutputFormat::kJson)
      std::cout << render::hash_survey_json(survey, verdict).dump(2) << "\n";
    else
      std::cout << render::hash_survey_text(survey, verdict);
    switch (verdict.kind) {
      case HashVerdict::Kind::kAgree:
        return;
      case HashVerdict::Kind::kMinorityDiffers:
        throw Error(
            ErrorKind::kCorrupt, "corrupt member: " + verdict.explanation,
            "replace it from the healthy ones (docs/operations.md, \"Runbook: a corrupt member\"): `etcdadm member "
            "remove NAME`, then on its host move its data dir aside and `etcdadm join <a healthy member's client "
            "URL> --name NAME`");
      case HashVerdict::Kind::kNoMajority:
        throw Error(ErrorKind::kCorrupt, verdict.explanation,
                    "no member can be trusted over the others: restore the cluster from a verified backup "
                    "(docs/operations.md)");
      case HashVerdict::Kind::kIncomplete:
        break;
    }
    throw Error(ErrorKind::kUnavailable, verdict.explanation, "run it again once every voter is healthy");
  });
}

}  // namespace

void add_maintenance_commands(CLI::App& app) {
  add_defrag(app);
  add_alarm(app);
  add_hashkv(app);
}

}  // namespace etcdadm::cli
