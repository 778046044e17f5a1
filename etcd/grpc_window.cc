#include "etcd/grpc_window.h"

#include <grpcpp/version_info.h>

#include <mutex>

#if GRPC_CPP_VERSION_MAJOR == 1 && GRPC_CPP_VERSION_MINOR == 51
#define ETCDADM_HAVE_WINDOW_HOOK 1
// Declared exactly as in gRPC 1.51's src/core/ext/transport/chttp2/transport/flow_control.h (not an
// installed header): same namespace, same virtual functions in the same order, so the vtable
// matches the one the transport calls through.
namespace grpc_core::chttp2 {
class TestOnlyTransportTargetWindowEstimatesMocker {
 public:
  virtual ~TestOnlyTransportTargetWindowEstimatesMocker() {}
  virtual double ComputeNextTargetInitialWindowSizeFromPeriodicUpdate(double current_target) = 0;
};
extern TestOnlyTransportTargetWindowEstimatesMocker* g_test_only_transport_target_window_estimates_mocker;
}  // namespace grpc_core::chttp2
#endif

namespace etcdadm {

#ifdef ETCDADM_HAVE_WINDOW_HOOK
namespace {
// Answers every BDP update with the same window. The transport clamps it to [128 B, 1 GiB] and
// announces it in a SETTINGS frame (INITIAL_WINDOW_SIZE); the connection window follows it.
class FixedWindow final : public grpc_core::chttp2::TestOnlyTransportTargetWindowEstimatesMocker {
 public:
  double ComputeNextTargetInitialWindowSizeFromPeriodicUpdate(double) override { return kHttp2StreamWindowBytes; }
};
}  // namespace
#endif

bool pin_http2_stream_window() {
#ifdef ETCDADM_HAVE_WINDOW_HOOK
  // Never destroyed: transports may consult it until the process exits.
  static std::once_flag installed;
  std::call_once(installed,
                 [] { grpc_core::chttp2::g_test_only_transport_target_window_estimates_mocker = new FixedWindow(); });
  return true;
#else
  return false;
#endif
}

}  // namespace etcdadm
