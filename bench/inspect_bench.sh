#!/usr/bin/env bash
# Compares `etcdadm backup inspect --file` (native bbolt reader) with `etcdctl snapshot status` (etcdutl's from 3.6 on) on
# the same snapshot file, in one run: wall time and peak RSS (GNU time -v), on a quarter-size and
# a full-size snapshot of a Kubernetes-like database (bench/load_k8s_like.py), alternating the two
# tools BENCH_RUNS times each; medians are reported. Also checks that both report the same hash,
# revision, totalKey and totalSize.
#
# Environment: BENCH_DB_MB (default 400), BENCH_RUNS (default 3), BENCH_THREADS (default 6),
# BENCH_TMPDIR, BENCH_RESULTS (also write the report there), ETCDADM, ETCD, ETCDCTL.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
# The peer's status command: etcdctl's up to 3.5, etcdutl's from 3.6 on.
snapshot_tool STATUS_TOOL status
STATUS_NAME="$(basename "${STATUS_TOOL[-1]}")"
STATUS_VERSION="$("${STATUS_TOOL[@]}" version | awk -v tool="$STATUS_NAME" '$1 == tool && $2 ~ /^version/ { print $3 }')"
# etcdutl 3.6+ counts totalKey as the live keys; etcdadm gives that count with --semantics 3.6.
ADM_SEMANTICS=()
if [[ "$STATUS_NAME" == etcdutl ]]; then ADM_SEMANTICS=(--semantics "$(cut -d. -f1-2 <<<"$STATUS_VERSION")"); fi
make_workdir
start_etcd

status_fields() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["hash"], j["revision"], j["totalKey"], j["totalSize"])' "$1"; }

# measure_pair <label> <snapshot>: both tools, alternating, and the same four numbers.
measure_pair() {
  local label=$1 snap=$2 r
  for r in $(seq 1 "$RUNS"); do
    measure "${label}_ctl" "${STATUS_TOOL[@]}" snapshot status "$snap" -w json
    cp "$WORK/last.out" "$WORK/${label}_ctl.json"
    measure "${label}_adm" "$ETCDADM" --log-level warn backup inspect --file "$snap" "${ADM_SEMANTICS[@]}" -o json
    cp "$WORK/last.out" "$WORK/${label}_adm.json"
  done
  [[ "$(status_fields "$WORK/${label}_ctl.json")" == "$(status_fields "$WORK/${label}_adm.json")" ]] ||
    die "$label: etcdadm and etcdctl disagree: $(status_fields "$WORK/${label}_ctl.json") vs $(status_fields "$WORK/${label}_adm.json")"
}

load_etcd "$QUARTER_MB"; next=$LOADED_NEXT
"$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/q.db" >/dev/null
measure_pair quarter "$WORK/q.db"
load_etcd "$DB_MB" "$next"
"$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/full.db" >/dev/null
measure_pair full "$WORK/full.db"

ratio_full=$(ratio "$(wall full_adm)" "$(wall full_ctl)")
growth=$(awk -v a="$(rss_max_mib full_adm)" -v b="$(rss_max_mib quarter_adm)" 'BEGIN { printf "%+.1f", a - b }')
figure "inspect, s: etcdadm backup inspect --file / $STATUS_NAME $STATUS_VERSION snapshot status" "$(wall full_adm)" "$(wall full_ctl)" "<= 0.5x"
figure "inspect peak RSS, MiB" "$(rss_max_mib full_adm)" - "<= 64"
report() {
  cat <<EOR
### etcdadm backup inspect vs $STATUS_NAME snapshot status

- $(machine); $STATUS_NAME $STATUS_VERSION${ADM_SEMANTICS:+, etcdadm with ${ADM_SEMANTICS[*]}}
- snapshots: quarter $(mib "$(stat -c %s "$WORK/q.db")") MiB, full $(mib "$(stat -c %s "$WORK/full.db")") MiB; $RUNS runs each, alternating; page cache warm
- hash/revision/totalKey/totalSize identical for both tools on both files: $(status_fields "$WORK/full_adm.json")

| Measurement | wall s (median) | runs (s) | peak RSS MiB (max) |
|---|---:|---|---:|
| quarter: $STATUS_NAME snapshot status | $(wall quarter_ctl) | $(allruns "$WORK/m.quarter_ctl.wall") | $(rss_max_mib quarter_ctl) |
| quarter: etcdadm backup inspect --file | $(wall quarter_adm) | $(allruns "$WORK/m.quarter_adm.wall") | $(rss_max_mib quarter_adm) |
| full: $STATUS_NAME snapshot status | $(wall full_ctl) | $(allruns "$WORK/m.full_ctl.wall") | $(rss_max_mib full_ctl) |
| **full: etcdadm backup inspect --file** | **$(wall full_adm)** | $(allruns "$WORK/m.full_adm.wall") | **$(rss_max_mib full_adm)** |

| Check | value | target | met |
|---|---:|---:|:---:|
| inspect wall / $STATUS_NAME snapshot status (full) | ${ratio_full}x | <= 0.50x | $(yes_no le "$ratio_full" 0.50) |
| inspect peak RSS quarter -> full | $(rss_max_mib quarter_adm) -> $(rss_max_mib full_adm) MiB ($growth) | flat (<= +8 MiB) | $(yes_no le "$growth" 8) |
EOR
}
report | tee "${BENCH_RESULTS:-/dev/null}"
