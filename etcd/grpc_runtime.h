// One gRPC for the whole run of etcdadm, shut down before the process exits, waiting for gRPC's
// own threads.
//
// Without it, gRPC is started by the first channel and shut down by the destruction of the last:
// a command that made a client, dropped it and made others (`etcdadm info`: a status through a
// temporary client, then a pool) shut gRPC down and started it again in between, and whatever of a
// shutdown gRPC finishes on its own threads could still run while exit() ran OpenSSL's and libc's
// exit handlers. `etcdadm info` crashed once so in CI (SIGSEGV in gRPC's default-executor thread,
// inside libc, with nothing printed yet).
//
// main() holds a GrpcRuntime from its start to its end. The first EtcdClient then takes a gRPC
// reference that lasts until the GrpcRuntime is destroyed, whose grpc_shutdown_blocking() returns
// once gRPC's threads are joined (when no channel outlived main's scope; one that did keeps gRPC up
// as before). The reference is taken at the first client, not in main(): gRPC's threads must start
// after a sidecar blocked its signals (sidecar/signals.h), as they did before. Without a
// GrpcRuntime (the tests' own processes) nothing changes.
#pragma once

namespace etcdadm {

class GrpcRuntime {
 public:
  GrpcRuntime();
  ~GrpcRuntime();
  GrpcRuntime(const GrpcRuntime&) = delete;
  GrpcRuntime& operator=(const GrpcRuntime&) = delete;
};

// Called before every channel is made: under a GrpcRuntime, the first call takes its reference.
void hold_grpc_for_the_run();

}  // namespace etcdadm
