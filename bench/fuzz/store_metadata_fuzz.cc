// libFuzzer target for everything etcdadm reads from a store's small files
// (bench/docs/fuzz.md): the store marker, our backup metadata, etcd-manager's metadata, the damage marker,
// backup names and store keys. A store is written by whoever can write the bucket or directory, so each of
// these is untrusted input. Every input goes through every parser; only etcdadm::Error may come
// out. Anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/fuzz/fuzz_target.h"
#include "store/blob_store.h"
#include "store/etcd_manager.h"
#include "store/layout.h"

using etcdadm::fuzz::refused_or_read;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  refused_or_read([&] { etcdadm::parse_store_settings(text, "fuzz/etcdadm-store.json"); });
  refused_or_read([&] {
    etcdadm::BackupMeta m = etcdadm::backup_meta_from_json(text, "fuzz/etcdadm-backup.json");
    // What is read must survive being written and read again (backup list -o json, catalog rows).
    etcdadm::backup_meta_from_json(etcdadm::backup_meta_to_json(m), "fuzz/rewritten");
    etcdadm::record_from_meta(m);
  });
  refused_or_read([&] { etcdadm::parse_etcd_manager_meta(text, "fuzz/_etcd_backup.meta"); });
  refused_or_read([&] {
    etcdadm::DamageRecord d = etcdadm::parse_damage_marker(text, "fuzz/etcdadm-damage.json");
    etcdadm::parse_damage_marker(etcdadm::damage_marker_json(d), "fuzz/rewritten");
  });
  refused_or_read([&] { etcdadm::parse_store_file_mode(text); });
  refused_or_read([&] { etcdadm::parse_backup_name(text); });
  // Store keys are built from names the listing and metadata supply.
  refused_or_read([&] { etcdadm::check_store_key(text); });
  return 0;
}
