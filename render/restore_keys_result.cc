#include "render/restore_keys_result.h"

#include <fmt/printf.h>

#include "common/key_text.h"
#include "render/json.h"

namespace etcdadm::render {

nlohmann::json restore_keys_result_json(const RestoreKeysResult& r, const nlohmann::json& source,
                                        const RestoreKeysOptions& o) {
  nlohmann::json actions = nlohmann::json::array();
  for (const auto& a : r.actions) {
    nlohmann::json j = {{"action", key_action_name(a.kind)},
                        {"liveModRevision", a.live_mod_revision},
                        {"hadLease", a.had_lease},
                        {"applied", a.applied}};
    put_bytes_json(j, "key", a.key);
    actions.push_back(std::move(j));
  }
  nlohmann::json out = source;
  out.update({{"dryRun", o.dry_run},
              {"conflict", conflict_policy_name(o.policy)},
              {"created", r.created},
              {"updated", r.updated},
              {"skipped", r.skipped},
              {"unchanged", r.unchanged},
              {"conflicts", r.conflicts},
              {"leasesDropped", r.leases_dropped},
              {"plannedAtRevision", r.planned_at_revision},
              {"actions", actions}});
  return out;
}

std::string restore_keys_result_text(const RestoreKeysResult& r, const RestoreKeysOptions& o) {
  std::string out;
  for (const auto& a : r.actions) {
    out += fmt::sprintf(
        "%-9s %s%s\n", key_action_name(a.kind), printable_bytes(a.key, 200),
        (!o.dry_run && (a.kind == KeyAction::Kind::kCreate || a.kind == KeyAction::Kind::kUpdate) && !a.applied)
            ? "  (changed meanwhile: left alone)"
            : "");
  }
  if (o.dry_run) {
    out +=
        fmt::sprintf("dry run at revision %lld: nothing was written\n", static_cast<long long>(r.planned_at_revision));
  } else {
    out += fmt::sprintf("%llu created, %llu updated, %llu skipped, %llu unchanged, %llu conflicts\n",
                        static_cast<unsigned long long>(r.created), static_cast<unsigned long long>(r.updated),
                        static_cast<unsigned long long>(r.skipped), static_cast<unsigned long long>(r.unchanged),
                        static_cast<unsigned long long>(r.conflicts));
  }
  if (r.leases_dropped > 0) {
    out += fmt::sprintf("%llu key(s) had a lease in the backup; they were written without one\n",
                        static_cast<unsigned long long>(r.leases_dropped));
  }
  return out;
}

}  // namespace etcdadm::render
