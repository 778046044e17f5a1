#!/usr/bin/env bash
# A/B of `etcdadm backup save` variants against `etcdctl snapshot save`, on one loaded etcd.
#
# Usage: bench/save_variants_bench.sh [VARIANT ...]
#   Each VARIANT is a string of extra `backup save` flags ("" = the defaults), e.g.
#   bench/save_variants_bench.sh "" "--nice 10" "--compression zstd"
#   With no arguments: "" and "--nice 10".
#   A variant may start with a command prefix followed by "::", e.g. "chrt -b 0 :: --nice 10"
#   runs etcdadm under `chrt -b 0` with `--nice 10`.
#
# The etcd is loaded once (load_k8s_like.py, BENCH_DB_MB, default 400 MiB). Then, BENCH_RUNS times
# (default 3), etcdctl and every variant run one after another, so machine-load drift hits them
# all alike. Reported: median wall, every run, median and max peak RSS, and the ratio of each
# variant's median to etcdctl's. Settings as in save_restore_bench.sh (BENCH_TMPDIR, BENCH_RESULTS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

bench_settings
if [[ $# -eq 0 ]]; then set -- "" "--nice 10"; fi
VARIANTS=("$@")

make_workdir
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
start_etcd
load_etcd "$DB_MB"; KEYS=$LOADED_NEXT
DB=$(db_bytes)
log "loaded: $KEYS keys, db $(mib "$DB") MiB"

for r in $(seq 1 "$RUNS"); do
  log "run $r/$RUNS"
  rm -f "$WORK/snap.db"
  measure ctl "$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/snap.db"
  for i in "${!VARIANTS[@]}"; do
    rm -rf "$WORK/store"
    prefix="" flags="${VARIANTS[$i]}"
    if [[ "$flags" == *"::"* ]]; then prefix="${flags%%::*}" flags="${flags#*::}"; fi
    # shellcheck disable=SC2086 # a variant is a list of words
    measure "v$i" $prefix "$ETCDADM" --log-level warn backup save --store "$WORK/store" --endpoints "$EP" -o json $flags
  done
done
rm -rf "$WORK/snap.db" "$WORK/store"

report() {
  local ctl
  ctl=$(wall ctl)
  echo "- $(machine); etcd $("$ETCD" --version | sed -n 's/^etcd Version: //p')"
  echo "- $KEYS keys, dbSize $(mib "$DB") MiB; $RUNS runs, order per run: etcdctl then the variants"
  echo "- load average at start: $LOAD_START, at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| save | wall s (median) | runs (s) | ratio to etcdctl | peak RSS MiB median / max |"
  echo "|---|---:|---|---:|---:|"
  echo "| etcdctl snapshot save | $ctl | $(allruns "$WORK/m.ctl.wall") | 1.00 | $(rss_mib ctl) / $(rss_max_mib ctl) |"
  for i in "${!VARIANTS[@]}"; do
    echo "| etcdadm backup save ${VARIANTS[$i]:-(defaults)} | $(wall "v$i") | $(allruns "$WORK/m.v$i.wall") | $(ratio "$(wall "v$i")" "$ctl") | $(rss_mib "v$i") / $(rss_max_mib "v$i") |"
  done
}
report | tee "${BENCH_RESULTS:-/dev/null}"
