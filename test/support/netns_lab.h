// Hosts on a network of their own, for the tests that need real partitions: each host is a network
// namespace the test makes (`ip netns add`), joined to a bridge in the test's own namespace by a
// veth pair. Addresses sit on that link only: a /29 of 198.18.0.0/15 (the range set aside for
// benchmarking networks, RFC 2544) per lab, chosen from the test process's PID and checked against
// the addresses in use; the hosts' namespaces have no default route, so nothing leaves the machine.
// The test process reaches every host through the bridge's own address. A lab made with IPv6 also
// gives each host and the bridge an address of a /64 of fd00:e7cd::/32 (a unique local range,
// RFC 4193), the /64 numbered as the lab's /29, without duplicate address detection (nothing else
// is on the link).
//
// A partition is a blackhole route inside a host's namespace: cut(a, b) drops what a sends to b
// (one-way loss; TCP then breaks both ways, as etcd's robustness suite's blackholes do), and an
// isolation cuts a host from every other host in both directions. heal() removes every cut.
// Delays are not offered: this kernel has no netem (CONFIG_NET_SCH_NETEM is not set, `tc qdisc add
// ... netem` answers "Specified qdisc kind is unknown"; docs/testing.md).
//
// The destructor removes the namespaces and the bridge. A lab whose test process died without
// running it (kill -9) is removed by the next lab made on the machine: its names carry the PID.
#pragma once

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace etcdadm::test {

// A command a test's setup needs (ip, mount): throws with what it printed when it fails.
inline void run_or_throw(const std::vector<std::string>& argv) {
  auto r = run_process(argv);
  if (r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error(cmd + "failed: " + r.output);
  }
}

class NetnsLab {
 public:
  // Why this process cannot make a lab ("" when it can): it needs root and iproute2's `ip`.
  static std::string unavailable() {
    if (::geteuid() != 0) return "network namespaces need root";
    if (!find_executable("ip")) return "iproute2's ip is not installed";
    return "";
  }

  explicit NetnsLab(int hosts, bool ipv6 = false) : tag_(std::to_string(::getpid())), ipv6_(ipv6) {
    remove_abandoned_labs();
    choose_subnet();
    bridge_ = "etxb" + tag_;
    ip({"link", "add", bridge_, "type", "bridge"});
    ip({"addr", "add", bridge_address() + "/29", "dev", bridge_});
    if (ipv6_) ip({"addr", "add", bridge_address6() + "/64", "dev", bridge_, "nodad"});
    ip({"link", "set", bridge_, "up"});
    for (int i = 0; i < hosts; ++i) {
      const std::string ns = "etx" + tag_ + "-" + std::to_string(i);
      const std::string outer = "etxv" + tag_ + "h" + std::to_string(i);
      const std::string inner = inner_link(i);
      ip({"netns", "add", ns});
      namespaces_.push_back(ns);
      ip({"link", "add", outer, "type", "veth", "peer", "name", inner});
      ip({"link", "set", inner, "netns", ns});
      ip({"link", "set", outer, "master", bridge_, "up"});
      in(i, {"ip", "link", "set", "lo", "up"});
      in(i, {"ip", "addr", "add", address(i) + "/29", "dev", inner});
      if (ipv6_) in(i, {"ip", "addr", "add", address6(i) + "/64", "dev", inner, "nodad"});
      in(i, {"ip", "link", "set", inner, "up"});
    }
  }
  ~NetnsLab() {
    for (const auto& ns : namespaces_) run_process({"ip", "netns", "del", ns});
    if (!bridge_.empty()) run_process({"ip", "link", "del", bridge_});  // takes the veths' outer ends
  }
  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  int hosts() const { return static_cast<int>(namespaces_.size()); }
  const std::string& netns(int i) const { return namespaces_.at(i); }
  std::string address(int i) const { return dotted(base_ + 1 + static_cast<uint32_t>(i)); }
  // The test process's own address on the lab's link.
  std::string bridge_address() const { return dotted(base_ + 6); }
  // Host i's and the test process's IPv6 addresses (a lab made with ipv6 only).
  std::string address6(int i) const { return ipv6_prefix() + std::to_string(1 + i); }
  std::string bridge_address6() const { return ipv6_prefix() + "6"; }
  // A command run inside host i's namespace.
  std::vector<std::string> exec_in(int i, std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"ip", "netns", "exec", netns(i)});
    return argv;
  }

  // Host i's lab address becomes the one its programs see as "the machine's address": a route to
  // TEST-NET-1 (192.0.2.0/24, RFC 5737, never routed) on its lab link, no gateway, so a UDP
  // connect() there picks the lab address as its source, as on a machine with a default route
  // (etcdadm's default --bind-address is found so); nothing sent there reaches anything.
  void route_test_net_through_lab(int i) {
    in(i, {"ip", "route", "add", "192.0.2.0/24", "dev", inner_link(i)});
  }

  // What host `from` sends to host `to` is dropped.
  void cut(int from, int to) {
    if (cuts_.insert({from, to}).second) in(from, {"ip", "route", "add", "blackhole", address(to) + "/32"});
  }
  // Host i and every other host lose each other, both ways; the test process still reaches it
  // (clients on the minority's side of a partition).
  void isolate(int i) {
    for (int j = 0; j < hosts(); ++j) {
      if (j == i) continue;
      cut(i, j);
      cut(j, i);
    }
  }
  void heal() {
    for (const auto& [from, to] : cuts_) in(from, {"ip", "route", "del", "blackhole", address(to) + "/32"});
    cuts_.clear();
  }

 private:
  // Host i's end of its veth pair, inside its namespace.
  std::string inner_link(int i) const { return "etxi" + tag_ + "h" + std::to_string(i); }
  static std::string dotted(uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." + std::to_string((a >> 8) & 255) +
           "." + std::to_string(a & 255);
  }
  static void ip(std::vector<std::string> args) {
    args.insert(args.begin(), "ip");
    run_or_throw(args);
  }
  void in(int i, const std::vector<std::string>& argv) const { run_or_throw(exec_in(i, argv)); }
  std::string ipv6_prefix() const {
    const uint32_t block = (base_ - ((198u << 24) + (18u << 16))) / 8;
    char text[32];
    std::snprintf(text, sizeof(text), "fd00:e7cd:0:%x::", block);
    return text;
  }

  // 198.18.0.0/15 holds 16384 /29s: the PID picks one, the next free one is taken when an
  // address in it is in use (a concurrent test's lab).
  void choose_subnet() {
    const std::string in_use = run_process({"ip", "-o", "addr"}).output;
    for (uint32_t k = 0; k < 16384; ++k) {
      const uint32_t block = (static_cast<uint32_t>(::getpid()) + k) % 16384;
      base_ = (198u << 24) + (18u << 16) + block * 8;
      if (in_use.find(" " + dotted(base_ + 6) + "/") == std::string::npos) return;
    }
    throw std::runtime_error("netns lab: every /29 of 198.18.0.0/15 is in use");
  }

  // Namespaces and bridges named after a PID that no longer runs.
  static void remove_abandoned_labs() {
    auto dead = [](const std::string& pid) {
      return !pid.empty() && pid.find_first_not_of("0123456789") == std::string::npos &&
             ::kill(std::stoi(pid), 0) != 0 && errno == ESRCH;
    };
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ec)) {
      const std::string name = entry.path().filename();
      const auto dash = name.find('-');
      if (name.rfind("etx", 0) == 0 && dash != std::string::npos && dead(name.substr(3, dash - 3)))
        run_process({"ip", "netns", "del", name});
    }
    // "12: etxb4242: <BROADCAST,..." per line
    const std::string links = run_process({"ip", "-o", "link", "show", "type", "bridge"}).output;
    for (size_t at = links.find(": etxb"); at != std::string::npos; at = links.find(": etxb", at + 1)) {
      const size_t start = at + 6, end = links.find(':', start);
      if (end != std::string::npos && dead(links.substr(start, end - start)))
        run_process({"ip", "link", "del", "etxb" + links.substr(start, end - start)});
    }
  }

  std::string tag_;
  bool ipv6_ = false;
  std::string bridge_;
  uint32_t base_ = 0;
  std::vector<std::string> namespaces_;
  std::set<std::pair<int, int>> cuts_;
};

}  // namespace etcdadm::test
