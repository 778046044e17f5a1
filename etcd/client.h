// gRPC client for etcd v3: per-member calls (Status, HashKV, Snapshot act on ONE member, so they take
// the endpoint explicitly) and cluster calls (KV, MemberList) that fail over across endpoints.
// Handles TLS, client certificates, user/password auth (token in the `token` metadata, renewed when
// it expires), dial and command timeouts. Every failure is an etcdadm::Error with a clear message.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/connection.h"
#include "etcd/grpc_errors.h"
#include "etcd/proto/etcd.grpc.pb.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace etcdadm {

// Receives the snapshot stream piece by piece. `remaining` is the server's remaining_bytes.
using SnapshotChunkFn = std::function<void(std::string_view blob, uint64_t remaining)>;

struct SnapshotStreamResult {
  uint64_t bytes = 0;           // all bytes received, digest trailer included
  std::string storage_version;  // SnapshotResponse.version: the member's storage version ("3.6.0"; 3.6+ only)
};

class EtcdClient {
 public:
  explicit EtcdClient(ConnectionConfig config);
  ~EtcdClient();

  const ConnectionConfig& config() const { return config_; }

  // ---- one member ----
  etcdserverpb::StatusResponse status(const std::string& endpoint);
  // HashKV walks the member's whole key bucket, which at etcd's 8 GiB quota takes far longer than
  // one request's usual timeout (etcdctl's 5 s fails there): it gets at least kHashKvTimeout.
  static constexpr std::chrono::milliseconds kHashKvTimeout{std::chrono::minutes(2)};
  etcdserverpb::HashKVResponse hash_kv(const std::string& endpoint, int64_t revision);
  // Hands leadership to `target_id`. etcd takes it only from the leader itself: `endpoint` must
  // be the leader's client URL (a follower answers "not leader").
  void move_leader(const std::string& endpoint, uint64_t target_id);
  // Streams Maintenance.Snapshot from `endpoint`. `on_first_chunk` (optional) runs once the server
  // has started streaming (its read transaction is open). Fails with kTimeout when the member sends
  // nothing for `stall_timeout`. If `on_chunk` throws, the stream is cancelled and the error rethrown.
  SnapshotStreamResult snapshot(const std::string& endpoint, const SnapshotChunkFn& on_chunk,
                                std::chrono::milliseconds stall_timeout,
                                const std::function<void()>& on_first_chunk = {});

  // Defragments `endpoint`'s backend: the member serves nothing until it is done (its whole db is
  // copied), so the call has its own `timeout` rather than the command timeout.
  void defragment(const std::string& endpoint, std::chrono::milliseconds timeout);

  // ---- the cluster (the endpoint that answered last, else the next that answers) ----
  etcdserverpb::MemberListResponse member_list();
  // Membership changes. Not retried here: the caller decides (a MemberAdd whose answer was lost
  // may have been applied, so callers look at the member list before adding again).
  etcdserverpb::MemberAddResponse member_add(const std::vector<std::string>& peer_urls, bool learner);
  etcdserverpb::MemberRemoveResponse member_remove(uint64_t id);
  etcdserverpb::MemberPromoteResponse member_promote(uint64_t id);
  // The cluster's active alarms (NOSPACE, CORRUPT).
  etcdserverpb::AlarmResponse alarm_list();
  // Disarms `alarm` of `member_id` (etcd answers with the alarms it disarmed).
  etcdserverpb::AlarmResponse alarm_disarm(uint64_t member_id, etcdserverpb::AlarmMember::AlarmType alarm);
  // etcd's downgrade API (3.6+): validate, enable or cancel a downgrade of the cluster version to
  // `version` ("3.5").
  etcdserverpb::DowngradeResponse downgrade(etcdserverpb::DowngradeRequest::DowngradeAction action,
                                            const std::string& version);
  etcdserverpb::RangeResponse range(const etcdserverpb::RangeRequest& request);
  etcdserverpb::PutResponse put(const std::string& key, const std::string& value);
  etcdserverpb::DeleteRangeResponse delete_range(const etcdserverpb::DeleteRangeRequest& request);
  etcdserverpb::TxnResponse txn(const etcdserverpb::TxnRequest& request);
  // Compacts the keyspace at `revision`; `physical`: returns once the compaction is applied to the
  // backend (what HashKV then hashes).
  void compact(int64_t revision, bool physical);
  etcdserverpb::LeaseGrantResponse lease_grant(int64_t ttl_seconds, int64_t id = 0);
  etcdserverpb::LeaseRevokeResponse lease_revoke(int64_t id);
  etcdserverpb::LeaseTimeToLiveResponse lease_time_to_live(int64_t id);

  // ---- watch ----
  // Watches the whole keyspace on `endpoint` from `start_revision`, passing every WatchResponse
  // (events, the creation, progress notifications, a cancellation) to `on_response` on this
  // thread. Returns when `stop` becomes true (checked every 100 ms) or `on_response` returns false;
  // throws when the stream fails (the member went away: kUnavailable) or `on_response` throws.
  // Progress notifications are asked for, and a progress request is sent every `progress_every`
  // while no events arrive, so a quiet cluster still tells how far it is.
  void watch_all(const std::string& endpoint, int64_t start_revision,
                 const std::function<bool(const etcdserverpb::WatchResponse&)>& on_response,
                 const std::atomic<bool>& stop, std::chrono::milliseconds progress_every = std::chrono::seconds(1));

 private:
  struct Conn;
  Conn& conn(const std::string& endpoint);
  CallSite site(const Conn& c, const std::string& operation) const;
  // Prepares a context: deadline, auth token (authenticating first when needed).
  void prepare(Conn& c, grpc::ClientContext& ctx, std::chrono::milliseconds timeout);
  void authenticate(Conn& c);
  // Runs `call` against one endpoint, re-authenticating once on an expired token.
  // `timeout`: the call's own deadline instead of the command timeout.
  template <typename Fn>
  void call_member(const std::string& endpoint, const char* operation, Fn&& call,
                   std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Runs `call` on each endpoint in turn until one is reachable, starting at the one that answered
  // last: a member that is down or stalled costs its timeout once, not on every call.
  template <typename Fn>
  void call_cluster(const char* operation, Fn&& call);

  ConnectionConfig config_;
  std::atomic<size_t> answering_endpoint_{0};  // index into config_.endpoints
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Conn>> conns_;
  // Connections made before the TLS files changed: kept (a call may still use one) until the client goes.
  std::vector<std::unique_ptr<Conn>> retired_;
};

}  // namespace etcdadm
