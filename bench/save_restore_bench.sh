#!/usr/bin/env bash
# Compares `etcdadm backup save` / `backup restore` with etcd's own tools in one run.
#
# Starts a throw-away single-member etcd on free 127.0.0.1 ports in a temp dir, loads
# Kubernetes-like objects into it (bench/load_k8s_like.py), then measures wall time and
# peak RSS (GNU time -v) of:
#   - etcdctl snapshot save            (alone; the server's own etcdctl, and 3.6's as a second anchor)
#   - gzip -1 of that snapshot         (separately)
#   - etcdadm backup save              (to a local store dir)
#   - etcdctl snapshot restore         (from the local uncompressed snapshot file, etcdutl's for a 3.6+
#                                        server; and etcdutl 3.6's)
#   - etcdadm backup restore latest    (fetch + verify + the native data dir write)
#   - etcdadm backup restore --output-file  (fetch + verify only; isolates etcdadm's own RSS)
#   - etcdadm backup verify latest       (once at the quarter point, once at the full one)
# Saves alternate etcdctl / etcdadm BENCH_RUNS times, then restores alternate the same
# way; medians are reported. The same save pair is also run BENCH_RUNS times after a
# quarter of the data is loaded, to show whether etcdadm's RSS grows with db size.
#
# Environment:
#   BENCH_DB_MB    target etcd db size in MiB (default 400; use e.g. 20 for a smoke test)
#   BENCH_RUNS     runs per measurement, odd is best (default 3)
#   BENCH_THREADS  loader connections (default 6)
#   BENCH_TMPDIR   parent of the temp dir (default ${TMPDIR:-/tmp})
#   BENCH_RESULTS  also write the markdown report to this file
#   ETCDADM, ETCD, ETCDCTL   binaries (default: build/cmd/etcdadm, etcd and etcdctl on PATH)
#   ANCHOR_BIN     directory with the second anchor's etcdctl and etcdutl (default: etcd 3.6's, built
#                  by scripts/etcd-versions.sh 3.6)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
command -v gzip >/dev/null || die "gzip missing"
ANCHOR_BIN="${ANCHOR_BIN:-$(bash "$repo/scripts/etcd-versions.sh" --where 3.6 | cut -d' ' -f2)}"
ANCHOR_ETCDCTL="$ANCHOR_BIN/etcdctl"
ANCHOR_ETCDUTL="$ANCHOR_BIN/etcdutl"
[[ -x "$ANCHOR_ETCDCTL" && -x "$ANCHOR_ETCDUTL" ]] ||
  die "no etcdctl/etcdutl in $ANCHOR_BIN for the 3.6 anchor (bash scripts/etcd-versions.sh 3.6)"
ANCHOR_VER="$("$ANCHOR_ETCDUTL" version | awk '/^etcdutl version/ { print $3 }')"
# The first anchor restores with the server's own tool: etcdctl up to 3.5, etcdutl beside it from 3.6
# on (etcdctl 3.6 has no `snapshot restore`).
snapshot_tool RESTORE_TOOL restore
RESTORE_NAME="$(basename "${RESTORE_TOOL[-1]}")"

make_workdir

RESTORE_PEER="http://127.0.0.1:$(free_port)" # only written into restored member metadata

LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
start_etcd

adm() { "$ETCDADM" --log-level warn "$@"; }

etcdctl_save() { rm -f "$1"; measure "$2" "$ETCDCTL" --endpoints "$EP" snapshot save "$1"; }
etcdadm_save() {
  measure "$2" "$ETCDADM" --log-level warn backup save --store "$1" --endpoints "$EP" -o json
  cp "$WORK/last.out" "$WORK/$2.json"
}

# ---- load: a quarter, measure once, then the rest -----------------------------------
load_etcd "$QUARTER_MB"; next=$LOADED_NEXT
Q_KEYS=$next
Q_DB=$(db_bytes)
log "quarter: $Q_KEYS keys, db $(mib "$Q_DB") MiB; $RUNS x (etcdctl save, etcdadm save)"
for r in $(seq 1 "$RUNS"); do
  etcdctl_save "$WORK/q-snap.db" q_ctl_save
  rm -rf "$WORK/q-store"
  etcdadm_save "$WORK/q-store" q_adm_save
