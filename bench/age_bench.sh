#!/usr/bin/env bash
# The throughput of etcdadm's age stream alone next to Debian's `age` 1.1 on the same file, one
# core each (both are single-threaded), BENCH_RUNS times alternating; medians reported.
#
#   bench/age_bench.sh            (BENCH_AGE_MB, default 256: a file of that many random MiB)
#
# etcdadm: build/bench/age_throughput (encrypt to a file, then decrypt to nothing, timed inside);
# age: `age -r R -o OUT IN` and `age -d -i KEY -o /dev/null OUT`, timed as whole processes (their
# start-up is milliseconds against seconds of work). Settings as in the other benches
# (BENCH_RUNS, BENCH_TMPDIR, BENCH_RESULTS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
die() { echo "bench: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
RUNS="${BENCH_RUNS:-3}"
MB="${BENCH_AGE_MB:-256}"
TOOL="${AGE_THROUGHPUT:-$repo/build/bench/age_throughput}"
[[ -x "$TOOL" ]] || die "$TOOL missing (cmake --build $repo/build --target age_throughput)"
command -v age >/dev/null && command -v age-keygen >/dev/null || die "age missing (apt-get install age)"
WORK="$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/etcdadm-age-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

age-keygen -o "$WORK/key.txt" 2>/dev/null
R="$(age-keygen -y "$WORK/key.txt")"
head -c "$((MB << 20))" /dev/urandom >"$WORK/in"
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'; }
for r in $(seq 1 "$RUNS"); do
  log "run $r/$RUNS"
  "$TOOL" "$WORK/in" "$WORK/ours.age" "$R" "$WORK/key.txt" >>"$WORK/ours.jsonl"
  t0=$(now); age -r "$R" -o "$WORK/theirs.age" "$WORK/in"; t1=$(now)
  age -d -i "$WORK/key.txt" -o /dev/null "$WORK/theirs.age"; t2=$(now)
  secs "$t0" "$t1" >>"$WORK/age-enc"
  secs "$t1" "$t2" >>"$WORK/age-dec"
  # Each reads the other's file: the same format.
  age -d -i "$WORK/key.txt" -o /dev/null "$WORK/ours.age" || die "age cannot decrypt our file"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { python3 -c 'import json,sys; print("\n".join(str(json.loads(l)[sys.argv[1]]) for l in open(sys.argv[2])))' "$1" "$WORK/ours.jsonl" | median; }
mbps() { awk -v mb="$MB" -v s="$1" 'BEGIN { printf "%.0f", mb * 1048576 / 1e6 / s }'; }
ours_enc=$(field encryptWall); ours_dec=$(field decryptWall)
age_enc=$(median <"$WORK/age-enc"); age_dec=$(median <"$WORK/age-dec")
{
  echo "- $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), repo $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'); $(age --version 2>/dev/null | head -1 | sed 's/^/age /')"
  echo "- $MB MiB of random bytes, $RUNS runs, medians; one core each (MB = 10^6 bytes)"
  echo
  echo "| | encrypt s | encrypt MB/s | decrypt s | decrypt MB/s |"
  echo "|---|---:|---:|---:|---:|"
  echo "| etcdadm store/age (OpenSSL ChaCha20-Poly1305) | $ours_enc | $(mbps "$ours_enc") | $ours_dec | $(mbps "$ours_dec") |"
  echo "| age $(age --version 2>/dev/null | head -1) (Go) | $age_enc | $(mbps "$age_enc") | $age_dec | $(mbps "$age_dec") |"
} | tee "${BENCH_RESULTS:-/dev/null}"
