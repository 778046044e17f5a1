// A client that writes while a cluster changes under it (upgrades, version turns) and measures
// the longest time without a successful write: the write gap a change costs its users.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/timefmt.h"
#include "etcd/client.h"

namespace etcdadm::test {

// Puts keys through every member's endpoint as fast as answers come, and measures the longest
// time between two successful writes (a write that hangs on a stopping member counts, until the
// client has failed over).
class Writer {
  using Clock = std::chrono::steady_clock;

 public:
  explicit Writer(ConnectionConfig c) : conn_(std::move(c)) {
    conn_.dial_timeout = std::chrono::milliseconds(500);
    conn_.command_timeout = std::chrono::seconds(1);
    thread_ = std::thread([this] { loop(); });
  }
  ~Writer() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  void pause(bool p) {
    std::unique_lock<std::mutex> lock(mu_);
    paused_ = p;
    if (p) {
      // Until the write under way has returned.
      while (writing_) {
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        lock.lock();
      }
    }
  }
  std::chrono::milliseconds longest_outage() const {
    std::lock_guard<std::mutex> lock(mu_);
    return longest_;
  }
  // The longest gap and the wall-clock time it ended, to find it in the logs of the run.
  std::string longest_outage_text() const {
    std::lock_guard<std::mutex> lock(mu_);
    return std::to_string(longest_.count()) + " ms" +
           (longest_ended_ ? ", ending at " + format_rfc3339_micros(*longest_ended_) : std::string());
  }
  int64_t writes() const { return writes_; }
  std::string last_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_error_;
  }

 private:
  void loop() {
    EtcdClient client(conn_);
    auto last_ok = Clock::now();
    int64_t n = 0;
    while (!stop_) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (paused_) {
          last_ok = Clock::now();  // a pause is no outage
        }
        writing_ = !paused_;
      }
      if (!writing_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      try {
        client.put("/registry/upgrade/key-" + std::to_string(n % 200), "value-" + std::to_string(n));
        ++n;
        ++writes_;
        auto now = Clock::now();
        std::lock_guard<std::mutex> lock(mu_);
        note_gap(std::chrono::duration_cast<std::chrono::milliseconds>(now - last_ok));
        last_ok = now;
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu_);
        last_error_ = e.what();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        note_gap(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_ok));
        writing_ = false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Under mu_.
  void note_gap(std::chrono::milliseconds gap) {
    if (gap <= longest_) return;
    longest_ = gap;
    longest_ended_ = std::chrono::system_clock::now();
  }

  ConnectionConfig conn_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  bool paused_ = false;
  bool writing_ = false;
  std::chrono::milliseconds longest_{0};
  std::optional<std::chrono::system_clock::time_point> longest_ended_;
  std::atomic<int64_t> writes_{0};
  std::string last_error_;
};

}  // namespace etcdadm::test
