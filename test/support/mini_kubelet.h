// The part of a kubelet that runs a static pod, as small as the tests need, for kubeadm's etcd:
// while the manifest file exists, the command of its container named etcd runs (started again a
// second after it exits: restartPolicy Always); when the file goes, the process gets SIGTERM (then
// SIGKILL after the grace); when its contents change, the old process is stopped and the new
// command started. The command is read by python3's yaml module, not by etcdadm's parser
// (etcdadm/static_pod.h), so that the two readings are independent. hostPath volumes need nothing:
// kubeadm mounts each at its own path, so the container's paths are the host's. No images, no
// probes, no pod log: its output goes to `log`. The container's env is passed (etcdadm's manifests
// give etcd its settings as ETCD_* variables).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "common/subprocess.h"

namespace etcdadm::test {

class MiniKubelet {
 public:
  // `bin_dir` goes first on the command's PATH (where `etcd` is found); `netns`: the network
  // namespace it runs in ("" for this one's).
  // `bin_dirs_by_version` (when given): the bin dir of the version the container's image tag names
  // ("registry.k8s.io/etcd:3.6.16-0" -> "3.6.16"), as a kubelet would run that image's etcd.
  MiniKubelet(std::string manifest, std::string bin_dir, std::string netns, std::string log,
              std::map<std::string, std::string> bin_dirs_by_version = {})
      : manifest_(std::move(manifest)),
        bin_dir_(std::move(bin_dir)),
        netns_(std::move(netns)),
        log_(std::move(log)),
        bin_dirs_by_version_(std::move(bin_dirs_by_version)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~MiniKubelet() {
    stop_ = true;
    thread_.join();
    stop_pod();
  }
  MiniKubelet(const MiniKubelet&) = delete;
  MiniKubelet& operator=(const MiniKubelet&) = delete;

  pid_t pid() {
    std::lock_guard<std::mutex> lock(mu_);
    return running_ && pod_.running() ? pod_.pid() : -1;
  }
  int starts() const { return starts_; }
  std::string last_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  static std::string contents_of(const std::string& path) {
    try {
      return path_exists(path) ? read_file(path) : "";
    } catch (const std::exception&) {
      return "";  // replaced under us: read at the next look
    }
  }

  // The etcd container's command then args, and its env (name -> value).
  nlohmann::json container_of(const std::string& path) {
    auto r = run_process({"python3", "-c",
                          "import json, sys, yaml\n"
                          "pod = yaml.safe_load(open(sys.argv[1]))\n"
                          "c = [c for c in pod['spec']['containers'] if c['name'] == 'etcd'][0]\n"
                          "print(json.dumps({'argv': c.get('command', []) + c.get('args', []), 'image': c.get('image', ''),\n"
                          "                  'env': {e['name']: e.get('value', '') for e in c.get('env') or []}}))\n",
                          path});
    if (r.exit_code != 0) throw std::runtime_error("the manifest's command: " + r.output);
    return nlohmann::json::parse(r.output);
  }

  void start_pod(const std::string& contents) {
    std::vector<std::string> argv;
    if (!netns_.empty()) argv = {"ip", "netns", "exec", netns_};
    const auto container = container_of(manifest_);
    for (const auto& a : container["argv"]) argv.push_back(a.get<std::string>());
    RunOptions ro;
    for (const auto& [name, value] : container["env"].items()) ro.env[name] = value.get<std::string>();
    std::string bin_dir = bin_dir_;
    if (!bin_dirs_by_version_.empty()) {
      std::string tag = container["image"].get<std::string>();
      tag = tag.substr(tag.rfind(':') + 1);
      if (!tag.empty() && tag[0] == 'v') tag.erase(0, 1);
      tag = tag.substr(0, tag.find('-'));
      const auto it = bin_dirs_by_version_.find(tag);
      if (it == bin_dirs_by_version_.end()) throw std::runtime_error("no etcd " + tag + " for the image " + container["image"].get<std::string>());
      bin_dir = it->second;
    }
    ro.env["PATH"] = bin_dir + ":" + (std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin");
    std::lock_guard<std::mutex> lock(mu_);
    pod_ = ChildProcess::start(argv, log_, ro);
    running_ = true;
    started_contents_ = contents;
    ++starts_;
  }

  void stop_pod() {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) pod_.stop(std::chrono::seconds(10));
    running_ = false;
  }

  void loop() {
    auto exited_at = std::chrono::steady_clock::time_point{};
    while (!stop_) {
      try {
        const std::string now = contents_of(manifest_);
        bool alive;
        {
          std::lock_guard<std::mutex> lock(mu_);
          alive = running_ && pod_.running();
          if (running_ && !alive && exited_at == std::chrono::steady_clock::time_point{})
            exited_at = std::chrono::steady_clock::now();
        }
        if (now.empty()) {
          stop_pod();
        } else if (running_ && alive && now != started_contents_) {
          stop_pod();
          start_pod(now);
        } else if (!running_ || (!alive && std::chrono::steady_clock::now() - exited_at >= std::chrono::seconds(1))) {
          if (running_) stop_pod();  // reaps it
          exited_at = {};
          start_pod(now);
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = e.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  const std::string manifest_, bin_dir_, netns_, log_;
  const std::map<std::string, std::string> bin_dirs_by_version_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  ChildProcess pod_;
  bool running_ = false;
  std::string started_contents_;
  std::atomic<int> starts_{0};
  std::string error_;
};

}  // namespace etcdadm::test
