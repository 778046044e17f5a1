#!/usr/bin/env bash
# `etcdadm backup drill` against the same proof done by hand with etcd's own tools, in one run:
#   by hand: `snapshot restore` of the uncompressed snapshot file (etcdutl, or etcdctl on 3.4), start
#            etcd on the restored dir, wait for `endpoint health`, `endpoint hashkv --rev REV`, stop
#   etcdadm: `backup drill latest` from a local store (fetch + verify + native restore + start +
#            revision, key count and HashKV checks + stop)
# The hand path starts from a file already uncompressed and never checks the key count: it is the
# peer's best case. Runs alternate, BENCH_RUNS times; medians are reported with every run.
#
# Environment: BENCH_DB_MB (default 400), BENCH_RUNS (3), BENCH_THREADS, BENCH_TMPDIR, BENCH_RESULTS,
# ETCDADM, ETCD, ETCDCTL (default: build/cmd/etcdadm, etcd and etcdctl on PATH).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
snapshot_tool RESTORE_TOOL restore
make_workdir
start_etcd
load_etcd "$DB_MB"; next=$LOADED_NEXT
DB=$(db_bytes)
log "loaded: $next keys, db $(mib "$DB") MiB"

STORE="$WORK/store"
"$ETCDADM" --log-level warn backup save --store "$STORE" --endpoints "$EP" -o json >"$WORK/saved.json"
REV=$(json_field "$WORK/saved.json" revision)
"$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/snap.db" >/dev/null
EXPECTED_HASH=$("$ETCDCTL" --endpoints "$EP" --command-timeout 600s endpoint hashkv --rev "$REV" -w json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["HashKV"]["hash"])')
stop_pid "$ETCD_PID"  # the drills run alone on the machine

# The hand-made drill, as a script (one process tree to time).
cat >"$WORK/by_hand.sh" <<EOF
set -euo pipefail
rm -rf "$WORK/hand"
cp=\$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pp=\$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
${RESTORE_TOOL[*]} snapshot restore "$WORK/snap.db" --data-dir "$WORK/hand" --name hand \\
  --initial-cluster hand=http://127.0.0.1:\$pp --initial-advertise-peer-urls http://127.0.0.1:\$pp \\
  --initial-cluster-token by-hand >/dev/null 2>&1
"$ETCD" --name hand --data-dir "$WORK/hand" --listen-client-urls http://127.0.0.1:\$cp \\
  --advertise-client-urls http://127.0.0.1:\$cp --listen-peer-urls http://127.0.0.1:\$pp \\
  --initial-advertise-peer-urls http://127.0.0.1:\$pp --initial-cluster hand=http://127.0.0.1:\$pp \\
  --quota-backend-bytes $(etcd_quota_bytes) >"$WORK/hand.log" 2>&1 &
pid=\$!
until "$ETCDCTL" --endpoints 127.0.0.1:\$cp endpoint health >/dev/null 2>&1; do sleep 0.05; done
hash=\$("$ETCDCTL" --endpoints 127.0.0.1:\$cp --command-timeout 600s endpoint hashkv --rev $REV -w json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["HashKV"]["hash"])')
kill \$pid; wait \$pid || true
[[ "\$hash" == "$EXPECTED_HASH" ]] || { echo "hash \$hash != $EXPECTED_HASH" >&2; exit 1; }
EOF

for r in $(seq 1 "$RUNS"); do
  log "run $r/$RUNS"
  measure by_hand bash "$WORK/by_hand.sh"
  measure drill "$ETCDADM" --log-level warn backup drill latest --store "$STORE" --scratch-dir "$WORK" -o json
  cp "$WORK/last.out" "$WORK/drill.$r.json"
  python3 - "$WORK/drill.$r.json" >>"$WORK/phases" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["passed"], r
print(" ".join(f'{p["name"]}={p["seconds"]:.2f}' for p in r["phases"]) + f' rto={r["rtoSeconds"]:.2f}')
PY
done

report() {
  echo "## drill_bench.sh: \`backup drill\` vs the same proof by hand"
  echo
  echo "- $(machine)"
  echo "- etcd $("$ETCD" --version | awk '/etcd Version/ { print $3 }'), db $(mib "$DB") MiB, $next keys, revision $REV; $RUNS runs each, alternating; wall = median"
  echo
  echo "| command | wall s | runs | peak RSS MiB |"
  echo "|---|---|---|---|"
  echo "| by hand: ${RESTORE_TOOL[-1]##*/} snapshot restore + etcd start + endpoint health + endpoint hashkv | $(wall by_hand) | $(allruns "$WORK/m.by_hand.wall") | $(rss_mib by_hand) |"
  echo "| etcdadm backup drill (fetch+verify+restore+start+checks) | $(wall drill) | $(allruns "$WORK/m.drill.wall") | $(rss_mib drill) |"
  echo
  echo "| measure | value | goal | met |"
  echo "|---|---|---|---|"
  local q; q=$(ratio "$(wall drill)" "$(wall by_hand)")
  figure "drill, s: etcdadm backup drill / the same proof by hand (snapshot restore, start, hashkv)" "$(wall drill)" "$(wall by_hand)" "<= 0.8x"
  echo "| drill wall / by hand | ${q}x | <= 0.8x | $(yes_no le "$q" 0.8) |"
  echo
  echo "Drill phases per run (s): "
  sed 's/^/- /' "$WORK/phases"
}
report | tee "${BENCH_RESULTS:-/dev/null}"
