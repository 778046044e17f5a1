#!/usr/bin/env bash
# etcdadm auto (issue 38): three hosts as processes on 127.0.0.21-23 sharing an S3 store (MinIO
# behind bench/count_proxy.py, which counts every request), measured for
#   - bootstrap: seconds from the last `etcdadm auto` started to one cluster of three started members;
#   - idle: each controller's CPU (utime + stime from /proc/PID/stat over the window, as % of one
#     core) and RSS (VmRSS at the end, VmHWM), with the cluster as the spec says;
#   - store requests per host and hour over the idle window, by kind (GET, HEAD, LIST, PUT), and
#     what they cost a month at S3 Standard's list prices (PUT/POST/LIST $0.005 per 1,000; GET/HEAD
#     $0.0004 per 1,000).
# Backups are off (--no-backups) so that only the controller's own traffic is counted; a schedule
# adds the sidecar's requests (about 10 per backup plus retention's).
#
# `replace` measures instead a member lost for good on a loaded cluster: BENCH_DB_MB (default 400)
# of Kubernetes-like objects (load_k8s_like.py over TLS), then a follower's etcd killed -9 and its
# data dir deleted (a host rebuilt on a new disk); seconds from the kill to three healthy voters
# again (the new member promoted, every member healthy, HashKV equal), against the target
# grace + 30 s, with the controllers' timeline (removal, add, join, promotion) from their events.
#
# `restore` measures the opt-in recovery from a total loss (issue 39): BENCH_DB_MB (default 400)
# of objects, a backup, then BENCH_LOG_MB (default 200) more written into the change log the
# leader's sidecar captures (--continuous); every etcd killed -9 and its data dir deleted (the
# controllers paused meanwhile); seconds from the resume to three healthy voters serving the log's last revision (moved on by the plan's
# bump), with BENCH_RESTORE_DELAY (default 5s) of it the spec's --auto-restore-delay, against the
# target of 15 s for the restore itself (from the plan written).
#
# `roles` measures the store requests of each role (issue 60): four hosts, the spec three, so one
# is a spare; each host talks to the store through a counting proxy of its own, so its requests
# are its own. Two windows of BENCH_IDLE_SECONDS: the cluster as the spec says (the acting
# controller, the Raft leader's host; two followers; the spare), then paused (`etcdadm auto
# pause`: every host waiting). Per role: requests an hour by kind, and the S3 cost a month, beside
# the figures docs/self-management.md gives (1,680 an hour, $1.70 a month per idle host).
#
# Usage: bench/auto_bench.sh            (BENCH_IDLE_SECONDS, default 300; BENCH_ETCD_MINOR, default 3.7)
#        bench/auto_bench.sh roles      (BENCH_IDLE_SECONDS, default 300)
#        bench/auto_bench.sh replace    (BENCH_DB_MB, default 400; BENCH_GRACE, default 30s)
#        bench/auto_bench.sh restore    (BENCH_DB_MB, default 400; BENCH_LOG_MB, default 200)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
source "$here/lib.sh"

ETCDADM="${ETCDADM:-$repo/build/cmd/etcdadm}"
MODE="${1:-idle}"
[[ $MODE == idle || $MODE == replace || $MODE == restore || $MODE == roles ]] ||
  die "usage: bench/auto_bench.sh [replace|restore|roles]"
