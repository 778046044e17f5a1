// The test binaries' guard against leaked servers. run_tests_reaping_leftovers(run) runs `run` (the
// tests) in a child process and stays behind as that child's parent and as the subreaper of every
// process below it (prctl PR_SET_CHILD_SUBREAPER): a daemon a test starts through etcdadm (etcd
// under the `process` init system outlives the etcdadm that started it) is reparented here rather
// than to init, and reaped here as soon as it exits. When the test process ends, by any path (a
// pass, a failed assertion that skipped a destructor, an abort inside a library, a signal), every
// process still below this one is SIGKILLed, reaped and named on stderr, and a run that passed but
// left one behind fails: a test must stop what it starts. A process already exiting (a zombie, or
// past the start of exit(), as a daemon whose exec failed is while its starter reports why) is only
// waited for and reaped: nothing of it is left to stop.
//
// The child dies with this process (PR_SET_PDEATHSIG), so ctest's timeout kill, which walks the
// process tree from here, reaches everything; this process gets SIGTERM when ctest dies, and
// forwards it. Every process below carries ETCDADM_TEST_PROCESS in
// its environment (unless it replaces its environment), which scripts/test.sh's final check uses.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

namespace etcdadm::test {

// Returns the exit code for main: the test process's, or 1 when it passed but left processes
// running; a test process that died of a signal makes this one die of the same signal, after the
// clean-up, so that ctest and gtest's death tests see what they would without the reaper. A
// death test's own child (gtest re-executes the binary with --gtest_internal_run_death_test) runs
// `run` directly: its statement must die in that very process.
int run_tests_reaping_leftovers(int argc, char** argv, const std::function<int()>& run);

// What the reaper reads of /proc/<pid>/stat: the parent (field 4) and whether the process is
// exiting: state Z or X (field 3), or the kernel's PF_EXITING in its flags (field 9). The fields
// are counted after the command name, which is in parentheses and may itself hold both. nullopt
// for text that is not such a line.
struct ProcStat {
  pid_t ppid = 0;
  bool exiting = false;
};
std::optional<ProcStat> parse_proc_stat(const std::string& stat);

}  // namespace etcdadm::test