done
Q_STORED=$(json_field "$WORK/q_adm_save.json" storedSize)
# The native restore of the quarter db, to show its memory does not grow with the db either.
RESTORE_PEER_Q="http://127.0.0.1:$(free_port)"
for r in $(seq 1 "$RUNS"); do
  rm -rf "$WORK/q-restored"
  measure q_adm_restore "$ETCDADM" --log-level warn backup restore latest --store "$WORK/q-store" \
    --data-dir "$WORK/q-restored" --name q --initial-advertise-peer-urls "$RESTORE_PEER_Q" -o json
done
# `backup verify` (fetch, hashes, a full check of the bbolt file and its KV hash), once per point.
measure q_adm_verify "$ETCDADM" --log-level warn backup verify latest --store "$WORK/q-store" -o json
rm -rf "$WORK/q-snap.db" "$WORK/q-store" "$WORK/q-restored"

load_etcd "$DB_MB" "$next"; next=$LOADED_NEXT
KEYS=$next
DB=$(db_bytes)
log "full: $KEYS keys, db $(mib "$DB") MiB"

# ---- saves: etcdctl, gzip -1, etcdadm, alternating -----------------------------------
STORE="$WORK/store"
for r in $(seq 1 "$RUNS"); do
  log "save run $r/$RUNS"
  etcdctl_save "$WORK/snap.db" ctl_save
  rm -f "$WORK/anchor-snap.db"
  measure anchor_save env -u ETCDCTL_API "$ANCHOR_ETCDCTL" --endpoints "$EP" snapshot save "$WORK/anchor-snap.db"
  rm -f "$WORK/anchor-snap.db" "$WORK/snap.db.gz"
  measure gzip1 gzip -1 -k -f "$WORK/snap.db"
  etcdadm_save "$STORE" adm_save
  stat -c %s "$WORK/snap.db" >>"$WORK/snap.size"
  stat -c %s "$WORK/snap.db.gz" >>"$WORK/gz.size"
  json_field "$WORK/adm_save.json" storedSize >>"$WORK/stored.size"
  json_field "$WORK/adm_save.json" durationSeconds >>"$WORK/adm_save.self"
done
SNAP_SIZE=$(median "$WORK/snap.size")
GZ_SIZE=$(median "$WORK/gz.size")
STORED_SIZE=$(median "$WORK/stored.size")
rm -f "$WORK/snap.db.gz"

# ---- restores: etcdctl (local uncompressed file) vs etcdadm (store), alternating -----
restore_args=(--name bench-restore --initial-advertise-peer-urls "$RESTORE_PEER"
              --initial-cluster "bench-restore=$RESTORE_PEER")
for r in $(seq 1 "$RUNS"); do
  log "restore run $r/$RUNS"
  rm -rf "$WORK/r-ctl"
  measure ctl_restore "${RESTORE_TOOL[@]}" snapshot restore "$WORK/snap.db" --data-dir "$WORK/r-ctl" "${restore_args[@]}"
  rm -rf "$WORK/r-ctl"
  measure anchor_restore env -u ETCDCTL_API "$ANCHOR_ETCDUTL" snapshot restore "$WORK/snap.db" --data-dir "$WORK/r-ctl" \
    "${restore_args[@]}"
  rm -rf "$WORK/r-ctl" "$WORK/r-adm"
  measure adm_restore "$ETCDADM" --log-level warn backup restore latest --store "$STORE" \
    --data-dir "$WORK/r-adm" "${restore_args[@]}" -o json
  cp "$WORK/last.out" "$WORK/adm_restore.json"
  json_field "$WORK/adm_restore.json" fetchSeconds >>"$WORK/adm_restore.fetch"
  json_field "$WORK/adm_restore.json" restoreSeconds >>"$WORK/adm_restore.tool"
  [[ -s "$WORK/r-adm/member/snap/db" ]] || die "etcdadm restore produced no member/snap/db"
  rm -rf "$WORK/r-adm"
