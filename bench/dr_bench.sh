#!/usr/bin/env bash
# Disaster recovery, timed: how long from "every member is gone" to "three healthy TLS members with
# the data back", following the runbook in docs/operations.md (init --from-backup, then two joins).
#
# Loads a throw-away etcd with Kubernetes-like objects (bench/load_k8s_like.py) to BENCH_DB_MB,
# saves one backup into a local store and stops that etcd. Then, on loopback with the `process`
# init system and a release tarball packed from the local etcd binaries:
#   - etcdctl snapshot restore of the same (already fetched) snapshot: the floor any restore pays
#   - etcdadm init --from-backup latest   (install, PKI, fetch + verify + restore, start, health)
#   - etcdadm join (m2), etcdadm join (m3) (learner, catch-up from the leader, promotion, health)
# and checks that the rebuilt cluster holds as many keys as the backup's revision had.
#
# With BENCH_CONTINUOUS=1, the runbook with continuous backup (docs/operations.md, PITR): after the
# backup, a sidecar with --continuous keeps the change log while the loader writes on; at a random
# moment (BENCH_SEED) etcd and the sidecar are killed with SIGKILL together (the host is lost);
# init runs with --to-revision end. The lost member is then started again on its own data dir: what
# it had committed gives the exact RPO (revisions, and seconds from the newest revision in the
# store to the kill), and its HashKV at the restored revision must equal the rebuilt cluster's.
#
# With BENCH_ONE_STEP=1, the whole cluster at once instead (docs/operations.md): the CA made once
# and copied, then `init --from-backup NAME --initial-cluster ... --initial-cluster-token ...` on the
# three members in parallel; "quorum back" is when a linearizable read is first answered (a probe
# asks every 50 ms: bench/serving_probe.py --quorum), "all three" when the last init returns.
#
# Environment: BENCH_DB_MB (default 400), BENCH_THREADS (default 6), BENCH_CONTINUOUS (0),
# BENCH_ONE_STEP (0), BENCH_INTERVAL (5s), BENCH_SEED, BENCH_TMPDIR, BENCH_RESULTS, ETCDADM, ETCD, ETCDCTL.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
make_workdir

CONTINUOUS="${BENCH_CONTINUOUS:-0}"
start_etcd
load_etcd "$DB_MB"; next=$LOADED_NEXT
KEYS=$("$ETCDCTL" --endpoints "$EP" get "" --prefix --keys-only --limit=1 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
"$ETCDADM" --log-level warn backup save --store "$WORK/store" --endpoints "$EP" -o json >"$WORK/save.json"
revision_of() {  # ETCDCTL-COMMAND...: the revision of the member it talks to
  "$@" endpoint status -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])'
}
if [[ "$CONTINUOUS" == 1 ]]; then
  INTERVAL="${BENCH_INTERVAL:-5s}"
  SEED="${BENCH_SEED:-$RANDOM}"
  RANDOM=$SEED
  KILL_AFTER=$((10 + RANDOM % 20))
  "$ETCDADM" --log-level info backup sidecar --store "$WORK/store" --endpoints "$EP" --schedule @yearly --listen "" \
    --continuous --segment-interval "$INTERVAL" >"$WORK/sidecar.log" 2>&1 &
  SIDECAR_PID=$!
  BENCH_PIDS+=("$SIDECAR_PID")
  python3 "$here/load_k8s_like.py" --endpoint "$EP" --target-mb 100000 --threads "$THREADS" --start "$next" \
    >/dev/null 2>"$WORK/load.log" &
  LOADER_PID=$!
  BENCH_PIDS+=("$LOADER_PID")
  log "writing on with the change log kept; the host is lost in $KILL_AFTER s (BENCH_SEED=$SEED)"
  sleep "$KILL_AFTER"
  T_KILL=$(date +%s%N)
  kill -9 "$ETCD_PID" "$SIDECAR_PID"
  kill "$LOADER_PID" 2>/dev/null || true
  wait "$ETCD_PID" "$SIDECAR_PID" "$LOADER_PID" 2>/dev/null || true
  LISTED=$("$ETCDADM" --log-level warn backup list --store "$WORK/store" -o json)
  LOG_UNTIL=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])[0]["changeLog"]["completeUntil"])' "$LISTED")
  INIT_EXTRA=(--to-revision end --keep-revision)
