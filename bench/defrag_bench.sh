#!/usr/bin/env bash
# Defragmenting a three-member cluster (issue 39): `etcdadm defrag --cluster` against `etcdctl
# defrag --cluster` on the same data, in the same run.
#
# Three members (etcdadm init/join, the process init system, TLS) on 127.0.0.1 with an 8 GiB quota
# are loaded with BENCH_DB_MB (default 1024) MiB of Kubernetes-like objects (load_k8s_like.py);
# then the pods and events (about half the bytes) are deleted and the keyspace compacted, so about
# half of every member's db file is free pages. While each tool defragments the cluster, one
# write_probe per member writes through that member alone: its longest gap between two successful
# writes is the stall that member's clients see (an API server talks to its local member). Like for
# like: once fragmented, the members are stopped and their data dirs copied; before each tool they
# are stopped, given those copies back and started, so both tools defragment the same files (the
# state before each is printed). Reported per tool: the whole defrag's wall time, each member's
# probe stall, and (etcdadm) each member's own Defragment time and db size before and after, then
# the ratios.
#
# Usage: bench/defrag_bench.sh     (BENCH_DB_MB, default 1024; BENCH_ETCD_MINOR, default 3.6)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
source "$here/lib.sh"

ETCDADM="${ETCDADM:-$repo/build/cmd/etcdadm}"
PROBE="${PROBE:-$repo/build/bench/write_probe}"
DB_MB="${BENCH_DB_MB:-1024}"
MINOR="${BENCH_ETCD_MINOR:-3.6}"
[[ -x "$ETCDADM" ]] || die "etcdadm not found at $ETCDADM"
[[ -x "$PROBE" ]] || cmake --build "$repo/build" --target write_probe >/dev/null || die "cannot build write_probe"
read -r VERSION BIN < <("$repo/scripts/etcd-versions.sh" --where "$MINOR") || die "no etcd $MINOR (scripts/etcd-versions.sh $MINOR)"
make_workdir

declare -a NAMES=(m1 m2 m3) CPORT PPORT
flags() {  # the member flags of host $1 (index)
  local i=$1 n=${NAMES[$1]}
  echo --name "$n" --bind-address 127.0.0.1 --client-port "${CPORT[$i]}" --peer-port "${PPORT[$i]}" \
    --binaries-dir "$BIN" --install-dir "$WORK/$n/bin" --certs-dir "$WORK/$n/pki" --data-dir "$WORK/$n/data" \
    --config-dir "$WORK/$n/conf" --cache-dir "$WORK/cache" --init-system process --quota-backend-bytes 8589934592 \
    --key-algorithm ecdsa-p256
}
for i in 0 1 2; do
  CPORT[$i]=$(free_port); PPORT[$i]=$(free_port); mkdir -p "$WORK/${NAMES[$i]}"
  BENCH_PID_FILES+=("$WORK/${NAMES[$i]}/conf/etcd.pid")
done
log "three members of etcd $VERSION"
# shellcheck disable=SC2046
"$ETCDADM" init --version "$VERSION" $(flags 0) >"$WORK/init.log" 2>&1 || die "init failed: $(tail -5 "$WORK/init.log")"
for i in 1 2; do
  mkdir -p "$WORK/${NAMES[$i]}/pki"; cp "$WORK/m1/pki/ca.crt" "$WORK/m1/pki/ca.key" "$WORK/${NAMES[$i]}/pki/"
  # shellcheck disable=SC2046
  "$ETCDADM" join "https://127.0.0.1:${CPORT[0]}" --version "$VERSION" $(flags "$i") >"$WORK/join$i.log" 2>&1 ||
    die "join failed: $(tail -5 "$WORK/join$i.log")"
done
CERT=(--cacert "$WORK/m1/pki/ca.crt" --cert "$WORK/m1/pki/etcdctl-etcd-client.crt" --key "$WORK/m1/pki/etcdctl-etcd-client.key")
ALL="https://127.0.0.1:${CPORT[0]},https://127.0.0.1:${CPORT[1]},https://127.0.0.1:${CPORT[2]}"
ctl() { ETCDCTL_API=3 "$BIN/etcdctl" --endpoints "$ALL" "${CERT[@]}" --command-timeout 600s "$@"; }

NEXT=0
# Loads to DB_MB, deletes the pods and events, compacts: about half of each file free.
fragment() {
  log "loading to ${DB_MB} MiB"
  NEXT=$(python3 "$here/load_k8s_like.py" --endpoint "127.0.0.1:${CPORT[0]}" --target-mb "$DB_MB" --start "$NEXT" \
    "${CERT[@]}" 2>"$WORK/load.log" | sed -n 's/^next_index=//p')
  [[ -n $NEXT ]] || die "loading failed: $(tail -3 "$WORK/load.log")"
  ctl del --prefix /registry/pods/ >/dev/null
  ctl del --prefix /registry/events/ >/dev/null
  local rev
  rev=$(ctl endpoint status -w json | python3 -c 'import json,sys; print(max(e["Status"]["header"]["revision"] for e in json.load(sys.stdin)))')
  ctl compact "$rev" --physical >/dev/null
  sleep 2  # the backend commits the freed pages within its batch interval
}