done
measure adm_verify "$ETCDADM" --log-level warn backup verify latest --store "$STORE" -o json
log "fetch+verify only (etcdadm backup restore --output), once"
rm -f "$WORK/fetched.db"
measure adm_fetch "$ETCDADM" --log-level warn backup restore latest --store "$STORE" --output-file "$WORK/fetched.db" -o json
# etcd 3.6+ commits a bbolt transaction for every snapshot, so two snapshots without writes in between
# differ in a few meta-page bytes; then the KV hash and revision (etcdutl snapshot status) must match.
kv_identity() { env -u ETCDCTL_API "$ANCHOR_ETCDUTL" snapshot status "$1" -w json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["hash"], d["revision"], d["totalKey"])'; }
if cmp -s "$WORK/fetched.db" "$WORK/snap.db"; then
  FETCH_SAME="byte-identical to"
elif [[ "$(kv_identity "$WORK/fetched.db")" == "$(kv_identity "$WORK/snap.db")" ]]; then
  FETCH_SAME="not byte-identical to ($( (cmp -l "$WORK/fetched.db" "$WORK/snap.db" || true) | wc -l) bytes differ: the server committed between the saves) but has the KV hash, revision and key count of"
else
  FETCH_SAME="**different in content** from"
fi
rm -f "$WORK/fetched.db"

# ---- report ------------------------------------------------------------------------------
ctl_save=$(wall ctl_save); gz=$(wall gzip1); adm_save=$(wall adm_save)
ctl_gz=$(awk -v a="$ctl_save" -v b="$gz" 'BEGIN { printf "%.3f", a + b }')
ctl_rst=$(wall ctl_restore); adm_rst=$(wall adm_restore)
anchor_save=$(wall anchor_save); anchor_rst=$(wall anchor_restore)
save_ratio=$(ratio "$adm_save" "$ctl_save")
save_anchor_ratio=$(ratio "$adm_save" "$anchor_save")
rst_anchor_ratio=$(ratio "$adm_rst" "$anchor_rst")
save_gz_ratio=$(ratio "$adm_save" "$ctl_gz")
rst_ratio=$(ratio "$adm_rst" "$ctl_rst")
adm_rss_max=$(rss_max_mib adm_save)
adm_rss_full=$(rss_mib adm_save)
adm_rss_q=$(rss_mib q_adm_save)
adm_rss_q_max=$(rss_max_mib q_adm_save)
adm_fetch_rss=$(rss_max_mib adm_fetch)
rss_growth=$(awk -v a="$adm_rss_max" -v b="$adm_rss_q_max" 'BEGIN { printf "%+.1f", a - b }')
db_growth=$(awk -v a="$DB" -v b="$Q_DB" 'BEGIN { printf "%.0f", (a - b) / 1048576 }')

SERVER_VER="$("$ETCDCTL" version | awk '/^etcdctl version/ { print $3 }')"
figure "save, s: etcdadm backup save / etcdctl $SERVER_VER snapshot save" "$adm_save" "$ctl_save" "<= 0.8x"
figure "save, s: etcdadm backup save / etcdctl $ANCHOR_VER snapshot save" "$adm_save" "$anchor_save" "<= 0.7x"
# What bounds a save: the member's CPU streaming the snapshot and the client's, on the same cores.
figure "save, CPU s of the etcd member streaming the snapshot: to etcdadm / to etcdctl $SERVER_VER" "$(server_cpu adm_save)" "$(server_cpu ctl_save)" ""
figure "save, CPU s of the client: etcdadm (gzip, SHA-256, store) / etcdctl $SERVER_VER (write, fsync)" "$(cpu adm_save)" "$(cpu ctl_save)" ""
figure "restore, s: etcdadm backup restore (gzip store) / $RESTORE_NAME $SERVER_VER snapshot restore (local .db)" "$adm_rst" "$ctl_rst" "<= 0.6x"
figure "restore, s: etcdadm backup restore (gzip store) / etcdutl $ANCHOR_VER snapshot restore (local .db)" "$adm_rst" "$anchor_rst" "<= 0.6x"
figure "restore, CPU s: etcdadm (read, inflate, two SHA-256s, write) / etcdutl $ANCHOR_VER" "$(cpu adm_restore)" "$(cpu anchor_restore)" ""
figure "verify, s: etcdadm backup verify (fetch, both SHA-256s, every page walked)" "$(wall adm_verify)" - ""
figure "save peak RSS, MiB" "$adm_rss_max" - "<= 64"
figure "restore peak RSS, MiB" "$(rss_max_mib adm_restore)" - "<= 64"
figure "verify peak RSS, MiB" "$(rss_max_mib adm_verify)" - "<= 64"

