#!/usr/bin/env bash
# Compares uploading a backup to a local S3 server: etcdadm vs `/usr/bin/aws s3 cp`, in one run.
#
# Starts a throw-away etcd (loopback, temp dir), loads Kubernetes-like objects
# (bench/load_k8s_like.py), takes `etcdctl snapshot save` at a quarter of the target size and at
# the full size, starts OpenStack Swift with s3api (test/support/swift_s3_server.py, the same
# SigV4-checking server the tests use), then measures, alternating, BENCH_RUNS times each:
#   - aws s3 cp SNAP s3://bench/aws/...                      (AWS CLI defaults: 8 MiB parts, 10 threads)
#   - etcdadm backup import SNAP --store s3://bench/raw      (--compression none: the same bytes go up,
#                                                             plus SHA-256 of db and stored bytes)
#   - etcdadm backup import SNAP --store s3://bench/gz       (the default gzip store: info)
# and the two etcdadm imports once more on the quarter-size snapshot (RSS flat in object size?).
#
# Environment:
#   BENCH_DB_MB    target etcd db size in MiB (default 400; e.g. 20 for a smoke test)
#   BENCH_RUNS     runs per measurement (default 3)
#   BENCH_THREADS  loader connections (default 6)
#   BENCH_TMPDIR   parent of the temp dir (default ${TMPDIR:-/tmp})
#   BENCH_RESULTS  also write the markdown report to this file
#   ETCDADM, ETCD, ETCDCTL, AWS   binaries (defaults: build/cmd/etcdadm, PATH, /usr/bin/aws)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
AWS="${AWS:-/usr/bin/aws}"
[[ -x "$AWS" ]] || die "$AWS missing (apt-get install awscli)"

make_workdir
# Only what this script sets: the machine may carry AWS settings of its own.
for v in AWS_PROFILE AWS_CA_BUNDLE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 S3_ENDPOINT S3_ACCESS_KEY_ID \
         S3_SECRET_ACCESS_KEY AWS_SESSION_TOKEN ETCDADM_STORE; do unset "$v" || true; done
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

start_etcd
load_etcd "$QUARTER_MB"; next=$LOADED_NEXT
"$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/q-snap.db" >/dev/null
load_etcd "$DB_MB" "$next"
"$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/snap.db" >/dev/null
stop_pid "$ETCD_PID"  # frees its CPU and memory for the uploads
SNAP_SIZE=$(stat -c %s "$WORK/snap.db")
Q_SIZE=$(stat -c %s "$WORK/q-snap.db")

start_swift_s3

adm_import() {  # ID STORE SNAPSHOT COMPRESSION
  measure "$1" "$ETCDADM" --log-level warn backup import "$3" --store "$2" --s3-endpoint "$S3_EP" \
    --compression "$4" -o json
}
for r in $(seq 1 "$RUNS"); do
  log "run $r/$RUNS"
  measure aws_cp "$AWS" --endpoint-url "$S3_EP" s3 cp --no-progress "$WORK/snap.db" "s3://bench/aws/snap-$r.db"
  adm_import adm_raw s3://bench/raw "$WORK/snap.db" none
  adm_import adm_gz s3://bench/gz "$WORK/snap.db" gzip
done
log "quarter-size snapshot, $RUNS runs"
for r in $(seq 1 "$RUNS"); do
  adm_import q_adm_raw s3://bench/raw "$WORK/q-snap.db" none
done

aws_cp=$(wall aws_cp); adm_raw=$(wall adm_raw); adm_gz=$(wall adm_gz)
raw_ratio=$(ratio "$adm_raw" "$aws_cp")
rss_full=$(rss_max_mib adm_raw); rss_q=$(rss_max_mib q_adm_raw)
report() {
  cat <<EOF
### etcdadm vs aws s3 cp: upload to a local S3 server (Swift s3api)

- $(machine); $("$AWS" --version 2>&1 | cut -d' ' -f1)
- snapshot $(mib "$SNAP_SIZE") MiB (quarter: $(mib "$Q_SIZE") MiB) of Kubernetes-like data; $RUNS runs each, alternating; load average at start $LOAD_START
- etcdadm defaults: 8 MiB parts, 4 in parallel, signed payloads (SHA-256 of every part); aws s3 cp defaults: 8 MiB parts, 10 threads

| Measurement | wall s (median) | runs (s) | peak RSS MiB (max) | bytes sent MiB |
|---|---:|---|---:|---:|
| aws s3 cp | $aws_cp | $(allruns "$WORK/m.aws_cp.wall") | $(rss_max_mib aws_cp) | $(mib "$SNAP_SIZE") |
| **etcdadm backup import, store without compression** | **$adm_raw** | $(allruns "$WORK/m.adm_raw.wall") | **$rss_full** | $(mib "$SNAP_SIZE") |
| etcdadm backup import, gzip store (default) | $adm_gz | $(allruns "$WORK/m.adm_gz.wall") | $(rss_max_mib adm_gz) | (compressed) |
| quarter size: etcdadm import, no compression | $(wall q_adm_raw) | $(allruns "$WORK/m.q_adm_raw.wall") | $rss_q | $(mib "$Q_SIZE") |

| Check | value | target | met |
|---|---:|---:|:---:|
| upload wall: etcdadm / aws s3 cp (same bytes) | ${raw_ratio}x | <= 1.00x | $(yes_no le "$raw_ratio" 1.0) |
| etcdadm peak RSS, default parallelism | $rss_full MiB | <= 128 MiB | $(yes_no le "$rss_full" 128) |
| etcdadm peak RSS, quarter -> full object | $rss_q -> $rss_full MiB | flat (<= +8 MiB) | $(yes_no le "$(awk -v a="$rss_full" -v b="$rss_q" 'BEGIN { print a - b }')" 8) |
EOF
}
report
[[ -n "${BENCH_RESULTS:-}" ]] && report >"$BENCH_RESULTS"
exit 0
