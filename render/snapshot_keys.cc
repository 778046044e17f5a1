#include "render/snapshot_keys.h"

#include <iomanip>
#include <sstream>

#include "common/key_text.h"
#include "common/text.h"
#include "render/json.h"

namespace etcdadm::render {

nlohmann::json snapshot_keys_json(const nlohmann::json& source, int64_t revision,
                                  const std::vector<SnapshotKeyValue>& kvs, bool keys_only) {
  nlohmann::json j = source;
  j["revision"] = revision;
  j["count"] = kvs.size();
  j["kvs"] = nlohmann::json::array();
  for (const auto& kv : kvs) {
    nlohmann::json e = {{"createRevision", kv.create_revision},
                        {"modRevision", kv.mod_revision},
                        {"version", kv.version},
                        {"lease", kv.lease}};
    put_bytes_json(e, "key", kv.key);
    if (!keys_only) put_bytes_json(e, "value", kv.value);
    j["kvs"].push_back(std::move(e));
  }
  return j;
}

std::string snapshot_keys_text(const std::vector<SnapshotKeyValue>& kvs, int64_t revision, bool keys_only) {
  std::ostringstream o;
  o << std::left << std::setw(40) << "KEY" << std::right << std::setw(10) << "CREATE" << std::setw(10) << "MOD"
    << std::setw(9) << "VERSION" << std::setw(18) << "LEASE" << (keys_only ? "" : "  VALUE") << "\n";
  for (const auto& kv : kvs) {
    o << std::left << std::setw(40) << printable_bytes(kv.key, 60) << std::right << std::setw(10) << kv.create_revision
      << std::setw(10) << kv.mod_revision << std::setw(9) << kv.version << std::setw(18)
      << (kv.lease ? id_hex(static_cast<uint64_t>(kv.lease)) : "-");
    if (!keys_only) o << "  " << printable_bytes(kv.value, 60);
    o << "\n";
  }
  o << kvs.size() << " key(s) at revision " << revision << "\n";
  return o.str();
}

std::string snapshot_keys_raw(const std::vector<SnapshotKeyValue>& kvs, bool keys_only, bool prefix) {
  std::string out;
  for (const auto& kv : kvs) {
    if (keys_only)
      out += kv.key + "\n";
    else if (!prefix)
      out += kv.value;
    else
      out += kv.key + "\n" + kv.value + "\n";
  }
  return out;
}

}  // namespace etcdadm::render
