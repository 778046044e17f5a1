#include "etcd/client.h"

#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "etcd/grpc_errors.h"
#include "etcd/grpc_runtime.h"
#include "etcd/grpc_window.h"

namespace etcdadm {

using Clock = std::chrono::steady_clock;

namespace {

// gRPC logs handshake failures itself, on stderr; our errors already say what happened, so its
// lines go to the debug log instead.
void grpc_log_to_spdlog(gpr_log_func_args* args) { spdlog::debug("grpc: {}", args->message); }

struct GrpcLogRedirect {
  GrpcLogRedirect() { gpr_set_log_function(grpc_log_to_spdlog); }
} grpc_log_redirect;

}  // namespace

struct EtcdClient::Conn {
  Endpoint endpoint;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<etcdserverpb::Cluster::Stub> cluster;
  std::unique_ptr<etcdserverpb::Auth::Stub> auth;
  std::string token;
  bool connected_once = false;
  std::string tls_files;  // tls_files_stamp() when the channel was made
};

namespace {

// The TLS files' modification times and sizes: a channel reads them once, at its creation, so a
// client made before a renewal or a CA rotation would present the old client certificate, and
// trust the old CA only, on every reconnection. etcd's own clients re-read them on every handshake;
// this client makes a new channel once they changed (checked on each call: three stat calls).
std::string tls_files_stamp(const ConnectionConfig& c) {
  std::string stamp;
  for (const std::string* path : {&c.cacert, &c.cert, &c.key}) {
    struct stat st {};
    if (!path->empty() && ::stat(path->c_str(), &st) == 0) {
      stamp += std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
               std::to_string(st.st_size) + ";";
    } else {
      stamp += "-;";
    }
  }
  return stamp;
}

}  // namespace

EtcdClient::EtcdClient(ConnectionConfig config) : config_(std::move(config)) {
  config_.normalise_user();
  config_.validate();
  // Before the first channel exists: bounds what a snapshot stream can buffer (grpc_window.h).
  if (!pin_http2_stream_window())
    spdlog::debug("this gRPC build cannot pin the HTTP/2 window; its BDP estimate sizes it");
}

EtcdClient::~EtcdClient() = default;

EtcdClient::Conn& EtcdClient::conn(const std::string& url) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string stamp = config_.tls_configured() ? tls_files_stamp(config_) : "";
  auto it = conns_.find(url);
  if (it != conns_.end()) {
    if (it->second->tls_files == stamp) return *it->second;
    spdlog::debug("the TLS files changed: a new connection to {}", url);
    retired_.push_back(std::move(it->second));
    conns_.erase(it);
  }