IDLE="${BENCH_IDLE_SECONDS:-300}"
DB_MB="${BENCH_DB_MB:-400}"
GRACE="${BENCH_GRACE:-30s}"
LOG_MB="${BENCH_LOG_MB:-200}"
RESTORE_DELAY="${BENCH_RESTORE_DELAY:-5s}"
MINOR="${BENCH_ETCD_MINOR:-3.7}"
[[ -x "$ETCDADM" ]] || die "etcdadm not found at $ETCDADM"
read -r VERSION BIN < <("$repo/scripts/etcd-versions.sh" --where "$MINOR") || die "no etcd $MINOR (scripts/etcd-versions.sh $MINOR)"
MINIO="$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/etcdadm/go-tools/minio-*/minio 2>/dev/null | head -1)"
[[ -x "$MINIO" ]] || die "MinIO not built (scripts/go-test-tools.sh minio)"
command -v aws >/dev/null || die "aws CLI missing (apt-get install awscli)"
make_workdir

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret-key AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
export AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent
unset AWS_CA_BUNDLE || true
MINIO_PORT=$(free_port); PROXY_PORT=$(free_port)
MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY MINIO_BROWSER=off MINIO_UPDATE=off HOME="$WORK" \
  "$MINIO" server "$WORK/minio" --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$(free_port)" --quiet \
  >"$WORK/minio.log" 2>&1 &
