#!/usr/bin/env bash
# The format check (scripts/check-format.sh) must fail, naming the file, on a line planted longer
# than .clang-format's 120 columns in a copy of the product's sources, and on a planted misindent;
# and pass on the untouched copy (so that each failure is the plant's, not the copy's). The copy
# holds the one folder the cases plant in: clang-format looks at each file alone, and the whole
# tree is format/check's (a copy of every folder made this test 80 s of CI time).
# Usage: planted_format_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
check=scripts/check-format.sh
copied=(scripts/check-format.sh .clang-format)
rooms=(common)
# shellcheck source=planted_lib.sh
. "$(dirname "$0")/planted_lib.sh"

copy
expect 0 'follows .clang-format'

copy  # a line of 130 columns
printf 'inline int planted_long_line() { return %s; }\n' "$(printf '1 + %.0s' $(seq 1 22))1" >>"$work/tree/common/fs.h"
expect 1 '^common/fs.h: not formatted'

copy  # an indent of three spaces in a function body
printf 'inline int planted_indent() {\n   return 1;\n}\n' >>"$work/tree/common/fs.h"
expect 1 '^common/fs.h: not formatted'

copy  # a file in a folder of its own that the rules name is checked too
mkdir -p "$work/tree/common/sub"
printf 'int   x;\n' >"$work/tree/common/sub/planted.cc"
expect 1 '^common/sub/planted.cc: not formatted'

[ "$failures" -eq 0 ] || { echo "$failures planted case(s) not caught" >&2; exit 1; }
echo "every planted case caught"
