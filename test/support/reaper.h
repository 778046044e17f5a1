// The test binaries' guard against leaked servers. run_tests_reaping_leftovers(run) runs `run` (the
// tests) in a child process and stays behind as that child's parent and as the subreaper of every
// process below it (prctl PR_SET_CHILD_SUBREAPER): a daemon a test starts through etcdadm (etcd
// under the `process` init system outlives the etcdadm that started it) is reparented here rather
// than to init, and reaped here as soon as it exits. When the test process ends, by any path (a
// pass, a failed assertion that skipped a destructor, an abort inside a library, a signal), every
// process still below this one is SIGKILLed, reaped and named on stderr, and a run that passed but
// left one behind fails: a test must stop what it starts.
//
// The child dies with this process (PR_SET_PDEATHSIG), so ctest's timeout kill, which walks the
// process tree from here, reaches everything; this process gets SIGTERM when ctest dies, and
// forwards it. Every process below carries ETCDADM_TEST_PROCESS in
// its environment (unless it replaces its environment), which scripts/test.sh's final check uses.
#pragma once

#include <functional>

namespace etcdadm::test {

// Returns the exit code for main: the test process's, or 1 when it passed but left processes
// running; a test process that died of a signal makes this one die of the same signal, after the
// clean-up, so that ctest and gtest's death tests see what they would without the reaper. A
// death test's own child (gtest re-executes the binary with --gtest_internal_run_death_test) runs
// `run` directly: its statement must die in that very process.
int run_tests_reaping_leftovers(int argc, char** argv, const std::function<int()>& run);

}  // namespace etcdadm::test
