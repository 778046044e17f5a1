// The robustness harness's workload: clients that write, read and run compare-and-set
// transactions against a cluster through whatever faults a test injects, every request and its
// answer recorded with the times it was sent and answered. The history goes to lincheck
// (test/go-tools/lincheck, porcupine), which says whether one order of the requests explains every
// answer: the cluster stayed linearizable through the faults and everything the controllers did.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/subprocess.h"
#include "etcd/client.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {

class KvWorkload {
 public:
  struct Options {
    ConnectionConfig connection;  // TLS material; its endpoints are the members the clients use
    int clients = 4;
    int keys = 6;  // few keys, so that requests meet on them
    uint64_t seed = 1;
    std::chrono::milliseconds request_timeout{2000};
    std::string key_prefix = "/robustness/";
    // Between two requests of a client: the history stays small enough to check in seconds, and
    // the clients leave the members and controllers CPU on a 2-core machine.
    std::chrono::milliseconds pause{20};
  };

  explicit KvWorkload(Options options) : options_(std::move(options)), start_(Clock::now()) {
    for (int i = 0; i < options_.clients; ++i) threads_.emplace_back([this, i] { client_loop(i); });
  }
  ~KvWorkload() { stop(); }
  KvWorkload(const KvWorkload&) = delete;
  KvWorkload& operator=(const KvWorkload&) = delete;

  // The clients stopped, then every key read once through every member, into the history: an
  // acknowledged write that a member lost (or never got after a fault) makes the history not
  // linearizable, even when no client happened to read the key again.
  void stop() {
    if (stop_.exchange(true)) return;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
    final_reads();
  }
  // Requests answered with success (writes: put, delete, a cas that applied).
  int64_t acknowledged_writes() const { return acknowledged_writes_; }
  int64_t requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(history_.size());
  }
  int64_t unknown() const { return unknown_; }

  // The history as lincheck reads it: one JSON object per line.
  std::string history_jsonl() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& h : history_) out += h.dump() + "\n";
    return out;
  }

  // lincheck's verdict on the history (its first line), the history kept in `dir` (and, when
  // it is not linearizable, porcupine's visualization beside it).
  std::string verdict(const std::string& dir) const {
    write_file_atomic(dir + "/history.jsonl", history_jsonl());
    auto r = run_process(
        {go_test_tool("lincheck"), "-timeout", "60s", "-html", dir + "/history.html", dir + "/history.jsonl"});
    return r.output.substr(0, r.output.find('\n'));
  }

 private:
  using Clock = std::chrono::steady_clock;

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  }

  // A linearizable read of `key`, its answer into `op` as lincheck reads it (throws when unanswered).
  static void get(EtcdClient& client, const std::string& key, nlohmann::json& op) {
    op["op"] = "get";
    etcdserverpb::RangeRequest req;
    req.set_key(key);
    auto resp = client.range(req);
    op["outcome"] = "ok";
    op["found"] = resp.kvs_size() > 0;
    op["value"] = resp.kvs_size() > 0 ? resp.kvs(0).value() : "";
  }

  void record(nlohmann::json op) {
    std::lock_guard<std::mutex> lock(mu_);
    history_.push_back(std::move(op));
  }

  // One client: a member at a time (its own client: a request is sent once, never failed over by
  // the client library, so that an error means "may or may not have happened" and nothing more),
  // the next member after an error.
  void client_loop(int id) {
    std::mt19937_64 rng(options_.seed * 1000003 + static_cast<uint64_t>(id));
    const auto& endpoints = options_.connection.endpoints;
    size_t member = static_cast<size_t>(id) % endpoints.size();
    std::vector<std::unique_ptr<EtcdClient>> clients;
    for (const auto& ep : endpoints) {
      ConnectionConfig c = options_.connection;
      c.endpoints = {ep};
      c.dial_timeout = std::chrono::milliseconds(500);
      c.command_timeout = options_.request_timeout;
      clients.push_back(std::make_unique<EtcdClient>(c));
    }
    std::vector<std::string> last_seen(static_cast<size_t>(options_.keys));
    std::vector<bool> seen_present(static_cast<size_t>(options_.keys), false);
    int64_t sequence = 0;
    while (!stop_) {
      const int k = static_cast<int>(rng() % static_cast<uint64_t>(options_.keys));
      const std::string key = options_.key_prefix + "k" + std::to_string(k);
      const int dice = static_cast<int>(rng() % 10);
      const std::string value = "c" + std::to_string(id) + "-" + std::to_string(++sequence);
      nlohmann::json op = {{"client", id}, {"key", key}};
      EtcdClient& client = *clients[member];
      op["call"] = now_ns();
      try {
        if (dice < 4) {
          op["op"] = "put";
          op["value"] = value;
          client.put(key, value);
          op["outcome"] = "ok";
          ++acknowledged_writes_;
        } else if (dice < 8) {
          get(client, key, op);
          seen_present[static_cast<size_t>(k)] = op["found"];
          last_seen[static_cast<size_t>(k)] = op["value"];
        } else {
          // Compare-and-set on what this client last read of the key (absent when it read nothing).
          op["op"] = "cas";
          op["value"] = value;
          etcdserverpb::TxnRequest txn;
          auto* cmp = txn.add_compare();
          cmp->set_key(key);
          if (seen_present[static_cast<size_t>(k)]) {
            cmp->set_target(etcdserverpb::Compare::VALUE);
            cmp->set_result(etcdserverpb::Compare::EQUAL);
            cmp->set_value(last_seen[static_cast<size_t>(k)]);
            op["expect"] = last_seen[static_cast<size_t>(k)];
          } else {
            cmp->set_target(etcdserverpb::Compare::CREATE);
            cmp->set_result(etcdserverpb::Compare::EQUAL);
            cmp->set_create_revision(0);
            op["expectAbsent"] = true;
          }
          auto* put = txn.add_success()->mutable_request_put();
          put->set_key(key);
          put->set_value(value);
          auto resp = client.txn(txn);
          op["outcome"] = resp.succeeded() ? "ok" : "failed";
          if (resp.succeeded()) ++acknowledged_writes_;
        }
        op["return"] = now_ns();
      } catch (const std::exception&) {
        // Sent, and no answer: it may have taken effect at any time from now on, or never.
        op["outcome"] = "unknown";
        op["return"] = now_ns();
        ++unknown_;
        member = (member + 1) % endpoints.size();
      }
      record(std::move(op));
      std::this_thread::sleep_for(options_.pause);
    }
  }

  void final_reads() {
    const auto& endpoints = options_.connection.endpoints;
    for (size_t m = 0; m < endpoints.size(); ++m) {
      ConnectionConfig c = options_.connection;
      c.endpoints = {endpoints[m]};
      c.command_timeout = options_.request_timeout;
      EtcdClient client(c);
      for (int k = 0; k < options_.keys; ++k) {
        const std::string key = options_.key_prefix + "k" + std::to_string(k);
        nlohmann::json op = {{"client", options_.clients + static_cast<int>(m)}, {"key", key}, {"op", "get"}};
        op["call"] = now_ns();
        try {
          get(client, key, op);
        } catch (const std::exception&) {
          op["outcome"] = "unknown";
        }
        op["return"] = now_ns();
        record(std::move(op));
      }
    }
  }

  Options options_;
  const Clock::time_point start_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> acknowledged_writes_{0};
  std::atomic<int64_t> unknown_{0};
  mutable std::mutex mu_;
  std::vector<nlohmann::json> history_;
};

}  // namespace etcdadm::test
