#include "etcdadm/member_health.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

namespace etcdadm {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace
using namespace std::chrono_literals;

ConnectionConfig connection_to(const MemberConfig& m, const std::vector<std::string>& endpoints) {
  ConnectionConfig c;
  c.endpoints = endpoints;
  c.cacert = m.ca_cert();
  c.cert = m.cert("etcdctl-etcd-client");
  c.key = m.key("etcdctl-etcd-client");
  c.dial_timeout = 3s;
  c.command_timeout = 10s;
  return c;
}

std::vector<std::string> cluster_endpoints_of(const MemberConfig& m, const std::vector<std::string>& extra) {
  std::vector<std::string> endpoints = {m.loopback_client_url()};
  for (const auto& e : extra) endpoints.push_back(e);
  for (const auto& e : m.cluster_endpoints) {
    if (e != m.client_url()) endpoints.push_back(e);
  }
  return endpoints;
}

void wait_until(const std::string& what, std::chrono::seconds timeout, const std::function<void()>& check,
                const std::function<bool()>& alive, const std::string& hint,
                const std::function<bool(const Error&)>& retryable) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    try {
      check();
      return;
    } catch (const Error& e) {
      if (retryable && !retryable(e)) throw;
      if (!alive()) {
        throw Error(ErrorKind::kUnavailable, what + ": etcd is not running any more (last error: " + e.what() + ")",
                    hint);
      }
      if (Clock::now() >= deadline) {
        throw Error(ErrorKind::kTimeout,
                    what + ": not done after " + std::to_string(timeout.count()) + " s (last error: " + e.what() + ")",
                    hint);
      }
      spdlog::debug("{}: {}", what, e.what());
    }
    std::this_thread::sleep_for(200ms);
  }
}

std::string member_log_hint(const MemberConfig& m) {
  switch (m.init_system) {
    case InitSystemKind::kSystemd:
      return "see `journalctl -u " + m.service_name + "`";
    case InitSystemKind::kKubelet:
      return "see the kubelet's log and `crictl logs` of the etcd container";
    case InitSystemKind::kProcess:
      return "see " + m.log_file();
  }
  return {};
}

bool member_alive(const MemberConfig& m, InitSystem& init_system) {
  return m.init_system != InitSystemKind::kProcess || init_system.running(m);
}

void wait_member_healthy(const MemberConfig& m, EtcdClient& local, InitSystem& init_system,
                         std::chrono::seconds timeout) {
  wait_until(
      "health of member " + m.name, timeout,
      [&] {
        etcdserverpb::RangeRequest req;
        req.set_key("health");
        req.set_limit(1);
        local.range(req);
      },
      [&] { return member_alive(m, init_system); }, member_log_hint(m));
  spdlog::info("member {} is healthy at {}", m.name, m.loopback_client_url());
}

uint64_t wait_caught_up(EtcdClient& client, const std::string& endpoint, const std::string& what,
                        const std::function<std::string(uint64_t)>& client_url_of, std::chrono::seconds timeout,
                        const std::function<bool()>& alive, const std::string& hint) {
  uint64_t leader_index = 0;
  wait_until(
      what, timeout,
      [&] {
        auto st = client.status(endpoint);
        if (st.leader() == 0) throw Error(ErrorKind::kUnavailable, "no leader");
        if (leader_index == 0) {
          if (st.leader() == st.header().member_id()) {
            leader_index = st.raftindex();
          } else if (std::string url = client_url_of(st.leader()); !url.empty()) {
            leader_index = client.status(url).raftindex();
          }
          if (leader_index == 0) throw Error(ErrorKind::kUnavailable, "the leader did not answer");
        }
        uint64_t applied = st.raftappliedindex() != 0 ? st.raftappliedindex() : st.raftindex();
        if (applied < leader_index)
          throw Error(ErrorKind::kUnavailable, fmt::format("applied {} of {}", applied, leader_index));
      },
      alive, hint);
  return leader_index;
}

void hand_leadership(EtcdClient& client, const std::string& leader_endpoint, const std::string& leader_label,
                     uint64_t target_id, const std::string& target_label, const std::string& hint) {
  wait_until(
      "moving leadership from " + leader_label + " to " + target_label, std::chrono::seconds(60),
      [&] {
        auto now = client.status(leader_endpoint);
        if (now.leader() != now.header().member_id()) return;  // moved (an earlier attempt, or an election)
        client.move_leader(leader_endpoint, target_id);
        now = client.status(leader_endpoint);
        if (now.leader() == now.header().member_id()) {
          throw Error(ErrorKind::kUnavailable, "member " + leader_label + " still leads");
        }
      },
      [] { return true; }, hint);
}

}  // namespace etcdadm
