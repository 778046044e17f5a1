// A fixed HTTP/2 flow-control window for every gRPC channel of the process: what bounds the memory
// a snapshot stream can pile up in gRPC's buffers when etcd sends faster than we consume.
#pragma once

#include <cstdint>

namespace etcdadm {

// The window etcdadm asks etcd to respect: 2 MiB. On loopback a save with this window is as fast
// as with gRPC's own (4-32 MiB, see below); gRPC holds about three times the window in read
// buffers, so peak RSS stays near 45 MiB against any etcd and any db size. A remote member at
// 10 ms round trip still streams at up to 200 MB/s.
inline constexpr uint32_t kHttp2StreamWindowBytes = 2u << 20;

// Pins the initial (per-stream) window that gRPC's chttp2 transport announces at
// kHttp2StreamWindowBytes, for every channel created afterwards. Idempotent and thread-safe.
// Returns false when this gRPC build offers no way to do it (then its BDP-driven window applies).
//
// Why: gRPC 1.51 sizes the window from its BDP estimate, 2 x the bytes received during one ping
// round trip, up to 32 MiB. etcd 3.6 streams a snapshot in bursts of several MiB ahead of its ping
// acks, so the estimate, and with it what gRPC buffers for us, grows to 16-32 MiB (peak RSS of a
// save 52-86 MiB, bench/docs/save_restore_bench.md). Turning BDP probing off instead leaves the connection window at
// 64 KiB, which makes the save slower than etcdctl's. The only fixed window 1.51 offers is the
// transport's estimate hook, grpc_core::chttp2::g_test_only_transport_target_window_estimates_mocker
// (exported by libgrpc.so.29, consulted on every BDP update, its value becomes the window): we set
// it, for gRPC 1.51 only, where its layout is known.
bool pin_http2_stream_window();

}  // namespace etcdadm