report() {
  cat <<EOF
### etcdadm vs etcd tools: save / restore

- $(machine)
- etcd $("$ETCD" --version | awk '/^etcd Version/ { print $3 }'), etcdctl $("$ETCDCTL" version | awk '/^etcdctl version/ { print $3 }'), etcdadm $("$ETCDADM" version 2>/dev/null | awk 'NR == 1 { print $NF }')
- data: $KEYS Kubernetes-like keys; etcd dbSize $(mib "$DB") MiB (quarter point: $Q_KEYS keys, $(mib "$Q_DB") MiB)
- load average (1/5/15 min) at start: $LOAD_START, at end: $(cut -d' ' -f1-3 /proc/loadavg)
- $RUNS runs each (fetch+verify: 1), saves and restores alternating etcdctl/etcdadm; wall = median, "runs" lists every run; page cache not dropped

| Measurement | wall s (median) | runs (s) | peak RSS MiB (median) | output MiB |
|---|---:|---|---:|---:|
| etcdctl snapshot save | $ctl_save | $(allruns "$WORK/m.ctl_save.wall") | $(rss_mib ctl_save) | $(mib "$SNAP_SIZE") (uncompressed) |
| etcdctl $ANCHOR_VER snapshot save | $anchor_save | $(allruns "$WORK/m.anchor_save.wall") | $(rss_mib anchor_save) | (uncompressed) |
| gzip -1 of that snapshot | $gz | $(allruns "$WORK/m.gzip1.wall") | $(rss_mib gzip1) | $(mib "$GZ_SIZE") |
| etcdctl save + gzip -1 (sum of medians) | $ctl_gz | | | $(mib "$GZ_SIZE") |
| **etcdadm backup save** | **$adm_save** | $(allruns "$WORK/m.adm_save.wall") | **$(rss_mib adm_save)** | $(mib "$STORED_SIZE") (gzip) |
| $RESTORE_NAME snapshot restore (local .db) | $ctl_rst | $(allruns "$WORK/m.ctl_restore.wall") | $(rss_mib ctl_restore) | |
| etcdutl $ANCHOR_VER snapshot restore (local .db) | $anchor_rst | $(allruns "$WORK/m.anchor_restore.wall") | $(rss_mib anchor_restore) | |
| **etcdadm backup restore latest** | **$adm_rst** | $(allruns "$WORK/m.adm_restore.wall") | $(rss_mib adm_restore) ¹ | |
| etcdadm backup restore --output (fetch+verify only, 1 run) | $(wall adm_fetch) | | $adm_fetch_rss | $(mib "$SNAP_SIZE") |
| quarter db: etcdctl snapshot save | $(wall q_ctl_save) | $(allruns "$WORK/m.q_ctl_save.wall") | $(rss_mib q_ctl_save) | $(mib "$Q_DB") (uncompressed) |
| quarter db: etcdadm backup save | $(wall q_adm_save) | $(allruns "$WORK/m.q_adm_save.wall") | $adm_rss_q | $(mib "$Q_STORED") (gzip) |
| etcdadm backup verify latest (1 run) | $(wall adm_verify) | | $(rss_max_mib adm_verify) | |
| quarter db: etcdadm backup verify latest (1 run) | $(wall q_adm_verify) | | $(rss_max_mib q_adm_verify) | |
| quarter db: etcdadm backup restore latest | $(wall q_adm_restore) | $(allruns "$WORK/m.q_adm_restore.wall") | $(rss_mib q_adm_restore) | |

¹ The native restore: etcdadm alone, no child process (GNU time reports the largest RSS in the
process tree).

etcdadm's own timings (JSON output, medians): save durationSeconds $(median "$WORK/adm_save.self" | awk '{ printf "%.3f", $1 }');
restore fetchSeconds $(median "$WORK/adm_restore.fetch" | awk '{ printf "%.3f", $1 }') + restoreSeconds (the data dir write after the fetch) $(median "$WORK/adm_restore.tool" | awk '{ printf "%.3f", $1 }').

| Check | value | target | met |
|---|---:|---:|:---:|
| save wall: etcdadm / etcdctl snapshot save | ${save_ratio}x | <= 0.80x | $(yes_no le "$save_ratio" 0.80) |
| save wall: etcdadm / etcdctl $ANCHOR_VER snapshot save | ${save_anchor_ratio}x | (info: second anchor) | |
| save wall: etcdadm / (etcdctl save + gzip -1) | ${save_gz_ratio}x | (info) | |
| restore wall: etcdadm / $RESTORE_NAME snapshot restore | ${rst_ratio}x | <= 0.60x | $(yes_no le "$rst_ratio" 0.60) |
| restore wall: etcdadm / etcdutl $ANCHOR_VER snapshot restore | ${rst_anchor_ratio}x | (info: second anchor) | |
| etcdadm save peak RSS, full db (max of runs) | $adm_rss_max MiB | <= 64 MiB | $(yes_no le "$adm_rss_max" 64) |
| etcdadm save peak RSS (max of runs), quarter db -> full db | $adm_rss_q_max -> $adm_rss_max MiB ($rss_growth MiB while db grew $db_growth MiB) | flat (<= +8 MiB) | $(yes_no le "$rss_growth" 8) |
| etcdadm restore peak RSS (max of runs) | $(rss_max_mib adm_restore) MiB | <= 64 MiB | $(yes_no le "$(rss_max_mib adm_restore)" 64) |
| etcdadm restore peak RSS (max of runs), quarter db -> full db | $(rss_max_mib q_adm_restore) -> $(rss_max_mib adm_restore) MiB | flat (<= +8 MiB) | $(yes_no le "$(awk -v a="$(rss_max_mib adm_restore)" -v b="$(rss_max_mib q_adm_restore)" 'BEGIN { printf "%.1f", a - b }')" 8) |
| etcdadm fetch+verify peak RSS (--output) | $adm_fetch_rss MiB | (info) | |
| etcdadm backup verify peak RSS, quarter db -> full db | $(rss_max_mib q_adm_verify) -> $(rss_max_mib adm_verify) MiB | flat (<= +8 MiB) | $(yes_no le "$(awk -v a="$(rss_max_mib adm_verify)" -v b="$(rss_max_mib q_adm_verify)" 'BEGIN { printf "%.1f", a - b }')" 8) |
| stored size / gzip -1 size | $(ratio "$STORED_SIZE" "$GZ_SIZE") | (info) | |
| compression: db / stored | $(ratio "$SNAP_SIZE" "$STORED_SIZE")x | (info) | |

Fetched snapshot is $FETCH_SAME the etcdctl snapshot (same revision, no writes in between).
EOF
  local f
  for f in "$WORK"/m.*adm*.stderr.*; do
    [[ -e "$f" ]] || continue
    echo
    echo "etcdadm stderr (${f#"$WORK"/m.}):"
    echo '```'
    head -20 "$f"
    echo '```'
  done
}

report | tee "${BENCH_RESULTS:-/dev/null}"
