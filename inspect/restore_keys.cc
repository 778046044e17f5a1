#include "inspect/restore_keys.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/error.h"

namespace etcdadm {

namespace {

struct LiveState {
  bool exists = false;
  int64_t mod_revision = 0;
  std::string value;
};

// The current state of `keys`, read in Txns of up to max_ops Range ops (each Txn is one consistent
// view; across Txns the mod revisions pinned in the writes keep the result safe).
std::vector<LiveState> read_live(EtcdClient& client, const std::vector<SnapshotKeyValue>& keys, size_t max_ops,
                                 int64_t& revision) {
  std::vector<LiveState> live(keys.size());
  for (size_t start = 0; start < keys.size(); start += max_ops) {
    size_t end = std::min(keys.size(), start + max_ops);
    etcdserverpb::TxnRequest txn;
    for (size_t i = start; i < end; ++i) txn.add_success()->mutable_request_range()->set_key(keys[i].key);
    auto resp = client.txn(txn);
    revision = std::max<int64_t>(revision, resp.header().revision());
    for (size_t i = start; i < end; ++i) {
      const auto& r = resp.responses(static_cast<int>(i - start)).response_range();
      if (r.kvs_size() > 0) live[i] = {true, r.kvs(0).mod_revision(), r.kvs(0).value()};
    }
  }
  return live;
}

etcdserverpb::Compare unchanged_since(const std::string& key, int64_t mod_revision) {
  etcdserverpb::Compare c;
  c.set_key(key);
  if (mod_revision == 0) {
    c.set_target(etcdserverpb::Compare::CREATE);
    c.set_create_revision(0);  // absent
  } else {
    c.set_target(etcdserverpb::Compare::MOD);
    c.set_mod_revision(mod_revision);
  }
  c.set_result(etcdserverpb::Compare::EQUAL);
  return c;
}

void add_put(etcdserverpb::TxnRequest& txn, const SnapshotKeyValue& kv) {
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(kv.key);
  put->set_value(kv.value);
}

}  // namespace

ConflictPolicy parse_conflict_policy(const std::string& name) {
  if (name == "skip-existing") return ConflictPolicy::kSkipExisting;
  if (name == "overwrite") return ConflictPolicy::kOverwrite;
  if (name == "only-if-absent") return ConflictPolicy::kOnlyIfAbsent;
  throw Error(ErrorKind::kInvalidArgument, "unknown conflict policy '" + name + "'",
              "use skip-existing, overwrite or only-if-absent");
}

const char* conflict_policy_name(ConflictPolicy policy) {
  switch (policy) {
    case ConflictPolicy::kSkipExisting:
      return "skip-existing";
    case ConflictPolicy::kOverwrite:
      return "overwrite";
    case ConflictPolicy::kOnlyIfAbsent:
      return "only-if-absent";
  }
  return "?";
}

const char* key_action_name(KeyAction::Kind kind) {
  switch (kind) {
    case KeyAction::Kind::kCreate:
      return "create";
    case KeyAction::Kind::kUpdate:
      return "update";
    case KeyAction::Kind::kSkip:
      return "skip";
    case KeyAction::Kind::kUnchanged:
      return "unchanged";
  }
  return "?";
}

RestoreKeysResult restore_keys(EtcdClient& client, const std::vector<SnapshotKeyValue>& from_backup,
                               const RestoreKeysOptions& o) {
  if (o.max_txn_ops == 0) throw Error(ErrorKind::kInvalidArgument, "--max-txn-ops must be at least 1");
  RestoreKeysResult result;
  std::vector<LiveState> live = read_live(client, from_backup, o.max_txn_ops, result.planned_at_revision);

  // The plan.
  for (size_t i = 0; i < from_backup.size(); ++i) {
    const auto& kv = from_backup[i];
    KeyAction a;
    a.key = kv.key;
    a.live_mod_revision = live[i].mod_revision;
    a.had_lease = kv.lease != 0;
    if (!live[i].exists) {
      a.kind = KeyAction::Kind::kCreate;
    } else if (live[i].value == kv.value) {
      a.kind = KeyAction::Kind::kUnchanged;
    } else {
      a.kind = o.policy == ConflictPolicy::kOverwrite ? KeyAction::Kind::kUpdate : KeyAction::Kind::kSkip;
    }
    result.actions.push_back(a);
  }
  auto count = [&](KeyAction::Kind k) {
    return static_cast<uint64_t>(
        std::count_if(result.actions.begin(), result.actions.end(), [&](const KeyAction& a) { return a.kind == k; }));
  };
  result.skipped = count(KeyAction::Kind::kSkip);
  result.unchanged = count(KeyAction::Kind::kUnchanged);
  for (size_t i = 0; i < from_backup.size(); ++i) {
    auto k = result.actions[i].kind;
    if ((k == KeyAction::Kind::kCreate || k == KeyAction::Kind::kUpdate) && from_backup[i].lease != 0)
      ++result.leases_dropped;
  }
  if (o.dry_run) return result;

  if (o.policy == ConflictPolicy::kOnlyIfAbsent) {
    // One Txn: every key absent (compares) -> every key written.
    if (from_backup.size() > o.max_txn_ops) {
      throw Error(ErrorKind::kInvalidArgument,
                  "only-if-absent writes all " + std::to_string(from_backup.size()) +
                      " keys in one transaction, more than --max-txn-ops " + std::to_string(o.max_txn_ops),
                  "narrow the prefix, raise --max-txn-ops (and etcd's --max-txn-ops), or use skip-existing");
    }
    etcdserverpb::TxnRequest txn;
    for (const auto& kv : from_backup) {
      *txn.add_compare() = unchanged_since(kv.key, 0);
      add_put(txn, kv);
    }
    if (!client.txn(txn).succeeded()) {
      uint64_t existing = result.actions.size() - count(KeyAction::Kind::kCreate);
      throw Error(ErrorKind::kAlreadyExists,
                  std::to_string(std::max<uint64_t>(existing, 1)) +
                      " of the keys exist in the cluster: only-if-absent changed nothing",
                  "see them with --dry-run; use skip-existing to restore only the absent ones");
    }
    for (auto& a : result.actions) {
      a.applied = true;
      a.kind = KeyAction::Kind::kCreate;
    }
    result.created = result.actions.size();
    result.skipped = result.unchanged = 0;
    return result;
  }

  // One Txn per key: its compare pins the state the plan saw.
  for (size_t i = 0; i < from_backup.size(); ++i) {
    KeyAction& a = result.actions[i];
    if (a.kind != KeyAction::Kind::kCreate && a.kind != KeyAction::Kind::kUpdate) continue;
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = unchanged_since(a.key, a.live_mod_revision);
    add_put(txn, from_backup[i]);
    a.applied = client.txn(txn).succeeded();
    if (!a.applied) {
      ++result.conflicts;
      spdlog::warn("{} changed in the cluster after planning: left as it is", a.key);
    } else if (a.kind == KeyAction::Kind::kCreate) {
      ++result.created;
    } else {
      ++result.updated;
    }
  }
  return result;
}

}  // namespace etcdadm
