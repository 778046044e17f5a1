// The restore flags `backup restore` and `init --from-backup/--snapshot` share: how the data dir
// is written (--restore-with) and the revision bump for Kubernetes (--bump-revision,
// --mark-compacted).
#pragma once

#include <CLI/CLI.hpp>

#include "restore/data_dir.h"

namespace etcdadm::cli {

void add_restore_method_flags(CLI::App* c, RestoreMethod& method);

}  // namespace etcdadm::cli