else
  stop_pid "$ETCD_PID"
  INIT_EXTRA=(--keep-revision)
fi
# --keep-revision: the loader's keys are Kubernetes-like (/registry/), which a restore would bump
# and mark compacted by default; the bench compares HashKV at the restored revision itself.

make_local_release

# The floor: etcdctl restoring the same snapshot from a local file.
"$ETCDADM" --log-level warn backup restore latest --store "$WORK/store" --output "$WORK/snap.db" >/dev/null
peer="https://127.0.0.1:$(free_port)"
measure ctl_restore "$ETCDCTL" snapshot restore "$WORK/snap.db" --data-dir "$WORK/ctl-restored" --name x \
  --initial-cluster "x=$peer" --initial-advertise-peer-urls "$peer"
rm -rf "$WORK/ctl-restored"

member_flags() {  # <name>
  local h="$WORK/$1"
  echo --name "$1" --version "$VER" --release-url "file://$WORK/rel" --cache-dir "$WORK/cache" \
    --install-dir "$WORK/bin" --certs-dir "$h/pki" --data-dir "$h/data" --config-dir "$h/conf" \
    --bind-address 127.0.0.1 --client-port "$(free_port)" --peer-port "$(free_port)" --init-system process
}
track() { BENCH_PIDS+=("$(cat "$WORK/$1/conf/etcd.pid")"); }

