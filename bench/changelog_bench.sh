#!/usr/bin/env bash
# Continuous backup (issue 11), measured: the change log's capture under the fastest Kubernetes-like
# write load this machine's etcd sustains, and the replay of that log in a point-in-time restore,
# against the time the same writes took on the live member.
#
#   1. A throw-away etcd gets BENCH_BASE_MB of Kubernetes-like objects (load_k8s_like.py) and one
#      backup into a local store.
#   2. A sidecar with --continuous (--segment-interval BENCH_INTERVAL, default 5s) runs under GNU
#      time beside it, its /metrics sampled every 0.5 s (RPO seconds, lag in revisions), while the
#      loader writes BENCH_LOG_MB more (txns of 128 puts, BENCH_THREADS connections).
#   3. After the load: how long until the log holds the last revision; the sidecar is stopped; its
#      CPU seconds and peak RSS come from GNU time.
#   4. The live member's HashKV at the last revision, then the member is stopped.
#   5. `etcdadm backup restore latest --to-revision end` replays the whole log onto the backup
#      (native restore): wall time and peak RSS, and the replay's own time (replay.seconds) against
#      the writes, revisions/s, MB/s; etcd is started on the result and its HashKV at the last
#      revision compared with the live member's.
#
# Environment: BENCH_BASE_MB (default 50), BENCH_LOG_MB (default 1024), BENCH_INTERVAL (default
# 5s), BENCH_THREADS (default 6), BENCH_TMPDIR, BENCH_RESULTS, ETCDADM, ETCD, ETCDCTL.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
BASE_MB="${BENCH_BASE_MB:-50}"
LOG_MB="${BENCH_LOG_MB:-1024}"
INTERVAL="${BENCH_INTERVAL:-5s}"
make_workdir

start_etcd
load_etcd "$BASE_MB"; next=$LOADED_NEXT
"$ETCDADM" --log-level warn backup save --store "$WORK/store" --endpoints "$EP" -o json >"$WORK/save.json"
SNAP_REV=$(json_field "$WORK/save.json" revision)
revision() {
  "$ETCDCTL" --endpoints "$EP" endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])'
}

METRICS_PORT=$(free_port)
log "sidecar with --continuous --segment-interval $INTERVAL"
"$TIME" -v -o "$WORK/sidecar.time" "$ETCDADM" --log-level info backup sidecar --store "$WORK/store" \
  --endpoints "$EP" --schedule @yearly --listen "127.0.0.1:$METRICS_PORT" --continuous \
  --segment-interval "$INTERVAL" >"$WORK/sidecar.log" 2>&1 &
TIME_PID=$!
# The sidecar itself is GNU time's child: signals go to it (time would die and leave it running).
for _ in $(seq 1 50); do SIDECAR_PID=$(pgrep -P "$TIME_PID" || true); [[ -n "$SIDECAR_PID" ]] && break; sleep 0.1; done
[[ -n "$SIDECAR_PID" ]] || die "the sidecar did not start"
BENCH_PIDS+=("$SIDECAR_PID")

# metric NAME: the sidecar's current value (empty when not there).
metric() {
  python3 - "$METRICS_PORT" "$1" <<'EOF'
import sys, urllib.request
try:
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=2).read().decode()
except Exception:
    sys.exit(0)
for line in body.splitlines():
    if line.startswith(sys.argv[2] + " "):
        print(line.split()[1])
EOF
}
for _ in $(seq 1 100); do [[ "$(metric etcdadm_changelog_capturing)" == "1" ]] && break; sleep 0.2; done
[[ "$(metric etcdadm_changelog_capturing)" == "1" ]] || { cat "$WORK/sidecar.log" >&2; die "the sidecar does not capture"; }

# Sampler: RPO and lag twice a second until $WORK/stop-sampling exists.
(
  while [[ ! -e "$WORK/stop-sampling" ]]; do
    echo "$(metric etcdadm_changelog_rpo_seconds) $(metric etcdadm_changelog_lag_revisions)" >>"$WORK/samples"
    sleep 0.5
  done
) &
SAMPLER_PID=$!
BENCH_PIDS+=("$SAMPLER_PID")

