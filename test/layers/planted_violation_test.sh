#!/usr/bin/env bash
# The layering check (scripts/check-layers.sh) must fail, naming the file and the rule, on each
# kind of violation planted in a copy of the sources: an include of a layer above, one beside where
# the rules forbid it, a file in a folder no rule names, an include into no room, the product
# including the tests, and no rules at all. And it must pass on the untouched copy (so that each
# failure below is the plant's, not the copy's).
# Usage: planted_violation_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
check=scripts/check-layers.sh
copied=(scripts/check-layers.sh)
# shellcheck source=planted_lib.sh
. "$(dirname "$0")/planted_lib.sh"

copy
expect 0 'follows docs/architecture.md'

copy  # a layer including one above it
echo '#include "cmd/output.h"' >>"$work/tree/common/fs.h"
expect 1 '^common/fs.h:[0-9]+: common may not include cmd \(cmd/output.h\)'

copy  # beside: the store knows nothing of etcd
printf '#include "common/fs.h"\n#include "etcd/client.h"\n' >"$work/tree/store/planted.cc"
expect 1 '^store/planted.cc:2: store may not include etcd '

copy  # a folder no rule names
mkdir -p "$work/tree/restore/extra"
echo '#include "backup/save.h"' >"$work/tree/restore/extra/x.h"
expect 1 '^restore/extra/x.h:1: restore may not include backup'

copy  # a new top-level folder that no rule names, and an include of it
mkdir -p "$work/tree/newroom"
echo '#include "common/fs.h"' >"$work/tree/newroom/x.cc"
expect 1 '^newroom/x.cc: in no room'
echo '#include "newroom/x.h"' >>"$work/tree/cmd/output.h"
expect 1 '^cmd/output.h:[0-9]+: includes newroom/x.h, which is in no room'

copy  # the product including the tests
echo '#include "test/support/test_env.h"' >>"$work/tree/backup/save.h"
mkdir -p "$work/tree/test/support" && touch "$work/tree/test/support/test_env.h"
expect 1 '^backup/save.h:[0-9]+: includes test/support/test_env.h, which is in no room'

copy  # no rules block at all
sed -i 's/^```layers$/```text/' "$work/tree/docs/architecture.md"
expect 2 'no ```layers block'

[ "$failures" -eq 0 ] || exit 1
echo "planted violations: every one caught"
