#include "cmd/restore_flags.h"

namespace etcdadm::cli {

void add_restore_method_flags(CLI::App* c, RestoreMethod& method) {
  c->add_option("--restore-with", method.restore_with,
                "native (default: etcdadm writes the data dir, for etcd 3.4-3.7) | etcdutl | etcdctl (etcd's own "
                "tool from PATH, or --restore-tool)")
      ->check(CLI::IsMember({"native", "etcdutl", "etcdctl"}));
  c->add_option("--bump-revision", method.bump_revision,
                "move the revision this far past the snapshot's (with --mark-compacted; for Kubernetes: 1000000000, "
                "see docs/operations.md)");
  c->add_flag("--mark-compacted", method.mark_compacted,
              "mark every revision up to the bumped one compacted, so watchers and informers re-list "
              "(with --bump-revision)");
}

}  // namespace etcdadm::cli