REV0=$(revision)
t0=$(date +%s%N)
next2=$(python3 "$here/load_k8s_like.py" --endpoint "$EP" --target-mb $((BASE_MB + LOG_MB)) --threads "$THREADS" \
  --start "$next" 2>"$WORK/load.err" | sed -n 's/^next_index=//p')
t1=$(date +%s%N)
# Keys and values written (the log's payload), from the loader's summary line.
KV_MIB=$(awk '/^loaded .* keys \(avg value\+key/ { gsub(/[()]/, ""); printf "%.0f", $2 * $6 / 1048576 }' "$WORK/load.err")
LAST=$(revision)
LOAD_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
KEYS=$((next2 - next))
# Until the store holds the last revision.
while [[ "$(metric etcdadm_changelog_stored_revision)" -lt "$LAST" ]]; do sleep 0.1; done
t2=$(date +%s%N)
CATCHUP_S=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
touch "$WORK/stop-sampling"
wait "$SAMPLER_PID" 2>/dev/null || true
SEGMENTS=$(metric etcdadm_changelog_segments_total)
LOG_BYTES=$(metric etcdadm_changelog_bytes_total)
kill -TERM "$SIDECAR_PID"
wait "$TIME_PID" || true
SIDECAR_CPU=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.1f", u + s }' "$WORK/sidecar.time")
SIDECAR_RSS=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$WORK/sidecar.time")
RPO_MAX=$(awk '$1 != "" && $1 > m { m = $1 } END { printf "%.2f", m }' "$WORK/samples")
RPO_P50=$(awk '$1 != "" { print $1 }' "$WORK/samples" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }')
LAG_MAX=$(awk '$2 != "" && $2 > m { m = $2 } END { print m + 0 }' "$WORK/samples")

hashkv() { "$ETCDCTL" --endpoints "$1" --command-timeout 600s endpoint hashkv --rev "$LAST" -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["HashKV"]["hash"])'; }
# The live member's hash, then the member stopped: the replay and the replayed member run alone
# (at 8 GiB, two members each mapping a 9 GiB db would share this machine's memory).
H_LIVE=$(hashkv "$EP")
ETCD_CPU=$(server_cpu_s)
stop_pid "$ETCD_PID"

log "replaying $((LAST - SNAP_REV)) revisions"
peer_port=$(free_port)
# --keep-revision: the keys are Kubernetes-like (/registry/), which a restore would bump and mark
# compacted by default; the HashKV below compares the replayed revisions themselves.
measure replay "$ETCDADM" --log-level warn backup restore latest --store "$WORK/store" --to-revision end --keep-revision \
  --data-dir "$WORK/replayed" --name r --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" -o json
REPLAY_S=$(wall replay)
cp "$WORK/last.out" "$WORK/replay.json"

# The result must be the live member's state: HashKV at the last revision.
client_port=$(free_port)
"$ETCD" --name r --data-dir "$WORK/replayed" --listen-client-urls "http://127.0.0.1:$client_port" \
  --advertise-client-urls "http://127.0.0.1:$client_port" --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" --initial-cluster "r=http://127.0.0.1:$peer_port" \
  --quota-backend-bytes 8589934592 --logger zap --log-outputs "$WORK/replayed.log" >/dev/null 2>&1 &
R_PID=$!
BENCH_PIDS+=("$R_PID")
for _ in $(seq 1 150); do "$ETCDCTL" --endpoints "127.0.0.1:$client_port" endpoint health >/dev/null 2>&1 && break; sleep 0.2; done
H_REPLAYED=$(hashkv "127.0.0.1:$client_port")
[[ "$H_LIVE" == "$H_REPLAYED" ]] || die "HashKV at $LAST: live $H_LIVE, replayed $H_REPLAYED"
stop_pid "$R_PID"

