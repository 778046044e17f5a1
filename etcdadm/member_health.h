// Reaching and waiting for a member that etcdadm manages (init, join, reset, upgrade, member
// remove): the client connection with the member's etcdctl certificate, and waiting until a member
// answers, with the reason when it never does.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "etcd/client.h"
#include "etcd/connection.h"
#include "etcdadm/init_system.h"
#include "etcdadm/member_config.h"

namespace etcdadm {

// A connection to `endpoints` with the member's CA and etcdctl client certificate.
ConnectionConfig connection_to(const MemberConfig& m, const std::vector<std::string>& endpoints);

// The client URLs through which a command reaches the member's cluster, in this order: the member's
// own loopback URL, `extra` (--endpoints), then the members it recorded at init/join (for when it
// is down itself).
std::vector<std::string> cluster_endpoints_of(const MemberConfig& m, const std::vector<std::string>& extra);

// Waits until `check` succeeds, `timeout` passes (kTimeout, with the last error and `hint`) or
// `alive` reports the member gone (kUnavailable). `retryable` (optional) says which errors are
// worth waiting out; others are rethrown at once.
void wait_until(const std::string& what, std::chrono::seconds timeout, const std::function<void()>& check,
                const std::function<bool()>& alive, const std::string& hint,
                const std::function<bool(const Error&)>& retryable = {});

// Where the member's own log is ("see journalctl -u etcd", the process init system's log file).
std::string member_log_hint(const MemberConfig& m);

// Whether etcd may still come up: only the process init system knows for sure that it is gone;
// systemd restarts it and the kubelet re-creates it.
bool member_alive(const MemberConfig& m, InitSystem& init_system);

// Until a linearizable read through the member's own client URL succeeds (etcdadm's health check).
void wait_member_healthy(const MemberConfig& m, EtcdClient& local, InitSystem& init_system,
                         std::chrono::seconds timeout);

// Until the member at `endpoint` sees a leader and has applied everything the leader had committed
// when the wait began (a member back from a restart or a defrag serves what is current, not what
// it had). `client_url_of(id)` names a member's client URL ("" when unknown), to ask the leader.
// Returns the leader's raft index it caught up with.
uint64_t wait_caught_up(EtcdClient& client, const std::string& endpoint, const std::string& what,
                        const std::function<std::string(uint64_t)>& client_url_of, std::chrono::seconds timeout,
                        const std::function<bool()>& alive, const std::string& hint);

// Hands the leadership of the member at `leader_endpoint` (`leader_label` in messages) to voter
// `target_id` and waits until it has moved (or moved elsewhere through an election): a member about
// to stop serving for a while (a restart, a defrag) should not lead.
void hand_leadership(EtcdClient& client, const std::string& leader_endpoint, const std::string& leader_label,
                     uint64_t target_id, const std::string& target_label, const std::string& hint);

}  // namespace etcdadm
