#include "cmd/maintenance_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cmd/member_flags.h"
#include "cmd/output.h"
#include "cmd/store_flags.h"
#include "common/error.h"
#include "etcd/client_pool.h"
#include "common/text.h"
#include "changelog/heartbeat.h"
#include "common/timefmt.h"
#include "etcdadm/maintenance/consistency.h"
#include "etcdadm/maintenance/defrag.h"
#include "etcdadm/maintenance/space.h"
#include "etcdadm/member_health.h"

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

std::string role_of(const MemberInfo& m) { return m.learner ? "learner" : (m.leader ? "leader" : "follower"); }

void print_plan(const DefragPlan& plan, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& e : plan.members) {
      members.push_back({{"memberId", id_hex(e.member.id)},
                         {"name", e.member.name},
                         {"role", role_of(e.member)},
                         {"dbSize", e.member.db_size},
                         {"dbSizeInUse", e.member.db_size_in_use},
                         {"due", e.due},
                         {"why", e.why}});
    }
    std::cout << nlohmann::json{{"clusterId", id_hex(plan.info.cluster_id)}, {"problems", plan.problems}, {"members", members}}
                     .dump(2)
              << "\n";
    return;
  }
  std::printf("%-5s  %-12s  %-16s  %-8s  %s\n", "ORDER", "NAME", "ID", "ROLE", "DB");
  int order = 0;
  for (const auto& e : plan.members) {
    std::printf("%-5s  %-12s  %-16s  %-8s  %s\n", e.due ? std::to_string(++order).c_str() : "-", e.member.name.c_str(),
                id_hex(e.member.id).c_str(), role_of(e.member).c_str(), e.why.c_str());
  }
  for (const auto& p : plan.problems) std::cout << "Not now: " << p << "\n";
  std::cout.flush();
}

