// Failpoints: named places where a test makes etcdadm die at once (SIGKILL, as a power cut or the
// OOM killer would), to prove that running the command again finishes or undoes what it was doing,
// or stop and wait there, so that the test's own signal lands exactly at that place instead of
// wherever a timer or the size of the data happened to put it. etcd tests itself the same way
// (gofail); docs/lifecycle.md and docs/testing.md list etcdadm's.
//
// ETCDADM_FAILPOINTS holds comma-separated entries, each `NAME` or `NAME=kill` (die there) or
// `NAME=pause`: the first time the process reaches NAME it writes its pid into the file
// `$ETCDADM_FAILPOINT_DIR/NAME` (the name's slashes as dots, written whole by a rename) and waits
// until a SIGINT/SIGTERM asks the interruptible work to stop (common/interrupt.h), or `cancel`
// (the sidecar's shutdown) becomes true, then goes on, to notice the stop at its next check as it
// would anywhere; a SIGKILL simply ends it there. A pause gives up after 120 s, with a warning.
// The variable is read once per process; unset (in production), a failpoint costs the check of an
// empty map, so failpoints may sit in per-chunk loops.
#pragma once

#include <atomic>

namespace etcdadm {

// Dies or pauses here when `name` is listed in ETCDADM_FAILPOINTS.
void failpoint(const char* name, const std::atomic<bool>* cancel = nullptr);

}  // namespace etcdadm
