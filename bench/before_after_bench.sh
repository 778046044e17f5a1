#!/usr/bin/env bash
# Two etcdadm binaries measured in turn on the same data, so that both see the same machine load
# (a change's "no figure gets worse" check): per round and binary, `backup drill latest`,
# `backup save` of the member, `backup restore latest --output-file` (fetch + verify), and
# `backup prune --policy count:1000` of a fresh copy of a local store of 10,000 metadata-only
# backups (its catalog warmed by a `backup list` first). Prints one line per round and binary.
#
# Usage: BEFORE=/path/old-etcdadm AFTER=/path/new-etcdadm [ROUNDS=7] [BENCH_DB_MB=100] bench/before_after_bench.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/lib.sh"
[[ -x "${BEFORE:-}" && -x "${AFTER:-}" ]] || die "set BEFORE and AFTER to two etcdadm binaries"
ETCDADM="$AFTER"
BENCH_DB_MB=${BENCH_DB_MB:-100}
bench_settings
make_workdir
start_etcd
load_etcd "$DB_MB"
STORE="$WORK/store"
"$AFTER" --log-level warn backup save --store "$STORE" --endpoints "$EP" >/dev/null
python3 - "$WORK/many" 10000 <<'PY'
import json, os, sys, time
root, n = sys.argv[1], int(sys.argv[2])
now = int(time.time()) - 60
for i in range(n):
    t = now - (n - 1 - i) * 60
    name = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) + "-000000"
    d = os.path.join(root, name); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "etcd.backup.gz"), "wb").write(b"x" * 64)
    json.dump({"etcdVersion": "3.5.17", "timestamp": t}, open(os.path.join(d, "_etcd_backup.meta"), "w"))
PY
secs() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; exit 1; }; t1=$(date +%s%N); echo "scale=3; ($t1-$t0)/1000000000" | bc; }
for r in $(seq 1 "${ROUNDS:-7}"); do
  for b in before after; do
    if [[ $b == before ]]; then E="$BEFORE"; else E="$AFTER"; fi
    d=$(secs "$E" --log-level warn backup drill latest --store "$STORE" --scratch-dir "$WORK")
    s=$(secs "$E" --log-level warn backup save --store "$WORK/save-$b" --endpoints "$EP")
    rm -f "$WORK/out.db"
    f=$(secs "$E" --log-level warn backup restore latest --store "$STORE" --output-file "$WORK/out.db")
    rm -rf "$WORK/p"; cp -a "$WORK/many" "$WORK/p"
    export ETCDADM_CATALOG="$WORK/cat-$b-$r.db"
    "$E" --log-level warn backup list --store "$WORK/p" >/dev/null
    p=$(secs "$E" --log-level warn backup prune --store "$WORK/p" --policy count:1000)
    export ETCDADM_CATALOG="$WORK/catalog.db"
    echo "$r $b drill=$d save=$s restore=$f prune=$p"
  done
done