if [[ "${BENCH_ONE_STEP:-0}" == 1 ]]; then
  # Fixed ports (the membership names them), a CA made once and given to every host.
  declare -A CPORT PPORT
  IC=""
  for m in m1 m2 m3; do
    CPORT[$m]=$(free_port); PPORT[$m]=$(free_port)
    IC+="${IC:+,}$m=https://127.0.0.1:${PPORT[$m]}"
  done
  one_step_flags() {  # <name>: as member_flags, with the fixed ports and its own install dir
    local h="$WORK/$1"
    echo --name "$1" --version "$VER" --release-url "file://$WORK/rel" --cache-dir "$WORK/cache" \
      --install-dir "$h/bin" --certs-dir "$h/pki" --data-dir "$h/data" --config-dir "$h/conf" \
      --bind-address 127.0.0.1 --client-port "${CPORT[$1]}" --peer-port "${PPORT[$1]}" --init-system process
  }
  # shellcheck disable=SC2046
  "$ETCDADM" --log-level warn init phase certificates $(one_step_flags m1) >/dev/null
  for m in m2 m3; do mkdir -p "$WORK/$m/pki" && cp "$WORK/m1/pki/ca.crt" "$WORK/m1/pki/ca.key" "$WORK/$m/pki/"; done
  BACKUP=$(json_field "$WORK/save.json" backup)
  # The moment a quorum first serves, seen from outside by one process asking every 50 ms (each init
  # returns only after its own checks: health, then every member's KV hash compared).
  python3 "$here/serving_probe.py" --quorum --members 3 --timeout 600 --cacert "$WORK/m1/pki/ca.crt" \
    --cert "$WORK/m1/pki/etcdctl-etcd-client.crt" --key "$WORK/m1/pki/etcdctl-etcd-client.key" \
    $(for m in m1 m2 m3; do echo --endpoint "https://127.0.0.1:${CPORT[$m]}"; done) >"$WORK/served" &
  PROBE_PID=$!
  BENCH_PIDS+=("$PROBE_PID")
  T0=$(date +%s%N)
  INIT_PIDS=()
  for m in m1 m2 m3; do
    # (info: each phase's start is in $WORK/<member>.init.log, kept with BENCH_KEEP=1)
    # shellcheck disable=SC2046
    ( "$ETCDADM" --log-level info init --from-backup "$BACKUP" --store "$WORK/store" "${INIT_EXTRA[@]}" \
        --initial-cluster "$IC" --initial-cluster-token bench-one-step $(one_step_flags "$m") >"$WORK/$m.init.log" 2>&1 &&
      date +%s%N >"$WORK/$m.done" ) &
    INIT_PIDS+=($!)
  done
  wait "${INIT_PIDS[@]}" || true  # each init's outcome is its .done file
  for m in m1 m2 m3; do [[ -f "$WORK/$m.done" ]] || { tail -20 "$WORK/$m.init.log" >&2; die "init of $m failed"; }; track "$m"; done
  ends=$(for m in m1 m2 m3; do awk -v a="$T0" -v b="$(cat "$WORK/$m.done")" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }'; done | sort -g)
  wait "$PROBE_PID" || die "the probe never saw a quorum serve"
  QUORUM_S=$(awk -v a="$T0" -v b="$(sed -n 's/^served_unix_ns=//p' "$WORK/served")" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  FIRST_S=$(echo "$ends" | sed -n 1p)
  ALL_S=$(echo "$ends" | sed -n 3p)
  GOT=$("$WORK/m3/conf/etcdctl.sh" get "" --prefix --keys-only --limit=1 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
  HEALTHY=$("$WORK/m1/conf/etcdctl.sh" endpoint health --cluster 2>&1 | grep -c "is healthy" || true)
  [[ "$GOT" == "$KEYS" ]] || die "rebuilt cluster holds $GOT keys, the backup $KEYS"
  figure "DR, s: quorum back, three members restored at once (init --from-backup) / etcdctl snapshot restore of one local file" "$QUORUM_S" "$(wall ctl_restore)" "<= 5"
  figure "DR, s: all three members back" "$ALL_S" - ""
  cat <<EOR | tee "${BENCH_RESULTS:-/dev/null}"
### Disaster recovery: the whole cluster at once (init --from-backup --initial-cluster on every host)

- $(machine); etcd $VER
- backup: $KEYS keys, db $(mib "$(stat -c %s "$WORK/snap.db")") MiB, stored $(mib "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["storedSize"])' "$WORK/save.json")") MiB (gzip), local store
- three TLS members on loopback (process init system), three inits started together, each installing etcd into its own dir; after the rebuild: $GOT keys on m3, $HEALTHY/3 endpoints healthy

| Step | wall s |
|---|---:|
| (floor) etcdctl snapshot restore of the local, uncompressed snapshot | $(wall ctl_restore) |
| each init, from the start (sorted) | $(echo $ends | sed 's/ / \/ /g') |
| **quorum back (a linearizable read first answered, probed every 50 ms)** | **$QUORUM_S** |
| the first init returned (after its health and KV hash checks) | $FIRST_S |
| **all three members back** | **$ALL_S** |
EOR
  exit 0
fi

# shellcheck disable=SC2046
measure init "$ETCDADM" --log-level warn init --from-backup latest --store "$WORK/store" "${INIT_EXTRA[@]}" $(member_flags m1)
track m1
EP1=$(sed -n 's/^ETCD_ADVERTISE_CLIENT_URLS=//p' "$WORK/m1/conf/etcd.env")
for m in m2 m3; do
  mkdir -p "$WORK/$m/pki" && cp "$WORK/m1/pki/ca.crt" "$WORK/m1/pki/ca.key" "$WORK/$m/pki/"
  # shellcheck disable=SC2046
  measure "join_$m" "$ETCDADM" --log-level warn join "$EP1" $(member_flags "$m")
  track "$m"
done
GOT=$("$WORK/m3/conf/etcdctl.sh" get "" --prefix --keys-only --limit=1 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
HEALTHY=$("$WORK/m1/conf/etcdctl.sh" endpoint health --cluster 2>&1 | grep -c "is healthy" || true)
if [[ "$CONTINUOUS" == 1 ]]; then
  R_REST=$(revision_of "$WORK/m1/conf/etcdctl.sh")
  # The lost member, started again on its data dir: everything it had committed when it was killed.
  start_etcd
  for _ in $(seq 1 150); do "$ETCDCTL" --endpoints "$EP" endpoint health >/dev/null 2>&1 && break; sleep 0.2; done
  R_KILL=$(revision_of "$ETCDCTL" --endpoints "$EP")
  hashkv() { "$@" endpoint hashkv --rev "$R_REST" -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["HashKV"]["hash"])'; }
  H_LOST=$(hashkv "$ETCDCTL" --endpoints "$EP")
  H_REBUILT=$(hashkv "$WORK/m1/conf/etcdctl.sh")
  [[ "$H_LOST" == "$H_REBUILT" ]] || die "HashKV at $R_REST: lost member $H_LOST, rebuilt $H_REBUILT"
  RPO_S=$(python3 -c 'import sys,datetime; u=datetime.datetime.fromisoformat(sys.argv[1].replace("Z","+00:00")).timestamp(); print("%.2f" % (int(sys.argv[2]) / 1e9 - u))' "$LOG_UNTIL" "$T_KILL")
  SNAP_REV=$(json_field "$WORK/save.json" revision)
else
  [[ "$GOT" == "$KEYS" ]] || die "rebuilt cluster holds $GOT keys, the backup $KEYS"
fi

total=$(awk -v a="$(wall init)" -v b="$(wall join_m2)" -v c="$(wall join_m3)" 'BEGIN { printf "%.2f", a + b + c }')
report() {
  cat <<EOR
### Disaster recovery: init --from-backup + 2 joins

- $(machine); etcd $VER
- backup: $KEYS keys, db $(mib "$(stat -c %s "$WORK/snap.db")") MiB, stored $(mib "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["storedSize"])' "$WORK/save.json")") MiB (gzip), local store
- three TLS members on loopback (process init system); after the rebuild: $GOT keys on m3, $HEALTHY/3 endpoints healthy

| Step | wall s | peak RSS MiB |
|---|---:|---:|
| (floor) etcdctl snapshot restore of the local, uncompressed snapshot | $(wall ctl_restore) | $(rss_max_mib ctl_restore) |
| etcdadm init --from-backup latest (install, PKI, fetch+verify+restore, start, health) | $(wall init) | $(rss_max_mib init) |
| etcdadm join m2 (learner catches up on the whole db, promoted, healthy) | $(wall join_m2) | $(rss_max_mib join_m2) |
| etcdadm join m3 | $(wall join_m3) | $(rss_max_mib join_m3) |
| **quorum back (init + first join)** | **$(awk -v a="$(wall init)" -v b="$(wall join_m2)" 'BEGIN { printf "%.2f", a + b }')** | |
| **all three members back** | **$total** | |
EOR
  [[ "$CONTINUOUS" == 1 ]] || return 0
  cat <<EOR

With the change log (\`BENCH_CONTINUOUS=1 BENCH_SEED=$SEED\`, --segment-interval $INTERVAL): the host was lost
(etcd and sidecar SIGKILL) $KILL_AFTER s into a Kubernetes-like write load; init ran with \`--to-revision end\`.

| | value |
|---|---:|
| backup revision / revision the lost member had committed | $SNAP_REV / $R_KILL |
| revision the rebuilt cluster came back at | $R_REST |
| **RPO: revisions lost** (txns of 128 puts) | **$((R_KILL - R_REST))** |
| **RPO: seconds from the newest revision in the store to the kill** | **$RPO_S** |
| revisions brought back by the log beyond the backup | $((R_REST - SNAP_REV)) |
| HashKV at $R_REST, rebuilt == lost member | yes ($H_REBUILT) |
| **RTO: all three members back** (s) | **$total** |
EOR
}
report | tee "${BENCH_RESULTS:-/dev/null}"
