// etcd-manager's side of a shared store, written from the facts docs/store-format.md records about
// its format (§4.3, §10) rather than from etcdadm's own code (store/etcd_manager.h), so that the
// tests compare two readings of the documentation: which backups etcd-manager lists and could
// restore, and the control files as its protojson writer writes them (a second space after each
// colon: its releases insert one at random, fixed per binary; readers must take either form).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "common/fs.h"
#include "common/subprocess.h"

namespace etcdadm::test {

// The backups etcd-manager lists: every directory at the store's root holding `_etcd_backup.meta`.
inline std::set<std::string> listed_by_etcd_manager(const std::string& store_path) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(store_path)) {
    if (e.is_directory() && std::filesystem::exists(e.path() / "_etcd_backup.meta")) out.insert(e.path().filename().string());
  }
  return out;
}

// The etcd-manager rule (§4.3): its data file is `etcd.backup.gz`, the gunzipped snapshot ends in
// the SHA-256 of the rest (etcdctl's trailer), and the meta's etcd version is 3.0 to 3.6.
inline bool etcd_manager_could_restore(const std::string& store_path, const std::string& name) {
  const std::string dir = store_path + "/" + name;
  if (!std::filesystem::exists(dir + "/etcd.backup.gz") || !std::filesystem::exists(dir + "/_etcd_backup.meta")) return false;
  auto meta = nlohmann::json::parse(read_file(dir + "/_etcd_backup.meta"));
  std::string version = meta.value("etcdVersion", "");
  if (version.empty() && meta.contains("clusterSpec")) version = meta["clusterSpec"].value("etcdVersion", "");
  static const std::regex family(R"(^v?3\.[0-6]\.\d+)");
  if (!std::regex_search(version, family)) return false;
  auto hashes = run_process({"sh", "-c", "f=$(mktemp) && gzip -dc '" + dir + "/etcd.backup.gz' >\"$f\" && "
                                         "head -c -32 \"$f\" | sha256sum | cut -c1-64 && "
                                         "tail -c 32 \"$f\" | od -An -tx1 | tr -d ' \\n'; rm -f \"$f\""});
  const auto newline = hashes.output.find('\n');
  return hashes.exit_code == 0 && newline == 64 && hashes.output.substr(0, 64) == hashes.output.substr(65);
}

// `control/etcd-cluster-spec` as etcd-manager's protojson writer writes it.
inline std::string etcd_manager_spec_as_protojson(int member_count, const std::string& etcd_version) {
  return "{\n  \"memberCount\":  " + std::to_string(member_count) + ",\n  \"etcdVersion\":  \"" + etcd_version + "\"\n}";
}

inline void write_spec_as_etcd_manager(const std::string& store_path, int member_count, const std::string& etcd_version) {
  std::filesystem::create_directories(store_path + "/control");
  write_file_atomic(store_path + "/control/etcd-cluster-spec", etcd_manager_spec_as_protojson(member_count, etcd_version), 0600);
}

// A restore command queued as etcd-manager-ctl queues it at `at`: `control/<RFC 3339 seconds,
// UTC>-000000/_command.json` holding the Command message, its timestamp in unix nanoseconds. Returns
// the directory's name.
inline std::string queue_restore_as_etcd_manager(const std::string& store_path, const std::string& backup, int member_count,
                                                 const std::string& etcd_version,
                                                 std::chrono::system_clock::time_point at = std::chrono::system_clock::now()) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(at);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const std::string dir = std::string(stamp) + "-000000";
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  const std::string json = "{\n  \"timestamp\":  \"" + std::to_string(nanos) +
                           "\",\n  \"restoreBackup\":  {\n    \"clusterSpec\":  {\n      \"memberCount\":  " +
                           std::to_string(member_count) + ",\n      \"etcdVersion\":  \"" + etcd_version +
                           "\"\n    },\n    \"backup\":  \"" + backup + "\"\n  }\n}";
  std::filesystem::create_directories(store_path + "/control/" + dir);
  write_file_atomic(store_path + "/control/" + dir + "/_command.json", json, 0600);
  return dir;
}

}  // namespace etcdadm::test
