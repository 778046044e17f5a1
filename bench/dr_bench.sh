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
# Environment: BENCH_DB_MB (default 400), BENCH_THREADS (default 6), BENCH_TMPDIR, BENCH_RESULTS,
# ETCDADM, ETCD, ETCDCTL.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

bench_settings
make_workdir

start_etcd
load_etcd "$DB_MB" >/dev/null
KEYS=$("$ETCDCTL" --endpoints "$EP" get "" --prefix --keys-only --limit=1 -w json | python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
"$ETCDADM" --log-level warn backup save --store "$WORK/store" --endpoints "$EP" -o json >"$WORK/save.json"
stop_pid "$ETCD_PID"

# A release tarball of the local binaries, as the etcd project publishes them.
VER=$("$ETCD" --version | awk '/^etcd Version/ { print $3 }')
ARCH=$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')
NAME="etcd-v$VER-linux-$ARCH"
mkdir -p "$WORK/rel/v$VER/$NAME"
cp "$ETCD" "$ETCDCTL" "$WORK/rel/v$VER/$NAME/"
(cd "$WORK/rel/v$VER" && tar czf "$NAME.tar.gz" "$NAME" && rm -rf "$NAME" && sha256sum "$NAME.tar.gz" >SHA256SUMS)

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

# shellcheck disable=SC2046
measure init "$ETCDADM" --log-level warn init --from-backup latest --store "$WORK/store" $(member_flags m1)
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
[[ "$GOT" == "$KEYS" ]] || die "rebuilt cluster holds $GOT keys, the backup $KEYS"

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
}
report | tee "${BENCH_RESULTS:-/dev/null}"
