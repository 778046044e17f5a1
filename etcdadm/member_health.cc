#include "etcdadm/member_health.h"

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
    std::this_thread::sleep_for(500ms);
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

}  // namespace etcdadm
