#!/usr/bin/env bash
# The main job on local defaults, end to end: start a local etcd on loopback, write sample data,
# save a backup into a local store, list it, restore it into a new data dir, start etcd on the
# restored data and show the data is there. Everything lives in one temp dir; every process this
# script starts is stopped by PID on exit. Usage (as root on Debian 12): bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The etcdadm binary alone: the tests, fuzz smoke and sanitizer builds are scripts/test.sh's.
bash scripts/build.sh etcdadm

ETCDADM="$(pwd)/build/cmd/etcdadm"
WORK="$(mktemp -d /tmp/etcdadm-quickstart-XXXXXX)"
export ETCDADM_CATALOG="$WORK/catalog.db"
export ETCDCTL_API=3
unset ETCDCTL_ENDPOINTS ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY ETCDCTL_USER ETCDCTL_PASSWORD
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

start_etcd() {  # name data-dir client-port peer-port
  etcd --name "$1" --data-dir "$2" \
    --listen-client-urls "http://127.0.0.1:$3" --advertise-client-urls "http://127.0.0.1:$3" \
    --listen-peer-urls "http://127.0.0.1:$4" --initial-advertise-peer-urls "http://127.0.0.1:$4" \
    --initial-cluster "$1=http://127.0.0.1:$4" >"$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    etcdctl --endpoints "127.0.0.1:$3" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "etcd $1 did not start; log:" >&2; cat "$WORK/$1.log" >&2; exit 1
}

count_keys() { etcdctl --endpoints "127.0.0.1:$1" get --prefix /registry -w json | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("kvs", [])))'; }

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

C1=$(free_port); P1=$(free_port)
step "1. start etcd on 127.0.0.1:$C1"
start_etcd source "$WORK/source.etcd" "$C1" "$P1"

step "2. write sample data (Kubernetes-like keys)"
for i in $(seq 1 50); do
  etcdctl --endpoints "127.0.0.1:$C1" put "/registry/configmaps/default/cm-$i" "{\"kind\":\"ConfigMap\",\"data\":{\"n\":\"$i\"}}" >/dev/null
done
etcdctl --endpoints "127.0.0.1:$C1" put /registry/secrets/default/db-password 's3cr3t' >/dev/null
echo "$(count_keys "$C1") keys written"

step "3. etcdadm backup save --store $WORK/store"
"$ETCDADM" backup save --store "$WORK/store" --endpoints "127.0.0.1:$C1"

step "4. etcdadm backup list"
"$ETCDADM" backup list --store "$WORK/store"

step "5. etcdadm backup restore latest into a new data dir"
C2=$(free_port); P2=$(free_port)
"$ETCDADM" backup restore latest --store "$WORK/store" --data-dir "$WORK/restored.etcd" \
  --name restored --initial-advertise-peer-urls "http://127.0.0.1:$P2"

step "6. start etcd on the restored data dir (127.0.0.1:$C2) and read the data back"
start_etcd restored "$WORK/restored.etcd" "$C2" "$P2"
before=$(etcdctl --endpoints "127.0.0.1:$C1" get --prefix /registry -w json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted((k["key"],k["value"]) for k in d["kvs"]))')
after=$(etcdctl --endpoints "127.0.0.1:$C2" get --prefix /registry -w json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sorted((k["key"],k["value"]) for k in d["kvs"]))')
etcdctl --endpoints "127.0.0.1:$C2" get /registry/secrets/default/db-password
if [ "$before" = "$after" ]; then
  echo "OK: the restored cluster holds exactly the $(count_keys "$C2") keys of the source, values equal"
else
  echo "MISMATCH between source and restored data" >&2
  exit 1
fi