  auto c = std::make_unique<Conn>();
  c->tls_files = stamp;
  c->endpoint = parse_endpoint(url, config_.tls_configured());
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (c->endpoint.tls && config_.insecure_skip_tls_verify) {
    // etcdctl's --insecure-skip-tls-verify: encrypted, but the server's certificate is not checked.
    grpc::experimental::TlsChannelCredentialsOptions opts;
    opts.set_verify_server_certs(false);
    opts.set_check_call_host(false);
    opts.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
    if (!config_.cert.empty()) {
      std::vector<grpc::experimental::IdentityKeyCertPair> identity = {
          {read_file(config_.key), read_file(config_.cert)}};
      opts.set_certificate_provider(std::make_shared<grpc::experimental::StaticDataCertificateProvider>(identity));
      opts.watch_identity_key_cert_pairs();
    }
    creds = grpc::experimental::TlsCredentials(opts);
  } else if (c->endpoint.tls) {
    grpc::SslCredentialsOptions opts;
    if (!config_.cacert.empty()) opts.pem_root_certs = read_file(config_.cacert);
    if (!config_.cert.empty()) {
      opts.pem_cert_chain = read_file(config_.cert);
      opts.pem_private_key = read_file(config_.key);
    }
    creds = grpc::SslCredentials(opts);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // large Range replies; gRPC's default is 4 MiB
  args.SetMaxSendMessageSize(-1);
  // Fail fast on a dead member instead of waiting on a silent TCP connection.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  // Each EtcdClient gets its own connections (no sharing of a subchannel across clients).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // No gRPC-level retries: every call goes through our own failover (call_cluster) instead. With
  // retries on (gRPC's default), each call passes through the retry filter, whose trailing-metadata
  // handling in Debian's gRPC 1.51 dereferences an empty optional<grpc_status_code> when a member
  // goes away under a call, and aborts the process (grpc/grpc#34683, fixed upstream by #42405 in
  // 2026). Seen in a writer thread while an upgrade restarted members; Client.SurvivesMembers-
  // KilledAndRestartedUnderThousandsOfCalls is the stress test that keeps it out.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  hold_grpc_for_the_run();
  c->channel = grpc::CreateCustomChannel(c->endpoint.target, creds, args);
  c->kv = etcdserverpb::KV::NewStub(c->channel);
  c->watch = etcdserverpb::Watch::NewStub(c->channel);
  c->lease = etcdserverpb::Lease::NewStub(c->channel);
  c->maintenance = etcdserverpb::Maintenance::NewStub(c->channel);
  c->cluster = etcdserverpb::Cluster::NewStub(c->channel);
  c->auth = etcdserverpb::Auth::NewStub(c->channel);
  auto& ref = *c;
  conns_.emplace(url, std::move(c));
  return ref;
}

CallSite EtcdClient::site(const Conn& c, const std::string& operation) const {
  return CallSite{operation, c.endpoint.url, c.endpoint.tls, !config_.cert.empty(), c.connected_once};
}

// Waits for the channel to connect within the dial timeout. When a connection attempt failed
// (refused, TLS rejected), the caller's RPC (sent without wait-for-ready) fails at once with gRPC's
// reason for it. When the attempt is still pending at the deadline (a host that accepts TCP and
// never answers, a stopped process), nothing would fail at once: the RPC would wait out its
// command timeout too, so the dial timeout would not mean what it says. That case throws here.
static bool dial(grpc::Channel& channel, const std::string& endpoint, std::chrono::milliseconds dial_timeout) {
  if (channel.WaitForConnected(std::chrono::system_clock::now() + dial_timeout)) return true;
  if (channel.GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE) return false;
  throw Error(ErrorKind::kTimeout,
              "could not connect to " + endpoint + " within the dial timeout (" + std::to_string(dial_timeout.count()) +
                  " ms): the connection was not answered",
              "check that the address is an etcd client URL and that the member is not hung; raise --dial-timeout for "
              "slow links");
}

void EtcdClient::authenticate(Conn& c) {
  etcdserverpb::AuthenticateRequest req;
  req.set_name(config_.user);
  req.set_password(config_.password);
  etcdserverpb::AuthenticateResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + config_.command_timeout);
  grpc::Status st = c.auth->Authenticate(&ctx, req, &resp);
  if (!st.ok()) {
    Error e = error_from_grpc(st, site(c, "Authenticate as " + config_.user));
    if (e.kind() == ErrorKind::kAuth || e.kind() == ErrorKind::kInvalidArgument) {
      throw Error(ErrorKind::kAuth,
                  "authentication as user " + config_.user + " on " + c.endpoint.url + " failed: " + st.error_message(),
                  "check --user/--password (or ETCDCTL_USER/ETCDCTL_PASSWORD)");
    }
    throw e;
  }
  c.token = resp.token();
}

void EtcdClient::prepare(Conn& c, grpc::ClientContext& ctx, std::chrono::milliseconds timeout) {
  if (!c.connected_once) c.connected_once = dial(*c.channel, c.endpoint.url, config_.dial_timeout);
  if (timeout.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!config_.user.empty()) {
    if (c.token.empty()) authenticate(c);
    ctx.AddMetadata("token", c.token);
  }
}

static bool is_invalid_token(const grpc::Status& st) {
  return st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         etcd_refusal(st.error_message()) == EtcdRefusal::kInvalidAuthToken;
}

