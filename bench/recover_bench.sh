#!/usr/bin/env bash
# The worst day, timed: `etcdadm recover` on the survivor of a three-member cluster whose other two
# members are lost for good, against `etcdadm init --from-backup` of the same data, the restore it
# makes unnecessary (issue "The worst days": recovering from a survivor must not be slower than
# restoring a backup). Every command is timed from its start to its return, which each makes only
# once its member serves as a healthy cluster of one.
#
# Loads a throw-away etcd with Kubernetes-like objects (bench/load_k8s_like.py) to BENCH_DB_MB,
# saves one backup into a local store and stops that etcd. Then, on loopback with the `process`
# init system and a release tarball packed from the local etcd binaries, BENCH_RUNS times each,
# alternating:
#   - recover, running: three TLS members restored at once from the backup (init --from-backup
#     --initial-cluster on each, not timed), m2 and m3 killed -9; `etcdadm recover` on m1, which
#     runs on without a leader (it answers Status: what it holds is known at once);
#   - recover, stopped: the same with m1 killed too; recover reads it in private first (a copy of
#     its data dir started alone with --force-new-cluster on unix sockets), then recovers it;
#   - init --from-backup latest of one member on a fresh host (install, PKI, fetch + verify +
#     restore, start, health): the anchor, from the local store;
#   - the same from an S3 store (MinIO on loopback, when scripts/go-test-tools.sh built it), where
#     backups live in production: its fetch crosses HTTP, which recover never pays (loopback is
#     the best case of a network).
# Each recovered member must serve as many keys as the backup holds.
#
# Environment: BENCH_DB_MB (default 400), BENCH_RUNS (3), BENCH_THREADS (6), BENCH_TMPDIR,
# BENCH_RESULTS, BENCH_S3 (auto: when MinIO is built; 0: not), ETCDADM, ETCD, ETCDCTL.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
make_workdir

