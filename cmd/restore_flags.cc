#include "cmd/restore_flags.h"

namespace etcdadm::cli {

void add_restore_method_flags(CLI::App* c, RestoreMethod& method) {
  c->add_option("--restore-with", method.restore_with,
                "native (default: etcdadm writes the data dir, for etcd 3.4-3.7) | etcdutl | etcdctl (etcd's own "
                "tool from PATH, or --restore-tool)")
      ->check(CLI::IsMember({"native", "etcdutl", "etcdctl"}));
  auto* bump = c->add_option("--bump-revision", method.bump_revision,
                             "move the revision this far past the snapshot's (with --mark-compacted), whatever the "
                             "keyspace holds (default: a keyspace with Kubernetes' keys, /registry/, is moved by "
                             "1000000000 and marked compacted; any other is restored as it was; docs/operations.md)");
  auto* mark = c->add_flag("--mark-compacted", method.mark_compacted,
                           "mark every revision up to the bumped one compacted, so watchers and informers re-list "
                           "(with --bump-revision)");
  c->add_flag("--keep-revision", method.keep_revision,
              "restore a keyspace with Kubernetes' keys at the snapshot's own revision (not moved forward: "
              "restart every kube-apiserver and every component with informers before they write)")
      ->excludes(bump)
      ->excludes(mark);
}

}  // namespace etcdadm::cli