# The members stopped (TERM, by PID file), started again from their env files as the process init
# system starts them, and waited for until every one answers.
stop_members() {
  local i
  for i in 0 1 2; do stop_pid "$(cat "$WORK/${NAMES[$i]}/conf/etcd.pid")"; done
}
start_members() {
  local i n
  for i in 0 1 2; do
    n=${NAMES[$i]}
    # Only the env file's variables, as the init system gives them (no ETCDCTL_* of this shell).
    # shellcheck disable=SC2046
    env -i PATH=/usr/bin:/bin $(grep -v '^#' "$WORK/$n/conf/etcd.env") setsid "$WORK/$n/bin/etcd" >>"$WORK/$n/conf/etcd.log" 2>&1 &
    echo $! >"$WORK/$n/conf/etcd.pid"
  done
  for _ in $(seq 1 120); do
    ctl endpoint health >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "the members did not come back: $(tail -3 "$WORK/m1/conf/etcd.log")"
}
# Every member's data dir as it was when fragmented (copied once, given back before each tool).
keep_fragmented() {
  stop_members
  local i
  for i in 0 1 2; do cp -a "$WORK/${NAMES[$i]}/data" "$WORK/${NAMES[$i]}/data.fragmented"; done
}
give_back_fragmented() {
  stop_members
  local i
  for i in 0 1 2; do
    rm -rf "$WORK/${NAMES[$i]}/data"
    cp -a "$WORK/${NAMES[$i]}/data.fragmented" "$WORK/${NAMES[$i]}/data"
  done
  start_members
  sleep 2
  state >&2
}
state() {
  ctl endpoint status -w json | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    s = e["Status"]
    print("  %s: db %.0f MiB, in use %.0f MiB (%.0f%% free)%s" % (e["Endpoint"], s["dbSize"] / 1048576,
          s["dbSizeInUse"] / 1048576, 100 - 100.0 * s["dbSizeInUse"] / s["dbSize"],
          ", leader" if s["leader"] == s["header"]["member_id"] else ""))'
}

# Runs "$@" with a write probe on every member; prints the wall time, then each probe's JSON.
with_probes() {
  local pids=() i
  for i in 0 1 2; do
    "$PROBE" --endpoint "https://127.0.0.1:${CPORT[$i]}" "${CERT[@]}" >"$WORK/probe$i.json" 2>"$WORK/probe$i.err" &
    pids+=($!); BENCH_PIDS+=($!)
  done
  sleep 1
  local t0 t1
  t0=$(date +%s%N)
  "$@" >"$WORK/tool.out" 2>"$WORK/tool.err" || die "$1 failed: $(tail -5 "$WORK/tool.err")"
  t1=$(date +%s%N)
  sleep 1
  for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
  echo $(( (t1 - t0) / 1000000 ))
}

probe_report() {  # one line per member: its probe's longest stall
  local i
  for i in 0 1 2; do
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print("  %s: longest write stall %d ms (%d writes)" % (sys.argv[2], p["longestGapMs"], p["writes"]))' \
      "$WORK/probe$i.json" "${NAMES[$i]}"
  done
}

echo "# defrag_bench: $(machine); etcd $VERSION, ${DB_MB} MiB db, three members on one machine"
fragment
keep_fragmented
log "etcdctl defrag --cluster"
give_back_fragmented
ctl_ms=$(with_probes ctl defrag --cluster)
echo "etcdctl defrag --cluster: ${ctl_ms} ms"
probe_report | tee "$WORK/ctl.report"
state
log "etcdadm defrag --cluster"
give_back_fragmented
ms=$(with_probes "$ETCDADM" defrag --cluster --skip-backup --config-dir "$WORK/m1/conf" -o json --timeout 10m)
echo "etcdadm defrag --cluster: ${ms} ms (ratio to etcdctl $(awk -v a="$ms" -v b="$ctl_ms" 'BEGIN { printf "%.2f", a / b }')x)"
python3 -c '
import json, sys
text = open(sys.argv[1]).read()
r = json.loads(text[text.index("{"):])
for m in r["members"]:
    print("  %s: defragment %d ms, %.0f -> %.0f MiB, caught up %d ms later%s" % (m["name"], m["stalledMs"],
          m["dbSizeBefore"] / 1048576, m["dbSizeAfter"] / 1048576, m["caughtUpMs"],
          ", led: leadership moved to " + m["leadershipMovedTo"] if m["led"] else ""))' "$WORK/tool.out"
probe_report | tee "$WORK/adm.report"
state
python3 - "$WORK/ctl.report" "$WORK/adm.report" <<'PY'
import re, sys
def stalls(path):
    return [int(m.group(1)) for m in re.finditer(r"longest write stall (\d+) ms", open(path).read())]
ctl, adm = stalls(sys.argv[1]), stalls(sys.argv[2])
print("longest write stall, worst member: etcdctl %d ms, etcdadm %d ms (ratio %.2fx)" % (max(ctl), max(adm), max(adm) / max(ctl)))
print("write stall per member m1/m2/m3: etcdctl %s ms, etcdadm %s ms" % ("/".join(map(str, ctl)), "/".join(map(str, adm))))
PY
