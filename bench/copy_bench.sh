#!/usr/bin/env bash
# `etcdadm backup copy` S3 -> S3 against `aws s3 cp --recursive` of the same objects, in one run, on
# the tests' S3 server (OpenStack Swift with s3api, loopback). etcdadm streams each data file
# through the client and checks its SHA-256 before the target object is committed; `aws s3 cp`
# between two S3 locations of one endpoint asks the server to copy (CopyObject / UploadPartCopy):
# no byte passes through the client, and nothing is checked. Runs alternate, BENCH_RUNS times,
# each into a fresh prefix; medians are reported with every run.
#
# Environment: BENCH_DB_MB (default 400), BENCH_RUNS (3), BENCH_THREADS, BENCH_TMPDIR, BENCH_RESULTS,
# ETCDADM, ETCD, ETCDCTL (default: build/cmd/etcdadm, etcd and etcdctl on PATH).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
make_workdir
start_swift_s3
start_etcd
load_etcd "$DB_MB"; next=$LOADED_NEXT
DB=$(db_bytes)
log "loaded: $next keys, db $(mib "$DB") MiB"
"$ETCDADM" --log-level warn backup save --store s3://bench/src --s3-endpoint "$S3_EP" --endpoints "$EP" -o json \
  >"$WORK/saved.json"
NAME=$(json_field "$WORK/saved.json" backup)
STORED=$(json_field "$WORK/saved.json" storedSize)
stop_pid "$ETCD_PID"

for r in $(seq 1 "$RUNS"); do
  log "run $r/$RUNS"
  measure aws /usr/bin/aws --endpoint-url "$S3_EP" s3 cp --recursive --only-show-errors "s3://bench/src/$NAME/" \
    "s3://bench/aws-$r/$NAME/"
  measure copy "$ETCDADM" --log-level warn backup copy "$NAME" --from s3://bench/src --to "s3://bench/copy-$r" \
    --s3-endpoint "$S3_EP" -o json
done

report() {
  echo "## copy_bench.sh: \`backup copy\` S3 -> S3 vs \`aws s3 cp\`"
  echo
  echo "- $(machine)"
  echo "- S3: Swift s3api on loopback; one backup of a $(mib "$DB") MiB db ($next keys), stored $(mib "$STORED") MiB; $RUNS runs each, alternating; wall = median"
  echo
  echo "| command | wall s | runs | peak RSS MiB |"
  echo "|---|---|---|---|"
  echo "| aws s3 cp --recursive (server-side copy, unchecked) | $(wall aws) | $(allruns "$WORK/m.aws.wall") | $(rss_mib aws) |"
  echo "| etcdadm backup copy (streamed, SHA-256 checked) | $(wall copy) | $(allruns "$WORK/m.copy.wall") | $(rss_mib copy) |"
  echo
  echo "| measure | value | goal | met |"
  echo "|---|---|---|---|"
  local q; q=$(ratio "$(wall copy)" "$(wall aws)")
  figure "copy, s: etcdadm backup copy S3 -> S3 (every byte checked) / aws s3 cp --recursive (server-side)" "$(wall copy)" "$(wall aws)" "<= 1.0x"
  echo "| copy wall / aws s3 cp | ${q}x | <= 1.0x | $(yes_no le "$q" 1.0) |"
}
report | tee "${BENCH_RESULTS:-/dev/null}"