REVS=$((LAST - REV0))
# The replay's own time (restore's replay.seconds: the log read, checked and applied, the db synced)
# against the writes it replays, and per GiB of the log's keys and values; then the whole restore
# (the snapshot of BASE_MB fetched, verified and restored first).
REPLAY_ONLY_S=$(json_field "$WORK/replay.json" replay.seconds)
figure "PITR replay, s: the change log replayed by backup restore --to-revision end ($KV_MIB MiB of keys and values, $((LAST - SNAP_REV)) revisions) / the same writes into etcd" "$(awk -v s="$REPLAY_ONLY_S" 'BEGIN { printf "%.3f", s }')" "$LOAD_S" "<= 0.2x"
figure "PITR replay, s per GiB of keys and values in the log (read, inflate, parse, apply, sync)" "$(awk -v s="$REPLAY_ONLY_S" -v m="$KV_MIB" 'BEGIN { printf "%.3f", s * 1024 / m }')" - "<= 4"
figure "PITR restore, s: the whole backup restore --to-revision end (a $BASE_MB MiB snapshot fetched, verified and restored, then the replay)" "$REPLAY_S" - ""
figure "PITR replay peak RSS, MiB" "$(rss_max_mib replay)" - ""
report() {
  local keys_per_s interval_s
  keys_per_s=$(awk -v k="$KEYS" -v s="$LOAD_S" 'BEGIN { printf "%.0f", k / s }')
  interval_s=$(awk -v i="$INTERVAL" 'BEGIN { sub(/s$/, "", i); print i }')
  cat <<EOR
### Change log: capture under load, replay in a point-in-time restore

- $(machine); etcd $("$ETCD" --version | awk '/^etcd Version/ { print $3 }')
- \`BENCH_BASE_MB=$BASE_MB BENCH_LOG_MB=$LOG_MB BENCH_INTERVAL=$INTERVAL bench/changelog_bench.sh\`
- load: $KEYS Kubernetes-like objects (~1.65 KB) in txns of 128 puts over $THREADS connections, $REVS revisions,
  $KV_MIB MiB of keys and values, dbSize $BASE_MB -> $((BASE_MB + LOG_MB)) MiB, in $LOAD_S s: **$keys_per_s keys/s**
- the log: $SEGMENTS segments, $(mib "$LOG_BYTES") MiB stored (gzip)

| Capture (sidecar beside etcd, local store) | value |
|---|---:|
| RPO while loading, median of samples every 0.5 s (s) | $RPO_P50 |
| RPO while loading, max (s); goal < 2 x interval = $(awk -v i="$interval_s" 'BEGIN { print 2 * i }') | $RPO_MAX |
| lag while loading, max (revisions) | $LAG_MAX |
| log complete after the load ended (s) | $CATCHUP_S |
| sidecar CPU (s) / share of the load's wall time | $SIDECAR_CPU / $(awk -v c="$SIDECAR_CPU" -v s="$LOAD_S" 'BEGIN { printf "%.0f%%", 100 * c / s }') |
| etcd CPU over the whole run (s), for scale | $ETCD_CPU |
| sidecar peak RSS (MiB); goal <= 64 | $SIDECAR_RSS |

| Replay (\`backup restore latest --to-revision end\`, native) | value |
|---|---:|
| revisions replayed | $((LAST - SNAP_REV)) |
| wall s (fetch + verify 1 snapshot + replay + data dir) | $REPLAY_S |
| of which the replay itself (s) | $(awk -v s="$REPLAY_ONLY_S" 'BEGIN { printf "%.3f", s }') |
| revisions/s, the replay itself | $(awk -v r="$((LAST - SNAP_REV))" -v s="$REPLAY_ONLY_S" 'BEGIN { printf "%.0f", r / s }') |
| keys/s, the replay itself | $(awk -v k="$KEYS" -v s="$REPLAY_ONLY_S" 'BEGIN { printf "%.0f", k / s }') |
| MiB of keys and values / s, the replay itself | $(awk -v m="$KV_MIB" -v s="$REPLAY_ONLY_S" 'BEGIN { printf "%.0f", m / s }') |
| peak RSS MiB | $(rss_max_mib replay) |
| **replay speed vs the original writes (goal >= 5x): the replay itself** | **$(ratio "$LOAD_S" "$REPLAY_ONLY_S")x** |
| the same, the whole restore | $(ratio "$LOAD_S" "$REPLAY_S")x |
| HashKV at revision $LAST, replayed == live | yes ($H_LIVE) |
EOR
}
report | tee "${BENCH_RESULTS:-/dev/null}"