template <typename Fn>
void EtcdClient::call_member(const std::string& endpoint, const char* operation, Fn&& call,
                             std::optional<std::chrono::milliseconds> timeout) {
  Conn& c = conn(endpoint);
  for (int attempt = 0;; ++attempt) {
    grpc::ClientContext ctx;
    prepare(c, ctx, timeout.value_or(config_.command_timeout));
    grpc::Status st = call(c, ctx);
    if (st.ok()) {
      c.connected_once = true;
      return;
    }
    // Tokens expire (default TTL 300 s): renew once, then give up.
    if (attempt == 0 && !config_.user.empty() && is_invalid_token(st)) {
      spdlog::debug("auth token for {} expired; re-authenticating", endpoint);
      c.token.clear();
      continue;
    }
    throw error_from_grpc(st, site(c, operation));
  }
}

template <typename Fn>
void EtcdClient::call_cluster(const char* operation, Fn&& call) {
  std::string failures;
  const size_t n = config_.endpoints.size();
  const size_t first = n == 0 ? 0 : answering_endpoint_.load() % n;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (first + i) % n;
    const auto& ep = config_.endpoints[index];
    try {
      call_member(ep, operation, call);
      answering_endpoint_.store(index);
      return;
    } catch (const Error& e) {
      bool last = i + 1 == n;
      bool reachability =
          e.kind() == ErrorKind::kUnavailable || e.kind() == ErrorKind::kTimeout || e.kind() == ErrorKind::kTls;
      if (!reachability || (last && failures.empty())) throw;
      failures += std::string(failures.empty() ? "" : "; ") + e.what();
      if (last) {
        throw Error(e.kind(), std::string(operation) + " failed on every endpoint: " + failures, e.hint());
      }
      spdlog::debug("{}: {}; trying the next endpoint", operation, e.what());
    }
  }
}

etcdserverpb::StatusResponse EtcdClient::status(const std::string& endpoint) {
  etcdserverpb::StatusResponse resp;
  call_member(endpoint, "Status", [&](Conn& c, grpc::ClientContext& ctx) {
    return c.maintenance->Status(&ctx, etcdserverpb::StatusRequest{}, &resp);
  });
  return resp;
}

etcdserverpb::HashKVResponse EtcdClient::hash_kv(const std::string& endpoint, int64_t revision) {
  etcdserverpb::HashKVRequest req;
  req.set_revision(revision);
  etcdserverpb::HashKVResponse resp;
  call_member(
      endpoint, "HashKV", [&](Conn& c, grpc::ClientContext& ctx) { return c.maintenance->HashKV(&ctx, req, &resp); },
      std::max(config_.command_timeout, kHashKvTimeout));
  return resp;
}

void EtcdClient::move_leader(const std::string& endpoint, uint64_t target_id) {
  etcdserverpb::MoveLeaderRequest req;
  req.set_targetid(target_id);
  etcdserverpb::MoveLeaderResponse resp;
  call_member(endpoint, "MoveLeader",
              [&](Conn& c, grpc::ClientContext& ctx) { return c.maintenance->MoveLeader(&ctx, req, &resp); });
}

void EtcdClient::defragment(const std::string& endpoint, std::chrono::milliseconds timeout) {
  etcdserverpb::DefragmentResponse resp;
  call_member(
      endpoint, "Defragment",
      [&](Conn& c, grpc::ClientContext& ctx) {
        return c.maintenance->Defragment(&ctx, etcdserverpb::DefragmentRequest{}, &resp);
      },
      timeout);
}

