// CPU priority (nice values) of this process's threads. On Linux a nice value belongs to a thread,
// and a new thread starts with the value of the thread that created it.
//
// Why etcdadm uses it: a backup usually runs on the host of the etcd member it reads, and etcd
// itself needs more than a core to serve a snapshot stream. The save's compression worker runs
// below etcd's priority, and `backup save --nice` lowers the whole save (measured in
// bench/README.md).
#pragma once

namespace etcdadm {

int current_thread_nice();
// Best effort: lowering priority always works; raising it needs CAP_SYS_NICE, and a refusal is
// ignored (the thread keeps its lower priority). Values are clamped to 0..19.
void set_current_thread_nice(int nice);
// Every thread that exists now; threads created later inherit from their creator.
void set_process_nice(int nice);

}  // namespace etcdadm
