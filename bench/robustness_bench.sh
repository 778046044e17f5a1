#!/usr/bin/env bash
# The robustness harness as a measurement (issue 60): how long after a fault ends, a partition
# healed above all, three hosts running `etcdadm auto` in network namespaces are one healthy
# cluster of three voters again. It runs the e2e test Robustness.* (test/e2e/robustness_test.cc,
# as root: it makes namespaces and mounts) with BENCH_KINDS only, BENCH_SCHEDULES schedules from
# seed BENCH_SEED, and reads the lines each schedule prints:
#   schedule <i> (seed <s>): <faults>
#   mended: one healthy cluster of three <ms> ms after the last fault ended
# Only schedules of a single fault are counted (a second fault would be measured instead). The
# test polls every 250 ms with etcdctl in each host's namespace (about 100 ms a host), so each
# figure is late by up to about half a second; what bounds it from below is etcd's election
# (1 s timeout in these clusters) and, for a member that was cut off, its catching up.
# No peer tool runs here for a ratio: etcd-manager and etcd-druid need Kubernetes or cloud
# volumes (bench/docs/robustness_bench.md says what etcd-manager's documented timings are).
#
# Usage: sudo bench/robustness_bench.sh
#   BENCH_KINDS (default isolate-host,isolate-leader,one-way-loss), BENCH_SCHEDULES (default 30),
#   BENCH_SEED (default 1), BENCH_ETCD_MINOR (default 3.7)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
source "$here/lib.sh"

KINDS="${BENCH_KINDS:-isolate-host,isolate-leader,one-way-loss}"
SCHEDULES="${BENCH_SCHEDULES:-30}"
SEED="${BENCH_SEED:-1}"
MINOR="${BENCH_ETCD_MINOR:-3.7}"
TESTS="$repo/build/test/e2e_tests"
[[ $(id -u) == 0 ]] || die "run as root: the harness makes network namespaces and mounts"
[[ -x "$TESTS" ]] || die "e2e_tests not built (cmake --build $repo/build -j2 --target e2e_tests etcdadm)"
make_workdir

log "robustness harness: ${SCHEDULES} schedules of ${KINDS} on etcd ${MINOR}, seed ${SEED}"
ETCDADM_TEST_ETCD="$MINOR" ETCDADM_ROBUSTNESS_KINDS="$KINDS" ETCDADM_ROBUSTNESS_SCHEDULES="$SCHEDULES" \
  ETCDADM_ROBUSTNESS_SEED="$SEED" "$TESTS" --gtest_filter='Robustness.*' >"$WORK/harness.log" 2>&1 ||
  die "the harness failed (its output: $WORK/harness.log; kept: $(cp "$WORK/harness.log" /tmp/robustness_bench.log && echo /tmp/robustness_bench.log))"

echo "# etcdadm auto: from a fault's end to one healthy cluster of three"
echo
echo "$(machine); etcd ${MINOR}; ${SCHEDULES} schedules of ${KINDS}, seed ${SEED}; single-fault schedules counted"
echo
python3 - "$WORK/harness.log" <<'PY'
import re, statistics, sys
schedules, current = [], None
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"schedule (\S+) \(seed \d+\): (.*)", line)
    if m:
        current = m[2].strip()
        continue
    m = re.match(r"\s+mended: one healthy cluster of three (\d+) ms", line)
    if m and current is not None:
        schedules.append((current, int(m[1])))
        current = None
by_kind = {}
for faults, ms in schedules:
    if ";" in faults:
        continue
    kind = ("the leader's host cut off" if "(the leader)" in faults else
            "a host cut off" if faults.startswith("isolate") else
            "one-way loss" if faults.startswith("drop what") else faults.split(" of ")[0])
    by_kind.setdefault(kind, []).append(ms / 1000)
print("| fault | schedules | median s | p90 s | max s |")
print("|---|---:|---:|---:|---:|")
for kind, v in sorted(by_kind.items()):
    v.sort()
    p90 = v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
    print("| %s | %d | %.1f | %.1f | %.1f |" % (kind, len(v), statistics.median(v), p90, v[-1]))
PY
