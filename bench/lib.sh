# Shared helpers of the bench/ scripts (sourced, not run): a temp work dir removed on exit, a
# throw-away etcd on free loopback ports, and measurement (wall time + peak RSS via GNU time).
# A script sources it with `here` and `repo` set, then calls bench_settings.

# Settings every bench shares (environment overrides), and a check that the tools exist.
bench_settings() {
  DB_MB="${BENCH_DB_MB:-400}"
  RUNS="${BENCH_RUNS:-3}"
  THREADS="${BENCH_THREADS:-6}"
  QUARTER_MB=$(awk -v t="$DB_MB" 'BEGIN { printf "%.1f", t / 4 }')
  ETCDADM="${ETCDADM:-$repo/build/cmd/etcdadm}"
  ETCD="${ETCD:-$(command -v etcd || true)}"
  ETCDCTL="${ETCDCTL:-$(command -v etcdctl || true)}"
  TIME=/usr/bin/time
  export ETCDCTL_API=3
  [[ -x "$ETCDADM" ]] || die "etcdadm not found at $ETCDADM (build: cmake --build $repo/build -j2)"
  [[ -x "$ETCD" && -x "$ETCDCTL" ]] || die "etcd/etcdctl not found"
  [[ -x "$TIME" ]] || die "$TIME missing (apt-get install time)"
  command -v python3 >/dev/null || die "python3 missing"
  [[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer"
}

die() { echo "bench: $*" >&2; exit 1; }
# The machine a figure was measured on (CPU model, CPUs, kernel, repo commit): runs on different
# machines are not one series. Every report starts with it.
machine() {
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), kernel $(uname -r), repo $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
}
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Processes started by the bench; stopped (TERM, then KILL after 5 s) on exit, by PID.
BENCH_PIDS=()
BENCH_PID_FILES=()
stop_pid() {
  local pid="$1"
  kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
make_workdir() {
  WORK="$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/etcdadm-bench.XXXXXX")"
  cleanup() {
    local rc=$?
    for pid in "${BENCH_PIDS[@]}"; do stop_pid "$pid"; done
    # Daemons started by what the bench ran (etcd under the `process` init system), by PID file.
    for f in "${BENCH_PID_FILES[@]}"; do [[ -f "$f" ]] && stop_pid "$(cat "$f")"; done
    [[ -n "${BENCH_KEEP:-}" ]] || rm -rf "$WORK"
    exit "$rc"
  }
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  # Everything etcdadm persists outside a store goes into the work dir, and the machine's
  # etcdctl/etcdadm settings do not leak into the measured commands.
  export ETCDADM_CATALOG="$WORK/catalog.db"
  unset ETCDADM_STORE ETCDCTL_ENDPOINTS ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY ETCDCTL_USER ETCDCTL_PASSWORD || true
}

# start_etcd: single member in $WORK/etcd, large quota; sets EP (host:port) and ETCD_PID. Called
# again after the member was killed, it starts it on its data dir (what it had committed), on new
# ports (a single member needs no peer to reach).
# snapshot_tool VAR SUBCOMMAND: sets the array VAR to the command that has `snapshot SUBCOMMAND`
# (restore, status): $ETCDCTL up to 3.5, the etcdutl beside it from 3.6 on (etcdctl 3.6 prints its
# help for them and exits 0). The help is captured first: `grep -q` closing the pipe early fails
# the pipeline under pipefail.
snapshot_tool() {
  local -n tool_ref=$1
  local help
  help="$({ "$ETCDCTL" snapshot --help; "$ETCDCTL" snapshot; } 2>&1 || true)"
  if grep -q "$2" <<<"$help"; then
    tool_ref=("$ETCDCTL")
  else
    tool_ref=(env -u ETCDCTL_API "$(dirname "$ETCDCTL")/etcdutl")
    [[ -x "${tool_ref[-1]}" ]] || die "$ETCDCTL has no snapshot $2 and there is no etcdutl beside it"
  fi
}

# etcd_quota_bytes: the backend quota for a db of BENCH_DB_MB: 8 GiB, or twice the db when that is
# more (etcd's quota counts the whole bbolt file, free pages included).
etcd_quota_bytes() {
  awk -v mb="${BENCH_DB_MB:-400}" 'BEGIN { q = 8589934592; if (mb * 2 * 1048576 > q) q = mb * 2 * 1048576; printf "%.0f", q }'
}

start_etcd() {
  local client_port peer_port
  client_port="$(free_port)"
  peer_port="$(free_port)"
  while [[ "$peer_port" == "$client_port" ]]; do peer_port="$(free_port)"; done
  EP="127.0.0.1:$client_port"
  log "starting etcd on $EP (work dir $WORK)"
  "$ETCD" --name bench --data-dir "$WORK/etcd" \
    --listen-client-urls "http://$EP" --advertise-client-urls "http://$EP" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "bench=http://127.0.0.1:$peer_port" \
    --quota-backend-bytes "$(etcd_quota_bytes)" \
    --logger zap --log-outputs "$WORK/etcd.log" >>"$WORK/etcd.stdout" 2>&1 &
  ETCD_PID=$!
  BENCH_PIDS+=("$ETCD_PID")
  for i in $(seq 1 100); do
    if "$ETCDCTL" --endpoints "$EP" endpoint health >/dev/null 2>&1; then break; fi
    kill -0 "$ETCD_PID" 2>/dev/null || { tail -20 "$WORK/etcd.log" >&2 || true; die "etcd exited"; }
    [[ $i == 100 ]] && die "etcd did not become healthy"
    sleep 0.2
  done
}

# load_etcd MIB [START]: writes Kubernetes-like objects (load_k8s_like.py, $THREADS connections) into
# $EP until its dbSize >= MIB, numbering keys from START (default 0, or where a previous load ended);
# sets LOADED_NEXT to the next free key index, i.e. the number of keys loaded so far. (Not printed:
# the load may restart etcd, which a command substitution's subshell would do for itself only.)
# With BENCH_LOAD_CACHE (a directory), each load is written once per etcd version, START and MIB:
# its data dir is kept there, and a later bench asking for the same load (bench/compare.sh runs
# several) gets a copy of it, etcd restarted on it, instead of writing it again (8 GiB takes about
# ten minutes here). A copy is the same keys at the same revisions as the load that made it.
load_etcd() {
  local mib=$1 start=${2:-0} cached="" next
  if [[ -n "${BENCH_LOAD_CACHE:-}" ]]; then
    cached="$BENCH_LOAD_CACHE/etcd-$("$ETCD" --version | awk '/^etcd Version/ { print $3 }')-from$start-to${mib}mib"
    if [[ -f "$cached/next_index" ]]; then
      log "load of $mib MiB from key $start: a copy of $cached"
      stop_pid "$ETCD_PID"
      rm -rf "$WORK/etcd"
      cp -a "$cached/etcd" "$WORK/etcd"
      start_etcd
      LOADED_NEXT=$(cat "$cached/next_index")
      return
    fi
  fi
  log "loading to dbSize >= $mib MiB"
  next=$(python3 "$here/load_k8s_like.py" --endpoint "$EP" --target-mb "$mib" --threads "$THREADS" --start "$start" |
    sed -n 's/^next_index=//p')
  if [[ -n "$cached" ]]; then
    stop_pid "$ETCD_PID"  # a clean stop: the copy is a data dir etcd opens without recovery
    rm -rf "$cached.part"
    mkdir -p "$cached.part"
    cp -a "$WORK/etcd" "$cached.part/etcd"
    echo "$next" >"$cached.part/next_index"
    mv "$cached.part" "$cached"
    start_etcd
  fi
  LOADED_NEXT=$next
}

# make_local_release: a release tarball of the local etcd and etcdctl in $WORK/rel, laid out as the
# etcd project publishes them (v<version>/etcd-v<version>-linux-<arch>.tar.gz and SHA256SUMS), for
# etcdadm's --release-url file://$WORK/rel; sets VER to that version.
make_local_release() {
  VER=$("$ETCD" --version | awk '/^etcd Version/ { print $3 }')
  local arch name
  arch=$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')
  name="etcd-v$VER-linux-$arch"
  mkdir -p "$WORK/rel/v$VER/$name"
  cp "$ETCD" "$ETCDCTL" "$WORK/rel/v$VER/$name/"
  (cd "$WORK/rel/v$VER" && tar czf "$name.tar.gz" "$name" && rm -rf "$name" && sha256sum "$name.tar.gz" >SHA256SUMS)
}

db_bytes() {
  "$ETCDCTL" --endpoints "$EP" endpoint status -w json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Status"]["dbSize"])'
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# server_cpu_s: the CPU seconds (user + system) the bench's etcd ($ETCD_PID) has used so far, or
# nothing when it is not running.
server_cpu_s() {
  [[ -n "${ETCD_PID:-}" && -r "/proc/$ETCD_PID/stat" ]] || return 0
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' "/proc/$ETCD_PID/stat"
}
# measure ID COMMAND...: runs it under GNU time; appends its wall seconds to m.ID.wall, its peak
# RSS (KiB) to m.ID.rss, its CPU seconds to m.ID.cpu and, with the bench's etcd running, the CPU
# seconds etcd spent meanwhile to m.ID.server_cpu (what bounds a save on two cores). Aborts the
# benchmark (with the tool's stderr) on failure.
measure() {
  local id="$1"; shift
  sync
  local out="$WORK/last.out" err="$WORK/last.err" tv="$WORK/last.time"
  local t0 t1 s0 s1
  s0=$(server_cpu_s)
  t0=$(date +%s%N)
  if ! "$TIME" -v -o "$tv" "$@" >"$out" 2>"$err"; then
    echo "bench: command failed: $*" >&2
    sed 's/^/  stderr: /' "$err" >&2
    sed 's/^/  stdout: /' "$out" >&2
    exit 1
  fi
  t1=$(date +%s%N)
  s1=$(server_cpu_s)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }' >>"$WORK/m.$id.wall"
  awk -F': ' '/Maximum resident set size/ { print $2 }' "$tv" >>"$WORK/m.$id.rss"
  awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { printf "%.2f\n", u + s }' "$tv" >>"$WORK/m.$id.cpu"
  if [[ -n "$s0" && -n "$s1" ]]; then awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f\n", b - a }' >>"$WORK/m.$id.server_cpu"; fi
  if [[ -s "$err" ]]; then cp "$err" "$WORK/m.$id.stderr.$(wc -l <"$WORK/m.$id.wall")"; fi
  log "  $id: $(tail -1 "$WORK/m.$id.wall") s, $(tail -1 "$WORK/m.$id.rss") KiB max RSS"
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
allruns() { paste -sd/ "$1"; }
wall() { median "$WORK/m.$1.wall"; }
cpu() { median "$WORK/m.$1.cpu"; }
server_cpu() { median "$WORK/m.$1.server_cpu"; }
rss_mib() { median "$WORK/m.$1.rss" | awk '{ printf "%.1f", $1 / 1024 }'; }
rss_max_mib() { sort -g "$WORK/m.$1.rss" | tail -1 | awk '{ printf "%.1f", $1 / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
yes_no() { if "$@"; then echo "yes"; else echo "**no**"; fi; }
# figure NAME ETCDADM ANCHOR TARGET: one row of bench/compare.sh's table, appended to $BENCH_FIGURES
# when it is set (tab-separated). NAME says what is measured, in what unit, against what; ETCDADM
# and ANCHOR are numbers (ANCHOR "-" when there is none); TARGET is "<= 0.6x" or ">= 5x" (on the
# ratio ETCDADM / ANCHOR), "<= 64" (on ETCDADM itself), or "" (for information).
figure() {
  [[ -n "${BENCH_FIGURES:-}" ]] || return 0
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "${3:--}" "${4:-}" >>"$BENCH_FIGURES"
}
# json_field FILE NAME[.NAME...]: a field of a JSON object file (dots walk into nested objects).
json_field() {
  python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2"
}

# start_swift_s3: OpenStack Swift with s3api (the tests' S3 server) in $WORK/swift, and the AWS
# settings for it: sets S3_EP and the AWS_* variables, writes $WORK/aws-config (path-style, extra
# `aws` config lines from $1), creates the bucket s3://bench. Stopped on exit with the bench's PIDs.
start_swift_s3() {
  log "starting Swift s3api"
  python3 "$repo/test/support/swift_s3_server.py" --dir "$WORK/swift" --ready-file "$WORK/swift.json" \
    >"$WORK/swift.log" 2>&1 &
  BENCH_PIDS+=("$!")
  for i in $(seq 1 300); do [[ -f "$WORK/swift.json" ]] && break; sleep 0.1; [[ $i == 300 ]] && die "Swift did not start"; done
  S3_EP=$(json_field "$WORK/swift.json" endpoint)
  AWS_ACCESS_KEY_ID=$(json_field "$WORK/swift.json" access_key)
  AWS_SECRET_ACCESS_KEY=$(json_field "$WORK/swift.json" secret_key)
  export S3_EP AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
  export AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_SHARED_CREDENTIALS_FILE=/nonexistent
  export AWS_CONFIG_FILE="$WORK/aws-config"
  printf '[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n%s' "${1:-}" >"$AWS_CONFIG_FILE"
  /usr/bin/aws --endpoint-url "$S3_EP" s3 mb s3://bench >/dev/null
}
