#include "etcd/grpc_runtime.h"

#include <grpc/grpc.h>

#include <mutex>

namespace etcdadm {

namespace {
std::mutex g_mu;
bool g_runtime = false;  // a GrpcRuntime exists
bool g_held = false;     // it holds a gRPC reference
}  // namespace

GrpcRuntime::GrpcRuntime() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_runtime = true;
}

GrpcRuntime::~GrpcRuntime() {
  bool held = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    held = g_held;
    g_held = false;
    g_runtime = false;
  }
  if (held) grpc_shutdown_blocking();
}

void hold_grpc_for_the_run() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_runtime || g_held) return;
  grpc_init();
  g_held = true;
}

}  // namespace etcdadm
