#!/usr/bin/env bash
# Uploading a backup to Azure Blob (Azurite) beside the same upload to S3 (Swift s3api), in one run:
# etcdadm's staged-block writer against Microsoft's Azure SDK (@azure/storage-blob uploadFile, the
# peer tool for Azure) and against etcdadm's own S3 multipart writer.
#
# Starts a throw-away etcd (loopback, temp dir), loads Kubernetes-like objects
# (bench/load_k8s_like.py), takes `etcdctl snapshot save` at the target size, stops etcd, starts
# Swift s3api (test/support/swift_s3_server.py) and Azurite (test/support/azurite, the servers the
# tests use; both check signatures), then measures, alternating, BENCH_RUNS times each:
#   - node azure_oracle.js upload SNAP                        (Azure SDK defaults: 4 MiB blocks, 5 in parallel)
#   - etcdadm backup import SNAP --store azureblob://bench/raw (--compression none: the same bytes go up)
#   - etcdadm backup import SNAP --store s3://bench/raw        (the same import to S3)
#
# Environment:
#   BENCH_DB_MB    target etcd db size in MiB (default 400; e.g. 20 for a smoke test)
#   BENCH_RUNS     runs per measurement (default 3)
#   BENCH_THREADS  loader connections (default 6)
#   BENCH_TMPDIR   parent of the temp dir (default ${TMPDIR:-/tmp})
#   BENCH_RESULTS  also write the markdown report to this file
#   ETCDADM, ETCD, ETCDCTL   binaries (defaults: build/cmd/etcdadm, PATH)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
azurite_dir="$repo/test/support/azurite"
[[ -d "$azurite_dir/node_modules/azurite" ]] || die "Azurite missing: scripts/install-deps.sh --with-test-servers"

make_workdir
for v in AWS_PROFILE AWS_CA_BUNDLE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 S3_ENDPOINT S3_ACCESS_KEY_ID \
         S3_SECRET_ACCESS_KEY AWS_SESSION_TOKEN ETCDADM_STORE AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY \
         AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_CONNECTION_STRING; do unset "$v" || true; done
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

start_etcd
load_etcd "$DB_MB"
"$ETCDCTL" --endpoints "$EP" snapshot save "$WORK/snap.db" >/dev/null
stop_pid "$ETCD_PID"  # frees its CPU and memory for the uploads
SNAP_SIZE=$(stat -c %s "$WORK/snap.db")

start_swift_s3
log "starting Azurite"
AZ_PORT=$(free_port)
node "$azurite_dir/node_modules/azurite/dist/src/blob/main.js" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" \
  --location "$WORK/azurite" --skipApiVersionCheck --disableTelemetry >"$WORK/azurite.log" 2>&1 &
BENCH_PIDS+=("$!")
for i in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$AZ_PORT/" && break; sleep 0.1; [[ $i == 300 ]] && die "Azurite did not start"; done
AZ_EP="http://127.0.0.1:$AZ_PORT/devstoreaccount1"
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=$AZ_EP;"
node "$azurite_dir/azure_oracle.js" create-container bench

for r in $(seq 1 "$RUNS"); do
  log "run $r/$RUNS"
  measure sdk node "$azurite_dir/azure_oracle.js" upload bench "sdk/snap-$r.db" "$WORK/snap.db"
  measure adm_azure "$ETCDADM" --log-level warn backup import "$WORK/snap.db" --store azureblob://bench/raw \
    --compression none -o json
  measure adm_s3 "$ETCDADM" --log-level warn backup import "$WORK/snap.db" --store s3://bench/raw \
    --s3-endpoint "$S3_EP" --compression none -o json
done

sdk=$(wall sdk); adm_azure=$(wall adm_azure); adm_s3=$(wall adm_s3)
vs_sdk=$(ratio "$adm_azure" "$sdk"); vs_s3=$(ratio "$adm_azure" "$adm_s3")
rss_azure=$(rss_max_mib adm_azure)
report() {
  cat <<EOF2
### etcdadm to Azure Blob (Azurite) beside the Azure SDK and beside etcdadm to S3 (Swift s3api)

- $(machine); Azurite $(node -p "require('$azurite_dir/node_modules/azurite/package.json').version"), @azure/storage-blob $(node -p "require('$azurite_dir/node_modules/@azure/storage-blob/package.json').version")
- snapshot $(mib "$SNAP_SIZE") MiB of Kubernetes-like data; $RUNS runs each, alternating; load average at start $LOAD_START
- etcdadm defaults: 8 MiB blocks/parts, 4 in parallel, Shared Key / SigV4 signed; the SDK's uploadFile: 4 MiB blocks, 5 in parallel

| Measurement | wall s (median) | runs (s) | peak RSS MiB (max) |
|---|---:|---|---:|
| Azure SDK uploadFile (node) | $sdk | $(allruns "$WORK/m.sdk.wall") | $(rss_max_mib sdk) |
| **etcdadm backup import to azureblob://, no compression** | **$adm_azure** | $(allruns "$WORK/m.adm_azure.wall") | **$rss_azure** |
| etcdadm backup import to s3:// (Swift), no compression | $adm_s3 | $(allruns "$WORK/m.adm_s3.wall") | $(rss_max_mib adm_s3) |

| Check | value | target | met |
|---|---:|---:|:---:|
| upload wall: etcdadm to Azure / Azure SDK (same bytes, same server) | ${vs_sdk}x | <= 1.00x | $(yes_no le "$vs_sdk" 1.0) |
| upload wall: etcdadm to Azure / etcdadm to S3 (information: two different servers) | ${vs_s3}x | - | - |
| etcdadm peak RSS to Azure | $rss_azure MiB | <= 128 MiB | $(yes_no le "$rss_azure" 128) |
EOF2
}
report
[[ -n "${BENCH_RESULTS:-}" ]] && report >"$BENCH_RESULTS"
exit 0
