#!/usr/bin/env bash
# Runs a command with its stdout and stderr on a pseudo-terminal (util-linux `script`), what it
# draws thrown away: a save variant "as an operator at a terminal sees it", e.g.
#   bench/save_variants_bench.sh "--progress never" "$PWD/bench/on_terminal.sh :: --progress always"
set -euo pipefail
script --quiet --return --command "$(printf '%q ' "$@")" /dev/null >/dev/null
