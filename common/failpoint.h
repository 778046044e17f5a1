// Failpoints: named places where a test makes etcdadm die at once (SIGKILL, as a power cut or the
// OOM killer would), to prove that running the command again finishes or undoes what it was doing.
// ETCDADM_FAILPOINTS holds the names, comma-separated ("upgrade/switch/stopped"); unset in
// production, where each failpoint costs one environment lookup. etcd tests itself the same way
// (gofail); docs/lifecycle.md lists etcdadm's.
#pragma once

namespace etcdadm {

// Dies here (SIGKILL to itself) when `name` is listed in ETCDADM_FAILPOINTS.
void failpoint(const char* name);

}  // namespace etcdadm
