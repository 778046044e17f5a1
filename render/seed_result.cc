#include "render/seed_result.h"

#include "common/text.h"

namespace etcdadm::render {

nlohmann::json seed_result_json(const SeedResult& r, bool dry_run) {
  using json = nlohmann::json;
  const auto& [before, after, auto_spec, effect] = r;
  return {{"dryRun", dry_run},
          {"before",
           before ? json{{"memberCount", before->member_count}, {"etcdVersion", before->etcd_version}} : json(nullptr)},
          {"after", {{"memberCount", after.member_count}, {"etcdVersion", after.etcd_version}}},
          {"replaceAfterSeconds", auto_spec.replace_after_seconds},
          {"defragFreePercent", auto_spec.defrag_free_percent},
          {"defragMinFreeBytes", auto_spec.defrag_min_free_bytes},
          {"defragSchedule", auto_spec.defrag_schedule},
          {"nospaceKeepRevisions", auto_spec.nospace_keep_revisions},
          {"nospaceDisarmBelowPercent", auto_spec.nospace_disarm_below_percent},
          {"corruptCheckSeconds", auto_spec.corrupt_check_seconds},
          {"autoRestore", auto_spec.auto_restore},
          {"autoRestoreDelaySeconds", auto_spec.auto_restore_delay_seconds},
          {"restartWithoutQuorum", auto_spec.restart_without_quorum},
          {"certRenewBeforeSeconds", auto_spec.cert_renew_before_seconds},
          {"caWarnBeforeSeconds", auto_spec.ca_warn_before_seconds},
          {"caRotateBeforeSeconds", auto_spec.ca_rotate_before_seconds},
          {"effect", effect}};
}

std::string seed_result_text(const SeedResult& r, bool dry_run) {
  const auto& [before, after, auto_spec, effect] = r;
  return std::string(dry_run ? "Would set" : "Set") + " the cluster spec: " + std::to_string(after.member_count) +
         " members of etcd " + after.etcd_version + " (replace a member after " +
         std::to_string(auto_spec.replace_after_seconds) + " s unhealthy; defragment a member " +
         (auto_spec.defrag_free_percent > 0 ? "with " + std::to_string(auto_spec.defrag_free_percent) + "% and " +
                                                  human_bytes(auto_spec.defrag_min_free_bytes) + " of its db free"
                                            : std::string("never for fragmentation")) +
         (auto_spec.defrag_schedule.empty() ? std::string() : ", and on " + auto_spec.defrag_schedule) + ")" +
         (before ? "; was " + std::to_string(before->member_count) + " of etcd " + before->etcd_version
                 : std::string()) +
         "\n" + "The controllers: " + effect + "\n";
}

}  // namespace etcdadm::render
