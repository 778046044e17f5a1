#!/usr/bin/env bash
# Installs dependencies, builds, and runs the tests: unit tests and end-to-end tests against real
# etcd 3.4, 3.5, 3.6 and 3.7 and real object-store servers on loopback.
# Usage (as root on Debian 12): bash scripts/test.sh [--full]
#   default  the default tier (what CI runs): ctest -LE 'full$'
#   --full   every test on every pinned minor, the scale cases included (docs/testing.md, "Tiers":
#            run it before changing a pin, a format or a version rule)
# TEST_JOBS sets ctest's parallelism (default 6 on any machine: most tests wait on etcd, fsync
# and sockets; the CPU-heavy ones take turns under locks, test/CMakeLists.txt). On 2 cores the
# default tier left the CPU 59% idle at -j4 (vmstat over the e2e stretch); -j6 took it from 1330 s
# to about 980 s (docs/testing.md, "CI time").
set -euo pipefail
cd "$(dirname "$0")/.."
tier=default
case "${1:-}" in
  "") ;;
  --full) tier=full ;;
  *) echo "usage: bash scripts/test.sh [--full]" >&2; exit 2 ;;
esac

phase_start=$SECONDS
phase() {  # NAME: prints how long the phase before it took
  echo "test.sh: $1 took $((SECONDS - phase_start)) s"
  phase_start=$SECONDS
}
bash scripts/install-deps.sh --with-test-servers
phase "install-deps (apt, npm)"
# etcd 3.5, 3.6 and 3.7 for the version matrix, built from etcd's Go modules (cached; see docs/etcd-versions.md)
bash scripts/etcd-versions.sh
phase "etcd builds (Go)"
# Outside oracles built from Go modules (fake-gcs-server, MinIO; cached): test/go-tools/tools
bash scripts/go-test-tools.sh
phase "test tools (Go)"
bash scripts/build.sh
phase "C++ build"
# The Debian root tree the systemd hosts boot in (mmdebstrap, cached; its packages follow the
# libraries the binary links): test/support/systemd_host.h
bash scripts/systemd-root.sh build/cmd/etcdadm
phase "systemd root (mmdebstrap)"

# No server a test started may outlive the run: every test process and what it starts carries
# ETCDADM_TEST_PROCESS=<pid of its test binary's reaper> in its environment (test/support/reaper.h).
# Checked after the tests, and before them for what an interrupted earlier run left (ctest stopped
# by a signal kills its test processes but not what they had started). A leftover is a process
# whose reaper is gone: one whose reaper still runs belongs to a test still running (another
# ctest on this machine), which is not this run's to judge or kill.
start_time() {  # field 22 of /proc/PID/stat, counted after the ")" that ends the command name
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  echo "${20}"
}
leftover_test_processes() {
  local env pid reaper mine theirs
  for env in /proc/[0-9]*/environ; do
    pid="${env#/proc/}"; pid="${pid%/environ}"
    [ "$pid" = "$$" ] && continue
    # (a process gone or not ours to read is skipped, quietly)
    reaper=$({ tr '\0' '\n' <"$env"; } 2>/dev/null | sed -n 's/^ETCDADM_TEST_PROCESS=//p' | head -n1)
    [ -n "$reaper" ] || continue
    mine=$(start_time "$pid") || continue
    # The reaper is alive when its PID runs a process at least as old as this one (not a reuse).
    if theirs=$(start_time "$reaper") && [ "$theirs" -le "$mine" ]; then continue; fi
    echo "$pid"
  done
}
kill_leftover_test_processes() {
  local pid
  for pid in $(leftover_test_processes); do
    echo "  killing $pid: $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-200)" >&2
    kill -9 "$pid" 2>/dev/null || true
  done
}
if [ "$(leftover_test_processes | wc -w)" -gt 0 ]; then
  echo "test.sh: processes an earlier, interrupted test run started are still running:" >&2
  kill_leftover_test_processes
fi

cd build
# ctest starts the longest tests first from the times of the last run, which it keeps in the build
# dir; a clean clone has none, so they are kept between runs in the cache too.
cost_cache="${XDG_CACHE_HOME:-$HOME/.cache}/etcdadm/ctest-cost-data.txt"
mkdir -p Testing/Temporary "$(dirname "$cost_cache")"
if [ -f "$cost_cache" ] && [ ! -f Testing/Temporary/CTestCostData.txt ]; then
  cp "$cost_cache" Testing/Temporary/CTestCostData.txt
fi
select=(-LE 'full$')
[ "$tier" = full ] && select=()
rc=0
ctest --output-on-failure -j"${TEST_JOBS:-6}" --timeout 600 "${select[@]}" || rc=$?
[ -f Testing/Temporary/CTestCostData.txt ] && cp Testing/Temporary/CTestCostData.txt "$cost_cache"
phase "tests ($tier tier)"

# A process still exiting (a Go program's threads after SIGKILL, a daemon its test's reaper just
# killed) is no leak: give such processes a few seconds to go.
for _ in $(seq 1 25); do
  [ "$(leftover_test_processes | wc -w)" -eq 0 ] && break
  sleep 0.2
done
if [ "$(leftover_test_processes | wc -w)" -gt 0 ]; then
  echo "test.sh: FAILED: processes started by the tests are still running" >&2
  kill_leftover_test_processes
  rc=1
fi
exit "$rc"