MINIO="$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/etcdadm/go-tools/minio-*/minio 2>/dev/null | head -1)"
S3=()
if [[ "${BENCH_S3:-auto}" != 0 && -x "$MINIO" ]]; then
  export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret-key AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  export AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent
  unset AWS_CA_BUNDLE || true
  MINIO_PORT=$(free_port)
  MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY MINIO_BROWSER=off MINIO_UPDATE=off HOME="$WORK" \
    "$MINIO" server "$WORK/minio" --address "127.0.0.1:$MINIO_PORT" --console-address "127.0.0.1:$(free_port)" --quiet \
    >"$WORK/minio.log" 2>&1 &
  BENCH_PIDS+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$MINIO_PORT/minio/health/live" >/dev/null && break; sleep 0.2; done
  aws --endpoint-url "http://127.0.0.1:$MINIO_PORT" s3 mb s3://bench >/dev/null
  S3=(--store s3://bench/main --s3-endpoint "http://127.0.0.1:$MINIO_PORT")
fi

start_etcd
load_etcd "$DB_MB"
KEYS=$("$ETCDCTL" --endpoints "$EP" get "" --prefix --keys-only --limit=1 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
"$ETCDADM" --log-level warn backup save --store "$WORK/store" --endpoints "$EP" -o json >"$WORK/save.json"
BACKUP=$(json_field "$WORK/save.json" backup)
if [[ ${#S3[@]} -gt 0 ]]; then
  "$ETCDADM" --log-level warn backup save "${S3[@]}" --endpoints "$EP" >/dev/null
fi
stop_pid "$ETCD_PID"
make_local_release

# host_flags DIR NAME CLIENT_PORT PEER_PORT: the member flags of one host under DIR.
host_flags() {
  local h="$1/$2"
  echo --name "$2" --version "$VER" --release-url "file://$WORK/rel" --cache-dir "$WORK/cache" \
    --install-dir "$WORK/bin" --certs-dir "$h/pki" --data-dir "$h/data" --config-dir "$h/conf" \
    --bind-address 127.0.0.1 --client-port "$3" --peer-port "$4" --init-system process
}
keys_served() {  # DIR: the keys the member under DIR serves
  "$1/conf/etcdctl.sh" get "" --prefix --keys-only --limit=1 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])'
}
kill_member() {  # DIR
  local pid
  pid=$(cat "$1/conf/etcd.pid")
  kill -9 "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}
stop_hosts() {  # DIR: every member under it stopped, the hosts removed
  local f
  for f in "$1"/*/conf/etcd.pid; do [[ -f "$f" ]] && stop_pid "$(cat "$f")"; done
  rm -rf "$1" "$1".*.init.log
}

# cluster DIR: three members m1-m3 restored at once from the backup under DIR (not timed).
cluster() {
  local dir="$1" ic="" m token="bench-$RANDOM"
  declare -gA CPORT PPORT
  for m in m1 m2 m3; do
    CPORT[$m]=$(free_port); PPORT[$m]=$(free_port)
    ic+="${ic:+,}$m=https://127.0.0.1:${PPORT[$m]}"
  done
  # shellcheck disable=SC2046
  "$ETCDADM" --log-level warn init phase certificates $(host_flags "$dir" m1 "${CPORT[m1]}" "${PPORT[m1]}") >/dev/null
  for m in m2 m3; do mkdir -p "$dir/$m/pki" && cp "$dir/m1/pki/ca.crt" "$dir/m1/pki/ca.key" "$dir/$m/pki/"; done
  local pids=()
  for m in m1 m2 m3; do
    BENCH_PID_FILES+=("$dir/$m/conf/etcd.pid")
    # shellcheck disable=SC2046
    "$ETCDADM" --log-level warn init --from-backup "$BACKUP" --store "$WORK/store" --keep-revision \
      --initial-cluster "$ic" --initial-cluster-token "$token" \
      $(host_flags "$dir" "$m" "${CPORT[$m]}" "${PPORT[$m]}") >"$dir.$m.init.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || { tail -20 "$dir".m*.init.log >&2; die "a member of $dir failed to start"; }; done
}

for run in $(seq 1 "$RUNS"); do
  log "run $run of $RUNS"
  d="$WORK/running$run"
  cluster "$d"
  kill_member "$d/m2"; kill_member "$d/m3"
  measure recover_running "$ETCDADM" --log-level warn recover --config-dir "$d/m1/conf"
  got=$(keys_served "$d/m1"); [[ "$got" == "$KEYS" ]] || die "recovered member serves $got keys, the backup $KEYS"
  stop_hosts "$d"

  d="$WORK/stopped$run"
  cluster "$d"
  kill_member "$d/m2"; kill_member "$d/m3"; kill_member "$d/m1"
  measure recover_stopped "$ETCDADM" --log-level warn recover --config-dir "$d/m1/conf"
  got=$(keys_served "$d/m1"); [[ "$got" == "$KEYS" ]] || die "recovered member serves $got keys, the backup $KEYS"
  stop_hosts "$d"

  d="$WORK/init$run"
  BENCH_PID_FILES+=("$d/m1/conf/etcd.pid")
  # shellcheck disable=SC2046
  measure init "$ETCDADM" --log-level warn init --from-backup latest --store "$WORK/store" --keep-revision \
    $(host_flags "$d" m1 "$(free_port)" "$(free_port)")
  got=$(keys_served "$d/m1"); [[ "$got" == "$KEYS" ]] || die "restored member serves $got keys, the backup $KEYS"
  stop_hosts "$d"

  if [[ ${#S3[@]} -gt 0 ]]; then
    d="$WORK/init_s3$run"
    BENCH_PID_FILES+=("$d/m1/conf/etcd.pid")
    # shellcheck disable=SC2046
    measure init_s3 "$ETCDADM" --log-level warn init --from-backup latest "${S3[@]}" --keep-revision \
      $(host_flags "$d" m1 "$(free_port)" "$(free_port)")
    got=$(keys_served "$d/m1"); [[ "$got" == "$KEYS" ]] || die "restored member serves $got keys, the backup $KEYS"
    stop_hosts "$d"
  fi
done

DB=$(json_field "$WORK/save.json" dbSize)
figure "recover, s: etcdadm recover on a running survivor / etcdadm init --from-backup of the same data" "$(wall recover_running)" "$(wall init)" "<= 1.0x"
figure "recover, s: etcdadm recover on a stopped survivor (read in private first) / etcdadm init --from-backup" "$(wall recover_stopped)" "$(wall init)" "<= 1.0x"
cat <<EOR | tee "${BENCH_RESULTS:-/dev/null}"
### etcdadm recover against init --from-backup

- $(machine); etcd $VER
- backup: $KEYS keys, db $(mib "$DB") MiB, local store; three TLS members on loopback (process init system); $RUNS runs of each (medians; every run listed)

| Command (to a healthy cluster of one) | wall s (median) | runs | peak RSS MiB | ratio to init |
|---|---:|---|---:|---:|
| etcdadm recover, survivor running without a leader | $(wall recover_running) | $(allruns "$WORK/m.recover_running.wall") | $(rss_max_mib recover_running) | $(ratio "$(wall recover_running)" "$(wall init)") |
| etcdadm recover, survivor stopped (read in private first) | $(wall recover_stopped) | $(allruns "$WORK/m.recover_stopped.wall") | $(rss_max_mib recover_stopped) | $(ratio "$(wall recover_stopped)" "$(wall init)") |
| etcdadm init --from-backup latest (the anchor) | $(wall init) | $(allruns "$WORK/m.init.wall") | $(rss_max_mib init) | 1.00 |
EOR
if [[ ${#S3[@]} -gt 0 ]]; then
  figure "recover, s: etcdadm recover on a running survivor / etcdadm init --from-backup from S3 (MinIO on loopback)" "$(wall recover_running)" "$(wall init_s3)" "<= 1.0x"
  figure "recover, s: etcdadm recover on a stopped survivor / etcdadm init --from-backup from S3 (MinIO on loopback)" "$(wall recover_stopped)" "$(wall init_s3)" "<= 1.0x"
  cat <<EOR | tee -a "${BENCH_RESULTS:-/dev/null}"
| etcdadm init --from-backup latest from S3 (MinIO on loopback) | $(wall init_s3) | $(allruns "$WORK/m.init_s3.wall") | $(rss_max_mib init_s3) | running $(ratio "$(wall recover_running)" "$(wall init_s3)"), stopped $(ratio "$(wall recover_stopped)" "$(wall init_s3)") (recover / this) |
EOR
fi