etcdserverpb::AlarmResponse EtcdClient::alarm_disarm(uint64_t member_id, etcdserverpb::AlarmMember::AlarmType alarm) {
  etcdserverpb::AlarmRequest req;
  req.set_action(etcdserverpb::AlarmRequest::DEACTIVATE);
  req.set_memberid(member_id);
  req.set_alarm(alarm);
  etcdserverpb::AlarmResponse resp;
  call_cluster("Alarm", [&](Conn& c, grpc::ClientContext& ctx) { return c.maintenance->Alarm(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::AlarmResponse EtcdClient::alarm_list() {
  etcdserverpb::AlarmRequest req;
  req.set_action(etcdserverpb::AlarmRequest::GET);
  etcdserverpb::AlarmResponse resp;
  call_cluster("Alarm", [&](Conn& c, grpc::ClientContext& ctx) { return c.maintenance->Alarm(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::DowngradeResponse EtcdClient::downgrade(etcdserverpb::DowngradeRequest::DowngradeAction action,
                                                      const std::string& version) {
  etcdserverpb::DowngradeRequest req;
  req.set_action(action);
  req.set_version(version);
  etcdserverpb::DowngradeResponse resp;
  call_cluster("Downgrade",
               [&](Conn& c, grpc::ClientContext& ctx) { return c.maintenance->Downgrade(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::MemberListResponse EtcdClient::member_list() {
  etcdserverpb::MemberListResponse resp;
  call_cluster("MemberList", [&](Conn& c, grpc::ClientContext& ctx) {
    return c.cluster->MemberList(&ctx, etcdserverpb::MemberListRequest{}, &resp);
  });
  return resp;
}

etcdserverpb::MemberAddResponse EtcdClient::member_add(const std::vector<std::string>& peer_urls, bool learner) {
  etcdserverpb::MemberAddRequest req;
  for (const auto& u : peer_urls) req.add_peerurls(u);
  req.set_islearner(learner);
  etcdserverpb::MemberAddResponse resp;
  call_cluster("MemberAdd", [&](Conn& c, grpc::ClientContext& ctx) { return c.cluster->MemberAdd(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::MemberRemoveResponse EtcdClient::member_remove(uint64_t id) {
  etcdserverpb::MemberRemoveRequest req;
  req.set_id(id);
  etcdserverpb::MemberRemoveResponse resp;
  call_cluster("MemberRemove",
               [&](Conn& c, grpc::ClientContext& ctx) { return c.cluster->MemberRemove(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::MemberPromoteResponse EtcdClient::member_promote(uint64_t id) {
  etcdserverpb::MemberPromoteRequest req;
  req.set_id(id);
  etcdserverpb::MemberPromoteResponse resp;
  call_cluster("MemberPromote",
               [&](Conn& c, grpc::ClientContext& ctx) { return c.cluster->MemberPromote(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::RangeResponse EtcdClient::range(const etcdserverpb::RangeRequest& request) {
  etcdserverpb::RangeResponse resp;
  call_cluster("Range", [&](Conn& c, grpc::ClientContext& ctx) { return c.kv->Range(&ctx, request, &resp); });
  return resp;
}

etcdserverpb::PutResponse EtcdClient::put(const std::string& key, const std::string& value) {
  etcdserverpb::PutRequest req;
  req.set_key(key);
  req.set_value(value);
  etcdserverpb::PutResponse resp;
  call_cluster("Put", [&](Conn& c, grpc::ClientContext& ctx) { return c.kv->Put(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::DeleteRangeResponse EtcdClient::delete_range(const etcdserverpb::DeleteRangeRequest& request) {
  etcdserverpb::DeleteRangeResponse resp;
  call_cluster("DeleteRange",
               [&](Conn& c, grpc::ClientContext& ctx) { return c.kv->DeleteRange(&ctx, request, &resp); });
  return resp;
}

etcdserverpb::TxnResponse EtcdClient::txn(const etcdserverpb::TxnRequest& request) {
  etcdserverpb::TxnResponse resp;
  call_cluster("Txn", [&](Conn& c, grpc::ClientContext& ctx) { return c.kv->Txn(&ctx, request, &resp); });
  return resp;
}

void EtcdClient::compact(int64_t revision, bool physical) {
  etcdserverpb::CompactionRequest req;
  req.set_revision(revision);
  req.set_physical(physical);
  etcdserverpb::CompactionResponse resp;
  call_cluster("Compact", [&](Conn& c, grpc::ClientContext& ctx) { return c.kv->Compact(&ctx, req, &resp); });
}

etcdserverpb::LeaseGrantResponse EtcdClient::lease_grant(int64_t ttl_seconds, int64_t id) {
  etcdserverpb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds);
  req.set_id(id);
  etcdserverpb::LeaseGrantResponse resp;
  call_cluster("LeaseGrant", [&](Conn& c, grpc::ClientContext& ctx) { return c.lease->LeaseGrant(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::LeaseRevokeResponse EtcdClient::lease_revoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest req;
  req.set_id(id);
  etcdserverpb::LeaseRevokeResponse resp;
  call_cluster("LeaseRevoke",
               [&](Conn& c, grpc::ClientContext& ctx) { return c.lease->LeaseRevoke(&ctx, req, &resp); });
  return resp;
}

etcdserverpb::LeaseTimeToLiveResponse EtcdClient::lease_time_to_live(int64_t id) {
  etcdserverpb::LeaseTimeToLiveRequest req;
  req.set_id(id);
  etcdserverpb::LeaseTimeToLiveResponse resp;
  call_cluster("LeaseTimeToLive",
               [&](Conn& c, grpc::ClientContext& ctx) { return c.lease->LeaseTimeToLive(&ctx, req, &resp); });
  return resp;
}

void EtcdClient::watch_all(const std::string& endpoint, int64_t start_revision,
                           const std::function<bool(const etcdserverpb::WatchResponse&)>& on_response,
                           const std::atomic<bool>& stop, std::chrono::milliseconds progress_every) {
  Conn& c = conn(endpoint);
  grpc::ClientContext ctx;
  prepare(c, ctx, std::chrono::milliseconds(0));  // a watch has no deadline
  auto stream = c.watch->Watch(&ctx);
  std::mutex write_mu;  // the ticker's progress requests and the create request
  etcdserverpb::WatchRequest create;
  auto* cr = create.mutable_create_request();
  cr->set_key(std::string(1, '\0'));
  cr->set_range_end(std::string(1, '\0'));  // every key
  cr->set_start_revision(start_revision);
  cr->set_progress_notify(true);
  {
    std::lock_guard<std::mutex> lock(write_mu);
    stream->Write(create);
  }
  // A ticker: cancels the stream when `stop` is set, asks for progress while the stream is quiet.
  std::atomic<int64_t> last_message{Clock::now().time_since_epoch().count()};
  std::mutex tick_mu;
  std::condition_variable tick_cv;
  bool done = false;
  std::thread ticker([&] {
    std::unique_lock<std::mutex> lock(tick_mu);
    while (!done) {
      tick_cv.wait_for(lock, std::chrono::milliseconds(100));
      if (done) return;
      if (stop.load()) {
        ctx.TryCancel();
        return;
      }
      auto quiet = Clock::now().time_since_epoch() - Clock::duration(last_message.load());
      if (quiet >= progress_every) {
        last_message = Clock::now().time_since_epoch().count();
        etcdserverpb::WatchRequest progress;
        progress.mutable_progress_request();
        std::lock_guard<std::mutex> wl(write_mu);
        stream->Write(progress);
      }
    }
  });
  auto stop_ticker = [&] {
    {
      std::lock_guard<std::mutex> lock(tick_mu);
      done = true;
    }
    tick_cv.notify_all();
    if (ticker.joinable()) ticker.join();
  };
  std::exception_ptr callback_error;
  bool ended_by_caller = false;
  etcdserverpb::WatchResponse msg;
  while (stream->Read(&msg)) {
    last_message = Clock::now().time_since_epoch().count();
    c.connected_once = true;
    try {
      if (!on_response(msg)) {
        ended_by_caller = true;
        ctx.TryCancel();
        break;
      }
    } catch (...) {
      callback_error = std::current_exception();
      ctx.TryCancel();
      break;
    }
  }
  stop_ticker();
  while (stream->Read(&msg)) {
  }
  grpc::Status st = stream->Finish();
  if (callback_error) std::rethrow_exception(callback_error);
  if (ended_by_caller || stop.load()) return;
  if (!st.ok()) throw error_from_grpc(st, site(c, "Watch"));
  throw Error(ErrorKind::kUnavailable, "the watch on " + endpoint + " ended",
              "the member closed the stream; it is retried");
}

SnapshotStreamResult EtcdClient::snapshot(const std::string& endpoint, const SnapshotChunkFn& on_chunk,
                                          std::chrono::milliseconds stall_timeout,
                                          const std::function<void()>& on_first_chunk) {
  Conn& c = conn(endpoint);
  grpc::ClientContext ctx;
  // No overall deadline: a large database legitimately streams for minutes. A watchdog cancels the
  // stream when the member stops sending (killed, stopped, network gone) for stall_timeout.
  prepare(c, ctx, std::chrono::milliseconds(0));

  std::atomic<int64_t> last_progress{Clock::now().time_since_epoch().count()};
  std::atomic<bool> in_callback{false};
  std::atomic<bool> stalled{false};
  std::mutex wd_mu;
  std::condition_variable wd_cv;
  bool done = false;
  // What gRPC may buffer ahead of on_chunk is bounded by the pinned HTTP/2 window
  // (grpc_window.h), not by anything here: while on_chunk blocks, the rest of the stream waits in
  // etcd and the kernel's socket buffers.
  constexpr auto kWatchdogTick = std::chrono::milliseconds(100);
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(wd_mu);
    while (!done) {
      wd_cv.wait_for(lock, kWatchdogTick);
      // Time spent in our own pipeline (a slow upload behind a full queue) is not the member's
      // stall: only count time while waiting for the next message.
      auto idle = Clock::now().time_since_epoch() - Clock::duration(last_progress.load());
      if (!done && !in_callback.load() && idle > stall_timeout) {
        stalled = true;
        ctx.TryCancel();
        return;
      }
    }
  });
  auto stop_watchdog = [&] {
    {
      std::lock_guard<std::mutex> lock(wd_mu);
      done = true;
    }
    wd_cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
  };

  SnapshotStreamResult result;
  std::exception_ptr callback_error;
  grpc::Status st;
  {
    auto reader = c.maintenance->Snapshot(&ctx, etcdserverpb::SnapshotRequest{});
    etcdserverpb::SnapshotResponse msg;
    bool first = true;
    while (reader->Read(&msg)) {
      last_progress = Clock::now().time_since_epoch().count();
      in_callback = true;
      try {
        if (first) {
          first = false;
          if (on_first_chunk) on_first_chunk();
        }
        if (!msg.version().empty()) result.storage_version = msg.version();
        on_chunk(msg.blob(), msg.remaining_bytes());
      } catch (...) {
        callback_error = std::current_exception();
        ctx.TryCancel();
        break;
      }
      last_progress = Clock::now().time_since_epoch().count();
      in_callback = false;
      result.bytes += msg.blob().size();
    }
    in_callback = false;
    if (callback_error) {
      while (reader->Read(&msg)) {
      }
    }
    st = reader->Finish();
  }
  stop_watchdog();
  if (callback_error) std::rethrow_exception(callback_error);
  if (stalled) {
    throw Error(ErrorKind::kTimeout,
                "snapshot from " + endpoint + " stalled: no data for " + std::to_string(stall_timeout.count() / 1000) +
                    "s after " + std::to_string(result.bytes) + " bytes",
                "the member stopped responding mid-snapshot; check its health or raise --stall-timeout");
  }
  if (!st.ok()) {
    if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED && !config_.user.empty()) c.token.clear();
    CallSite where = site(c, "Snapshot");
    where.channel_connected = where.channel_connected || result.bytes > 0;
    Error e = error_from_grpc(st, where);
    if (result.bytes > 0) throw e.wrap("snapshot stream broke after " + std::to_string(result.bytes) + " bytes");
    throw e;
  }
  c.connected_once = true;
  return result;
}

}  // namespace etcdadm