BENCH_PIDS+=($!)
python3 "$here/count_proxy.py" "$PROXY_PORT" "127.0.0.1:$MINIO_PORT" >"$WORK/proxy.log" 2>&1 &
BENCH_PIDS+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$MINIO_PORT/minio/health/live" >/dev/null && break; sleep 0.2; done
aws --endpoint-url "http://127.0.0.1:$MINIO_PORT" s3 mb s3://auto >/dev/null
STORE=(--store s3://auto/main --s3-endpoint "http://127.0.0.1:$PROXY_PORT")
# The proxy counts the idle controllers' requests; a restore's hosts read MinIO directly (the proxy
# relaying every host's backup and log through one Python process would take the CPU the hosts'
# restores need on this machine, where a real store is elsewhere).
[[ $MODE == restore ]] && STORE=(--store s3://auto/main --s3-endpoint "http://127.0.0.1:$MINIO_PORT")

declare -a NAMES=(m1 m2 m3) CPORT PPORT AUTO_PID HOST_PROXY
[[ $MODE == roles ]] && NAMES=(m1 m2 m3 m4)
host_store() {  # the store flags of host $1 (index): through its own counting proxy in `roles`
  if [[ $MODE == roles ]]; then
    echo --store s3://auto/main --s3-endpoint "http://127.0.0.1:${HOST_PROXY[$1]}"
  else
    echo "${STORE[@]}"
  fi
}
flags() {  # the member flags of host $1 (index)
  local i=$1 n=${NAMES[$1]}
  echo --name "$n" --bind-address "127.0.0.2$((i + 1))" --client-port "${CPORT[$i]}" --peer-port "${PPORT[$i]}" \
    --binaries-dir "$BIN" --install-dir "$WORK/$n/bin" --certs-dir "$WORK/$n/pki" --data-dir "$WORK/$n/data" \
    --config-dir "$WORK/$n/conf" --cache-dir "$WORK/cache" --init-system process
}
for i in "${!NAMES[@]}"; do
  CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); mkdir -p "$WORK/${NAMES[$i]}"
  BENCH_PID_FILES+=("$WORK/${NAMES[$i]}/conf/etcd.pid")
  if [[ $MODE == roles ]]; then
    HOST_PROXY[$i]=$(free_port)
    python3 "$here/count_proxy.py" "${HOST_PROXY[$i]}" "127.0.0.1:$MINIO_PORT" >"$WORK/proxy-${NAMES[$i]}.log" 2>&1 &
    BENCH_PIDS+=($!)
  fi
done
# shellcheck disable=SC2046
"$ETCDADM" init phase certificates $(flags 0) >/dev/null 2>&1
for ((i = 1; i < ${#NAMES[@]}; i++)); do mkdir -p "$WORK/${NAMES[$i]}/pki"; cp "$WORK/m1/pki/ca.crt" "$WORK/m1/pki/ca.key" "$WORK/${NAMES[$i]}/pki/"; done
SEED_EXTRA=() BACKUPS=(--no-backups)
if [[ $MODE == restore ]]; then
  SEED_EXTRA=(--auto-restore on --auto-restore-delay "$RESTORE_DELAY")
  BACKUPS=(--schedule "@every 720h" --continuous --segment-interval 1s)
fi
"$ETCDADM" seed "${STORE[@]}" --members 3 --version "$VERSION" --replace-after "$GRACE" "${SEED_EXTRA[@]}" \
  --certs-dir "$WORK/m1/pki" >/dev/null

log "starting ${#NAMES[@]} controllers (etcd $VERSION)"
for i in "${!NAMES[@]}"; do
  # shellcheck disable=SC2046
  ETCDADM_CATALOG="$WORK/${NAMES[$i]}/catalog.db" "$ETCDADM" auto $(host_store "$i") "${BACKUPS[@]}" $(flags "$i") \
    >"$WORK/${NAMES[$i]}/auto.log" 2>&1 &
  AUTO_PID[$i]=$!
  BENCH_PIDS+=($!)
done
started=$(date +%s%N)
members_started() {
  local out
  out=$(ETCDCTL_API=3 "$BIN/etcdctl" --endpoints "https://127.0.0.1:${CPORT[0]}" --cacert "$WORK/m1/pki/ca.crt" \
    --cert "$WORK/m1/pki/etcdctl-etcd-client.crt" --key "$WORK/m1/pki/etcdctl-etcd-client.key" member list -w json 2>/dev/null) || return 1
  [[ $(python3 -c 'import json,sys; m=json.load(sys.stdin).get("members",[]); print(sum(1 for x in m if x.get("name")))' <<<"$out") == 3 ]]
}
for _ in $(seq 1 600); do members_started && break; sleep 0.1; done
members_started || die "no cluster of three after 60 s (logs in $WORK)"
bootstrap_ms=$(( ($(date +%s%N) - started) / 1000000 ))

ctl() {  # etcdctl through host $1 (index), with m1's client certificate
  local i=$1; shift
  ETCDCTL_API=3 "$BIN/etcdctl" --endpoints "https://127.0.0.1:${CPORT[$i]}" --cacert "$WORK/m1/pki/ca.crt" \
    --cert "$WORK/m1/pki/etcdctl-etcd-client.crt" --key "$WORK/m1/pki/etcdctl-etcd-client.key" "$@"
}

three_healthy_voters() {  # three started voters, none a learner, every member healthy
  local list health
  list=$(ctl 0 member list -w json 2>/dev/null) || return 1
  python3 -c 'import json,sys
m = json.load(sys.stdin).get("members", [])
sys.exit(0 if len(m) == 3 and all(x.get("name") and not x.get("isLearner") for x in m) else 1)' <<<"$list" || return 1
  health=$(ctl 0 endpoint health --cluster -w json 2>/dev/null) || return 1
  python3 -c 'import json,sys
h = json.load(sys.stdin)
sys.exit(0 if len(h) == 3 and all(x.get("health") for x in h) else 1)' <<<"$health"
}

replace_bench() {
  log "bootstrap: ${bootstrap_ms} ms; loading ${DB_MB} MiB of Kubernetes-like objects"
  python3 "$here/load_k8s_like.py" --endpoint "127.0.0.1:${CPORT[0]}" --target-mb "$DB_MB" --cacert "$WORK/m1/pki/ca.crt" \
    --cert "$WORK/m1/pki/etcdctl-etcd-client.crt" --key "$WORK/m1/pki/etcdctl-etcd-client.key" >/dev/null 2>"$WORK/load.log" ||
    die "loading failed: $(tail -3 "$WORK/load.log")"
  local status leader victim=-1 i
  status=$(ctl 0 endpoint status --cluster -w json)
  leader=$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["leader"])' <<<"$status")
  local db_mb
  db_mb=$(python3 -c 'import json,sys; print("%.0f" % (max(e["Status"]["dbSize"] for e in json.load(sys.stdin)) / 1048576))' <<<"$status")
  for i in 0 1 2; do  # the first follower: its host loses its disk
    local id
    id=$(ctl "$i" endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["member_id"])')
    if [[ $id != "$leader" && $victim -lt 0 ]]; then victim=$i; fi
  done
  local n=${NAMES[$victim]}
  log "db ${db_mb} MiB; killing ${n}'s etcd (-9) and deleting its data dir; grace ${GRACE}"
  local t0 pid
  t0=$(date +%s%N)
  pid=$(cat "$WORK/$n/conf/etcd.pid")
  kill -9 "$pid"
  rm -rf "$WORK/$n/data"
  whole() { three_healthy_voters; }  # none of them the lost one: its member was removed
  local deadline=$(( $(date +%s) + 900 ))
  sleep 2
  until whole; do
    [[ $(date +%s) -lt $deadline ]] || die "no three healthy voters 900 s after the kill (logs in $WORK)"
    sleep 0.5
  done
  local took_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local rev hashes
  rev=$(ctl 0 endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
  hashes=$(ctl 0 endpoint hashkv --cluster --rev "$rev" -w json | python3 -c 'import json,sys; print(len({e["HashKV"]["hash"] for e in json.load(sys.stdin)}))')
  [[ $hashes == 1 ]] || die "the members' HashKV differ at revision $rev"
  local grace_s
  grace_s=$(python3 -c 'import re,sys; v=sys.argv[1]; m=re.fullmatch(r"(\d+)([smh])", v); print(int(m[1]) * {"s": 1, "m": 60, "h": 3600}[m[2]])' "$GRACE")
  echo "# etcdadm auto: a member lost for good, replaced"
  echo
  echo "$(machine); etcd $VERSION; db ${db_mb} MiB; grace ${GRACE}"
  echo
  echo "Member lost -> three healthy voters again (HashKV equal at revision $rev): **$(awk -v m="$took_ms" 'BEGIN { printf "%.1f", m / 1000 }') s** (target <= grace + 30 s = $((grace_s + 30)) s)"
  echo
  echo "| s after the kill | host | action | outcome |"
  echo "|---:|---|---|---|"
  "$ETCDADM" auto status "${STORE[@]}" --events 60 -o json | python3 -c '
import json, sys
from datetime import datetime
t0 = int(sys.argv[1]) / 1e9
for e in json.load(sys.stdin)["events"]:
    t = datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
    if t >= t0 and e["action"] != "wait":
        print("| %.1f | %s | %s | %s |" % (t - t0, e["host"], e["action"], e["outcome"][:60]))
' "$t0"
}
restore_bench() {
  local tls=(--cacert "$WORK/m1/pki/ca.crt" --cert "$WORK/m1/pki/etcdctl-etcd-client.crt" --key "$WORK/m1/pki/etcdctl-etcd-client.key")
  log "bootstrap: ${bootstrap_ms} ms; loading ${DB_MB} MiB of Kubernetes-like objects"
  local next
  next=$(python3 "$here/load_k8s_like.py" --endpoint "127.0.0.1:${CPORT[0]}" --target-mb "$DB_MB" "${tls[@]}" 2>"$WORK/load.log" |
    sed -n 's/^next_index=//p') || die "loading failed: $(tail -3 "$WORK/load.log")"
  "$ETCDADM" backup save "${STORE[@]}" --endpoints "https://127.0.0.1:${CPORT[0]}" "${tls[@]}" >/dev/null || die "backup failed"
  log "backup taken; writing ${LOG_MB} MiB more (the change log)"
  python3 "$here/load_k8s_like.py" --endpoint "127.0.0.1:${CPORT[0]}" --target-mb "$((DB_MB + LOG_MB))" --start "$next" "${tls[@]}" \
    >/dev/null 2>>"$WORK/load.log" || die "loading failed: $(tail -3 "$WORK/load.log")"
  local rev reach=0 db_mb
  rev=$(ctl 0 endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
  db_mb=$(ctl 0 endpoint status -w json | python3 -c 'import json,sys; print("%.0f" % (json.load(sys.stdin)[0]["Status"]["dbSize"] / 1048576))')
  for _ in $(seq 1 600); do
    reach=$("$ETCDADM" backup list "${STORE[@]}" -o json 2>/dev/null | python3 -c 'import json,sys
b = json.load(sys.stdin)
print((b[0].get("changeLog") or {}).get("revision", 0) if b else 0)')
    [[ $reach -ge $rev ]] && break
    sleep 0.5
  done
  [[ $reach -ge $rev ]] || die "the change log reached $reach, not $rev"
  local log_mb
  log_mb=$(du -sm "$WORK/minio/auto/main/changelog" 2>/dev/null | cut -f1)
  log "db ${db_mb} MiB at revision $rev, the log there (${log_mb} MiB stored); killing every etcd (-9) and deleting the data dirs"
  # Paused meanwhile, so that no controller starts a member between its kill and the wipe; the
  # clock starts at the resume.
  "$ETCDADM" auto pause "${STORE[@]}" --reason bench >/dev/null
  sleep 3
  local t0 i
  for i in 0 1 2; do kill -9 "$(cat "$WORK/${NAMES[$i]}/conf/etcd.pid")"; done
  for i in 0 1 2; do rm -rf "$WORK/${NAMES[$i]}/data"; done
  "$ETCDADM" auto resume "${STORE[@]}" >/dev/null
  t0=$(date +%s%N)
  # Three started voters, every endpoint healthy, past the log's last revision: asked every 50 ms
  # by one process (bench/serving_probe.py), so the moment is not lost to etcdctl's start and backoff.
  local served
  served=$(python3 "$here/serving_probe.py" --endpoint "https://127.0.0.1:${CPORT[0]}" --endpoint "https://127.0.0.1:${CPORT[1]}" \
    --endpoint "https://127.0.0.1:${CPORT[2]}" "${tls[@]}" --members 3 --after-revision "$rev" --timeout 900 |
    sed -n 's/^served_unix_ns=//p') || true
  [[ -n $served ]] || die "not serving 900 s after the kill (logs in $WORK)"
  three_healthy_voters || die "serving_probe saw the cluster serve, etcdctl does not (logs in $WORK)"
  local took_ms=$(( (served - t0) / 1000000 ))
  local plan
  plan=$("$ETCDADM" auto status "${STORE[@]}" --events 200 -o json | python3 -c '
import json, sys
from datetime import datetime
s = json.load(sys.stdin)
t0 = int(sys.argv[1]) / 1e9
planned = [e for e in s["events"] if e["action"] == "plan-restore" and e["outcome"].startswith("done")]
t = datetime.fromisoformat(planned[-1]["time"].replace("Z", "+00:00")).timestamp() if planned else 0
print("%d %d %.1f" % (s["plan"].get("toRevision", 0), s["plan"].get("kubernetesRevisionBump", 0), t - t0 if t else -1))
' "$t0")
  local to bump planned_s now
  read -r to bump planned_s <<<"$plan"
  now=$(ctl 0 endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
  echo "# etcdadm auto: total loss -> serving at the change log's last revision (auto-restore)"
  echo
  echo "$(machine); etcd $VERSION; db ${db_mb} MiB (${DB_MB} MiB in the backup, ${LOG_MB} MiB written after it: ${log_mb} MiB of stored log); --auto-restore-delay ${RESTORE_DELAY}"
  echo
  echo "Loss (resumed) -> three healthy voters: **$(awk -v m="$took_ms" 'BEGIN { printf "%.1f", m / 1000 }') s**; the plan written $planned_s s after it (the delay and the loss being seen); the restore itself: **$(awk -v m="$took_ms" -v p="$planned_s" 'BEGIN { printf "%.1f", m / 1000 - p }') s** (target <= 15 s)"
  echo
  echo "Revision before the loss $rev; the plan's log end $to (every revision: $([[ $to -eq $rev ]] && echo yes || echo no)); bump $bump; serving at $now"
  echo
  echo "Where the time went, per host (s after the resume, from each host's controller and etcd logs):"
  echo
  python3 - "$t0" "$WORK" "${NAMES[@]}" <<'PY'
import json, re, sys
from datetime import datetime
t0 = int(sys.argv[1]) / 1e9
work, names = sys.argv[2], sys.argv[3:]
def at(ts):
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() - t0
marks = [("loss counted", r"total loss: .* for 0 s"), ("restore begun", r"restore-member \(starting\)"),
         ("fetched", r"fetched and verified"), ("replayed", r"replayed \d+ revisions"), ("etcd started", r"started etcd \(pid")]
print("| host | " + " | ".join(m for m, _ in marks) + " | kvstore restored | ready to serve |")
print("|---|" + "---:|" * (len(marks) + 2))
for n in names:
    row, seen = [], {}
    for line in open("%s/%s/auto.log" % (work, n), errors="replace"):
        ts = line.split(" ", 1)[0]
        for m, rx in marks:
            if m not in seen and re.search(rx, line):
                try:
                    if at(ts) >= 0: seen[m] = at(ts)
                except ValueError:
                    pass
    etcd = {}
    for line in open("%s/%s/conf/etcd.log" % (work, n), errors="replace"):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("msg") in ("kvstore restored", "ready to serve client requests") and at(j["ts"]) >= 0:
            etcd.setdefault(j["msg"], at(j["ts"]))
    cells = ["%.1f" % seen[m] if m in seen else "-" for m, _ in marks]
    cells += ["%.1f" % etcd[k] if k in etcd else "-" for k in ("kvstore restored", "ready to serve client requests")]
    print("| %s | %s |" % (n, " | ".join(cells)))
PY
}
# Each host's requests over a window of IDLE s, as JSON {"m1": {"GET": n, ...}, ...}.
count_window() {
  local i out="{"
  for i in "${!NAMES[@]}"; do curl -sf -X POST "http://127.0.0.1:${HOST_PROXY[$i]}/__reset" >/dev/null; done
  sleep "$IDLE"
  for i in "${!NAMES[@]}"; do
    [[ $i -gt 0 ]] && out+=","
    out+="\"${NAMES[$i]}\": $(curl -sf "http://127.0.0.1:${HOST_PROXY[$i]}/__counts")"
  done
  echo "$out}"
}
roles_bench() {
  log "bootstrap: ${bootstrap_ms} ms; settling 40 s"
  sleep 40
  # The acting controller is the Raft leader's host; the host without a member is the spare.
  local leader_id roles="{" i id
  leader_id=$(ctl 0 endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["leader"])')
  for i in "${!NAMES[@]}"; do
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("memberID", 0))' "$WORK/${NAMES[$i]}/conf/etcdadm-auto.json" 2>/dev/null || echo 0)
    [[ $i -gt 0 ]] && roles+=","
    if [[ $id == "$leader_id" ]]; then roles+="\"${NAMES[$i]}\": \"acting\""
    elif [[ $id != 0 ]]; then roles+="\"${NAMES[$i]}\": \"follower\""
    else roles+="\"${NAMES[$i]}\": \"spare\""; fi
  done
  roles+="}"
  log "roles: $roles; window 1 (the cluster as the spec says): ${IDLE} s"
  local steady paused
  steady=$(count_window)
  "$ETCDADM" auto pause "${STORE[@]}" --reason bench >/dev/null
  sleep 5
  log "window 2 (paused: every host waiting): ${IDLE} s"
  paused=$(count_window)
  echo "# etcdadm auto: store requests per role"
  echo
  echo "$(machine); etcd $VERSION; four hosts, spec 3; MinIO through one counting proxy per host; windows of ${IDLE} s; defaults (--idle-interval 30s, --heartbeat 30s), no backups"
  echo
  python3 - "$roles" "$steady" "$paused" "$IDLE" <<'PY'
import json, sys
roles, steady, paused, window = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), float(sys.argv[4])
def row(role, host, counts):
    per_hour = {m: n * 3600 / window for m, n in counts.items()}
    total = sum(per_hour.values())
    tier1 = sum(v for m, v in per_hour.items() if m in ("PUT", "POST", "LIST"))
    tier2 = sum(v for m, v in per_hour.items() if m in ("GET", "HEAD"))
    cost = (tier1 * 0.005 / 1000 + tier2 * 0.0004 / 1000) * 730
    kinds = ", ".join("%s %.0f" % (m, v) for m, v in sorted(per_hour.items()))
    print("| %s | %s | %.0f | %s | $%.2f | %.2f | %.2f |" % (role, host, total, kinds, cost, total / 1680, cost / 1.70))
print("| role | host | requests/h | by kind | S3 $/month | x documented requests (1,680/h) | x documented cost ($1.70) |")
print("|---|---|---:|---|---:|---:|---:|")
for host in sorted(roles, key=lambda h: ("acting", "follower", "spare").index(roles[h])):
    row(roles[host], host, steady.get(host, {}))
for host in sorted(paused):
    row("waiting (paused)", host, paused[host])
PY
}

if [[ $MODE == replace ]]; then
  replace_bench
  exit 0
fi
if [[ $MODE == restore ]]; then
  restore_bench
  exit 0
fi
if [[ $MODE == roles ]]; then
  roles_bench
  exit 0
fi

log "bootstrap: ${bootstrap_ms} ms; settling 40 s (the controllers read the store every 2 s until the cluster is as the spec says)"
sleep 40

ticks=$(getconf CLK_TCK)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
declare -a CPU0
for i in 0 1 2; do CPU0[$i]=$(cpu_of "${AUTO_PID[$i]}"); done
curl -sf -X POST "http://127.0.0.1:$PROXY_PORT/__reset" >/dev/null
log "idle window: ${IDLE} s"
sleep "$IDLE"
counts=$(curl -sf "http://127.0.0.1:$PROXY_PORT/__counts")

echo "# etcdadm auto: bootstrap, idle controller, store requests"
echo
echo "$(machine); etcd $VERSION; store: MinIO via the counting proxy; idle window ${IDLE} s"
echo
echo "Bootstrap of three members after the last host started: **${bootstrap_ms} ms** (target <= 10 s)"
echo
echo "| host | CPU % of one core (idle) | RSS MiB (now) | RSS MiB (peak) |"
echo "|---|---:|---:|---:|"
for i in 0 1 2; do
  pid=${AUTO_PID[$i]}
  cpu=$(awk -v a="${CPU0[$i]}" -v b="$(cpu_of "$pid")" -v t="$ticks" -v s="$IDLE" 'BEGIN { printf "%.2f", (b - a) / t / s * 100 }')
  rss=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
  hwm=$(awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
  echo "| ${NAMES[$i]} | $cpu | $rss | $hwm |"
done
echo
python3 - "$counts" "$IDLE" <<'EOF'
import json, sys
counts = json.loads(sys.argv[1]); window = float(sys.argv[2])
per_hour = {m: n / 3 * 3600 / window for m, n in counts.items()}
total = sum(per_hour.values())
tier1 = sum(v for m, v in per_hour.items() if m in ("PUT", "POST", "LIST"))  # $0.005 per 1,000 (DELETE is free)
tier2 = sum(v for m, v in per_hour.items() if m in ("GET", "HEAD"))          # $0.0004 per 1,000
cost = (tier1 * 0.005 / 1000 + tier2 * 0.0004 / 1000) * 730  # hours in a month
print("Store requests per host and hour (idle, 3 hosts): **%.0f** (%s)" % (total, ", ".join("%s %.0f" % (m, v) for m, v in sorted(per_hour.items()))))
print()
print("At S3 Standard list prices (PUT/POST/LIST $0.005, GET/HEAD $0.0004 per 1,000), per host and month: **$%.2f**" % cost)
EOF