void print_result(const DefragResult& r, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : r.members) {
      members.push_back({{"memberId", id_hex(m.id)},
                         {"name", m.name},
                         {"led", m.led},
                         {"leadershipMovedTo", m.leadership_moved_to},
                         {"dbSizeBefore", m.db_size_before},
                         {"dbSizeInUseBefore", m.in_use_before},
                         {"dbSizeAfter", m.db_size_after},
                         {"dbSizeInUseAfter", m.in_use_after},
                         {"stalledMs", m.stalled.count()},
                         {"caughtUpMs", m.caught_up.count()}});
    }
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& e : r.plan.members) {
      if (!e.due) skipped.push_back({{"memberId", id_hex(e.member.id)}, {"name", e.member.name}, {"why", e.why}});
    }
    std::cout << nlohmann::json{{"clusterId", id_hex(r.plan.info.cluster_id)},
                                {"backup", r.backup},
                                {"members", members},
                                {"skipped", skipped}}
                     .dump(2)
              << "\n";
    return;
  }
  if (r.members.empty()) {
    std::cout << "No member needed a defrag:\n";
    for (const auto& e : r.plan.members) std::cout << "  " << e.member.name << ": " << e.why << "\n";
    std::cout.flush();
    return;
  }
  if (!r.backup.empty()) std::cout << "Backup before the defrag: " << r.backup << "\n";
  std::printf("%-12s  %-16s  %-10s  %-10s  %-10s  %-9s  %s\n", "NAME", "ID", "DB BEFORE", "IN USE", "DB AFTER", "STALL",
              "NOTE");
  for (const auto& m : r.members) {
    std::string note = m.led ? (m.leadership_moved_to.empty() ? "the only voter: writes waited"
                                                              : "led: leadership moved to " + m.leadership_moved_to)
                             : "";
    std::printf("%-12s  %-16s  %-10s  %-10s  %-10s  %-9s  %s\n", m.name.c_str(), id_hex(m.id).c_str(),
                human_bytes(m.db_size_before).c_str(), human_bytes(m.in_use_before).c_str(),
                human_bytes(m.db_size_after).c_str(), fmt::format("{} ms", m.stalled.count()).c_str(), note.c_str());
  }
  for (const auto& e : r.plan.members) {
    if (!e.due) std::cout << "Left as it was: " << e.member.name << ": " << e.why << "\n";
  }
  std::cout.flush();
}

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
  c->add_option("--min-free-mib", f->min_free_mib, "and at least this many MiB free")->capture_default_str()->check(
      CLI::NonNegativeNumber);
  c->add_option("--timeout", f->timeout, "how long one member's defrag may take")->capture_default_str();
  c->add_option("--health-timeout", f->health_timeout, "how long a member may take to catch up after its defrag")
      ->capture_default_str();
  c->add_flag("--dry-run", f->dry_run, "show the order and what each member holds; change nothing");
  add_output_format_option(c, f->backup.store.output);
  f->backup.add_to(c, "Backup before the defrag");
  c->callback([f] {
    auto fmt = parse_output_format(f->backup.store.output);
    if (f->cluster && !f->members.empty()) throw Error(ErrorKind::kInvalidArgument, "give --cluster or --member, not both");
    MemberConfig m = f->location.recorded("defrag");
    DefragOptions o;
    o.connection = connection_to(m, cluster_endpoints_of(m, split_endpoints(f->endpoints)));
    o.rule.min_free_fraction = f->min_free_percent / 100.0;
    o.rule.min_free_bytes = f->min_free_mib << 20;
    o.only = f->cluster ? std::vector<std::string>{} : (f->members.empty() ? std::vector<std::string>{m.name} : f->members);
    o.defrag_timeout = duration_flag("--timeout", f->timeout, false);
    o.health_timeout = duration_flag("--health-timeout", f->health_timeout, false);
    if (f->dry_run) {
      EtcdClient cluster(o.connection);
      auto plan = plan_defrag(cluster_info(o.connection, 0), list_alarms(cluster), o.rule, o.only);
      print_plan(plan, fmt);
      return;
    }
    o.backup = f->backup.resolve("the defrag");
    print_result(run_defrag(o), fmt);
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

void print_recovery(const SpaceRecoveryResult& r, OutputFormat fmt) {
  if (fmt == OutputFormat::kJson) {
    nlohmann::json alarms = nlohmann::json::array();
    for (const auto& a : r.alarms) alarms.push_back({{"memberId", id_hex(a.member_id)}, {"alarm", a.alarm}});
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : r.defrag.members) {
      members.push_back({{"memberId", id_hex(m.id)},
                         {"name", m.name},
                         {"dbSizeBefore", m.db_size_before},
                         {"dbSizeAfter", m.db_size_after},
                         {"stalledMs", m.stalled.count()}});
    }
    std::cout << nlohmann::json{{"alarms", alarms},
                                {"backup", r.backup},
                                {"revision", r.revision},
                                {"compactedTo", r.compacted_to},
                                {"compaction", r.compaction_note},
                                {"defragmented", members},
                                {"largestDbBefore", r.largest_db_before},
                                {"largestDbAfter", r.largest_db_after},
                                {"quota", r.quota},
                                {"disarmed", r.disarmed},
                                {"notUnderQuota", r.not_under_quota}}
                     .dump(2)
              << "\n";
    return;
  }
  if (r.alarms.empty() || r.revision == 0) {
    std::cout << (r.alarms.empty() ? std::string("No alarm is raised.") : "No NOSPACE alarm (" + alarms_text(r.alarms) + ").")
              << "\n";
    return;
  }
  std::cout << "Alarms: " << alarms_text(r.alarms) << "\n";
  if (!r.backup.empty()) std::cout << "Backup first: " << r.backup << "\n";
  std::cout << "Compaction: " << (r.compacted_to > 0 ? "to revision " + std::to_string(r.compacted_to) + " (" + r.compaction_note + ")"
                                                     : r.compaction_note)
            << "\n";
  for (const auto& m : r.defrag.members) {
    std::cout << "Defragmented " << m.name << ": " << human_bytes(m.db_size_before) << " -> " << human_bytes(m.db_size_after)
              << " (" << m.stalled.count() << " ms)\n";
  }
  std::cout << "Largest db file: " << human_bytes(r.largest_db_before) << " -> " << human_bytes(r.largest_db_after)
            << " of a quota of " << human_bytes(r.quota) << "\n";
  std::cout << (r.disarmed ? "NOSPACE disarmed: writes are accepted again." : "NOT disarmed: " + r.not_under_quota) << "\n";
  std::cout.flush();
}

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
    if (fmt == OutputFormat::kJson) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& a : alarms) out.push_back({{"memberId", id_hex(a.member_id)}, {"alarm", a.alarm}});
      std::cout << out.dump(2) << "\n";
      return;
    }
    if (alarms.empty()) std::cout << "No alarm is raised.\n";
    for (const auto& a : alarms) std::cout << a.alarm << " on member " << id_hex(a.member_id) << "\n";
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
      o.keep_from_revision = changelog::live_capture_revision(*store, cluster_id, to_unix_micros(std::chrono::system_clock::now()));
    }
    const auto r = recover_space(o);
    print_recovery(r, fmt);
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
    auto differs = [&](uint64_t id) {
      return std::find(verdict.differing.begin(), verdict.differing.end(), id) != verdict.differing.end();
    };
    if (fmt == OutputFormat::kJson) {
      nlohmann::json members = nlohmann::json::array();
      for (const auto& h : survey.members) {
        members.push_back({{"memberId", id_hex(h.member_id)},
                           {"member", h.label},
                           {"hash", h.answered ? nlohmann::json(h.hash) : nlohmann::json(nullptr)},
                           {"compactRevision", h.compact_revision},
                           {"error", h.error},
                           {"differs", differs(h.member_id)}});
      }
      static const char* const kKinds[] = {"agree", "minority-differs", "no-majority", "incomplete"};
      std::cout << nlohmann::json{{"revision", survey.revision},
                                  {"verdict", kKinds[static_cast<int>(verdict.kind)]},
                                  {"explanation", verdict.explanation},
                                  {"members", members}}
                       .dump(2)
                << "\n";
    } else {
      std::printf("%-28s  %-12s  %s\n", "MEMBER", "HASHKV", "COMPACTED AT");
      for (const auto& h : survey.members) {
        std::printf("%-28s  %-12s  %s%s\n", h.label.c_str(), h.answered ? std::to_string(h.hash).c_str() : "-",
                    h.answered ? std::to_string(h.compact_revision).c_str() : h.error.c_str(),
                    differs(h.member_id) ? "   <- differs" : "");
      }
      std::cout << verdict.explanation << "\n";
      std::cout.flush();
    }
    switch (verdict.kind) {
      case HashVerdict::Kind::kAgree:
        return;
      case HashVerdict::Kind::kMinorityDiffers:
        throw Error(ErrorKind::kCorrupt, "corrupt member: " + verdict.explanation,
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
