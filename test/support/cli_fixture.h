// Fixture for end-to-end tests: a temp dir, a store and catalog inside it, one real etcd member,
// and helpers to run the etcdadm CLI and parse its JSON output.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <thread>

#include "test/support/etcd_versions.h"
#include "test/support/test_env.h"

namespace etcdadm::test {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = dir_ / "store"; }

  EtcdMember& start_member(EtcdOptions o = {}) {
    members_.push_back(std::make_unique<EtcdMember>(dir_.path(), std::move(o)));
    members_.back()->start();
    return *members_.back();
  }

  // A cluster of `size` members m1..mN on loopback, each started in a thread of its own (they
  // elect a leader only once a quorum is up); `base` holds what every member shares (TLS, flags).
  std::vector<EtcdMember*> start_cluster(int size, const EtcdOptions& base = {}) {
    std::vector<int> peer_ports;
    std::string cluster;
    for (int i = 0; i < size; ++i) {
      peer_ports.push_back(free_port());
      cluster += (i ? "," : "") + std::string("m") + std::to_string(i + 1) + "=http://127.0.0.1:" + std::to_string(peer_ports[i]);
    }
    std::vector<EtcdMember*> members;
    for (int i = 0; i < size; ++i) {
      EtcdOptions o = base;
      o.name = "m" + std::to_string(i + 1);
      o.peer_port = peer_ports[i];
      o.initial_cluster = cluster;
      members_.push_back(std::make_unique<EtcdMember>(dir_.path(), o));
      members.push_back(members_.back().get());
    }
    std::vector<std::thread> starters;
    for (auto* m : members) starters.emplace_back([m] { m->start(); });
    for (auto& t : starters) t.join();
    return members;
  }

  ProcessResult cli(std::vector<std::string> args, const RunOptions& extra = {}) {
    return run_etcdadm(args, dir_ / "catalog.db", extra);
  }

  // Runs the CLI, expects success, returns its stdout parsed as JSON (the command must get -o json).
  nlohmann::json cli_json(std::vector<std::string> args, const RunOptions& extra = {}) {
    auto r = cli(args, extra);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    // Logs go to stderr, which run_process interleaves: take the JSON document itself.
    auto start = r.output.find_first_of("[{");
    auto end = r.output.find_last_of("]}");
    if (start == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << "no JSON in output: " << r.output;
      return nullptr;
    }
    return nlohmann::json::parse(r.output.substr(start, end - start + 1));
  }

  nlohmann::json save(const EtcdMember& m, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--log-level", "warn", "backup", "save", "--store", store_, "--endpoints", m.client_url(), "-o", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return cli_json(args);
  }

  // Polls `backup list` (`list_args` name the store) until the newest backup's change log reaches
  // `revision`, for up to 30 s; returns how far it got.
  int64_t wait_for_change_log(std::vector<std::string> list_args, int64_t revision, const RunOptions& env = {}) {
    list_args.insert(list_args.begin(), {"backup", "list"});
    list_args.insert(list_args.end(), {"-o", "json"});
    int64_t reached = 0;
    for (int i = 0; i < 300 && reached < revision; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto listed = cli_json(list_args, env);
      if (!listed.empty() && listed[0]["changeLog"].is_object()) reached = listed[0]["changeLog"]["revision"];
    }
    return reached;
  }

  // `etcdctl snapshot save` of member `m` into `path` (the peer tool as an oracle).
  void etcdctl_snapshot(const EtcdMember& m, const std::string& path) {
    RunOptions api3 = etcdctl_options();
    auto r = run_process({"etcdctl", "--endpoints", m.client_url(), "snapshot", "save", path}, api3);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  TempDir dir_;
  std::string store_;
  std::vector<std::unique_ptr<EtcdMember>> members_;
};

}  // namespace etcdadm::test
