#!/usr/bin/env bash
# `backup list` and `backup prune` on stores holding many backups (issue 15, "stores at scale").
#
# For each count in BENCH_BACKUPS (default "1000 10000 100000"), a local store is filled with that
# many metadata-only backups (a 64-byte data file and etcd-manager's _etcd_backup.meta, one a
# minute, the newest now), and measured:
#   - cold list:  `backup list` with no catalog (reads every backup's metadata)
#   - warm list:  `backup list` again (incremental: only the newest hour is listed), median of 5
#   - resync:     `backup list --resync` (a full listing, no metadata reads), median of 3
#   - prune:      `backup prune --policy count:1000` (deletes all but the newest 1,000)
# With BENCH_S3=1, the same for 10,000 backups on the suite's two S3 servers, OpenStack Swift's
# s3api and MinIO (scripts/go-test-tools.sh builds it), the backups uploaded with `aws s3 sync`; the
# requests of each command are counted from --log-level trace's line per HTTP request.
#
# Usage: bench/catalog_scale_bench.sh            BENCH_BACKUPS="1000 10000" BENCH_S3=1 bench/catalog_scale_bench.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

ETCDADM="${ETCDADM:-$repo/build/cmd/etcdadm}"
[[ -x "$ETCDADM" ]] || die "etcdadm not found at $ETCDADM"
COUNTS="${BENCH_BACKUPS:-1000 10000 100000}"
make_workdir
unset ETCDADM_CATALOG_FULL_SYNC || true

# fill DIR N: N backups one minute apart, the newest a minute ago (names as etcdadm writes them).
fill() {
  python3 - "$1" "$2" <<'PY'
import json, os, sys, time
root, n = sys.argv[1], int(sys.argv[2])
now = int(time.time()) - 60
for i in range(n):
    t = now - (n - 1 - i) * 60
    name = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) + "-000000"
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "etcd.backup.gz"), "wb") as f:
        f.write(b"x" * 64)
    with open(os.path.join(d, "_etcd_backup.meta"), "w") as f:
        json.dump({"etcdVersion": "3.5.17", "timestamp": t}, f)
PY
}

seconds() {  # runs the command, prints its wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
median_of() {  # N command...: median wall seconds of N runs
  local n=$1; shift
  for _ in $(seq 1 "$n"); do seconds "$@"; echo; done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

echo "- $(machine)"
echo
echo "| store | backups | cold list s | warm list s (median of 5) | list --resync s (median of 3) | prune to 1,000 s |"
echo "|---|---:|---:|---:|---:|---:|"
for n in $COUNTS; do
  store="$WORK/local-$n"
  log "filling $store with $n backups"
  fill "$store" "$n"
  export ETCDADM_CATALOG="$WORK/catalog-$n.db"
  cold=$(seconds "$ETCDADM" backup list --store "$store" -o json)
  warm=$(median_of 5 "$ETCDADM" backup list --store "$store" -o json)
  resync=$(median_of 3 "$ETCDADM" backup list --resync --store "$store" -o json)
  prune=$(seconds "$ETCDADM" --log-level warn backup prune --store "$store" --policy count:1000)
  left=$(find "$store" -mindepth 1 -maxdepth 1 -type d | wc -l)
  [[ "$left" == "$(( n < 1000 ? n : 1000 ))" ]] || die "prune left $left backups of $n"
  echo "| local | $n | $cold | $warm | $resync | $prune |"
  rm -rf "$store"
done

[[ "${BENCH_S3:-0}" == 1 ]] || exit 0
AWS="${AWS:-/usr/bin/aws}"
[[ -x "$AWS" ]] || die "aws CLI missing"
n=10000
fill "$WORK/s3-src" "$n"
# Requests per command: counted by --log-level trace's one line per HTTP request of etcdadm's client.
requests() { "$ETCDADM" --log-level trace "$@" --s3-endpoint "$S3_EP" 2>&1 >/dev/null | grep -c 'HTTP request' || true; }
# s3_row NAME: uploads the backups to s3://bench/NAME on $S3_EP and measures them there.
s3_row() {
  local server=$1 store="s3://bench/$1" upload cold warm warm_requests resync resync_requests prune left
  log "uploading $n backups to $server"
  upload=$(seconds "$AWS" --endpoint-url "$S3_EP" s3 sync --only-show-errors "$WORK/s3-src" "$store")
  log "uploaded in $upload s"
  export ETCDADM_CATALOG="$WORK/catalog-$server.db"
  cold=$(seconds "$ETCDADM" backup list --store "$store" --s3-endpoint "$S3_EP" -o json)
  warm=$(median_of 5 "$ETCDADM" backup list --store "$store" --s3-endpoint "$S3_EP" -o json)
  warm_requests=$(requests backup list --store "$store" -o json)
  resync=$(median_of 3 "$ETCDADM" backup list --resync --store "$store" --s3-endpoint "$S3_EP" -o json)
  resync_requests=$(requests backup list --resync --store "$store" -o json)
  prune=$(seconds "$ETCDADM" --log-level warn backup prune --store "$store" --s3-endpoint "$S3_EP" --policy count:1000)
  left=$("$AWS" --endpoint-url "$S3_EP" s3 ls "$store/" | wc -l)
  [[ "$left" == 1000 ]] || die "prune left $left backups on $server"
  echo "| S3 ($server) | $n | $cold | $warm ($warm_requests requests) | $resync ($resync_requests requests) | $prune |"
}

start_swift_s3 $'    max_concurrent_requests = 16\n'
s3_row swift-s3api

MINIO="${MINIO:-$(bash "$repo/scripts/go-test-tools.sh" --where minio)}"
[[ -x "$MINIO" ]] || die "no MinIO at $MINIO (bash scripts/go-test-tools.sh minio)"
minio_port=$(free_port)
log "starting MinIO on 127.0.0.1:$minio_port"
MINIO_ROOT_USER=bench-user MINIO_ROOT_PASSWORD=bench-secret-key MINIO_BROWSER=off MINIO_UPDATE=off HOME="$WORK" \
  "$MINIO" server "$WORK/minio" --address "127.0.0.1:$minio_port" --console-address "127.0.0.1:$(free_port)" --quiet \
  >"$WORK/minio.log" 2>&1 &
BENCH_PIDS+=("$!")
S3_EP="http://127.0.0.1:$minio_port"
for i in $(seq 1 300); do curl -sf "$S3_EP/minio/health/live" && break; sleep 0.2; [[ $i == 300 ]] && die "MinIO did not start"; done
export AWS_ACCESS_KEY_ID=bench-user AWS_SECRET_ACCESS_KEY=bench-secret-key
"$AWS" --endpoint-url "$S3_EP" s3 mb s3://bench >/dev/null
s3_row minio
