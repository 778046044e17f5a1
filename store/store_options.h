// What a command line says about a backup store's backend, as plain settings: what every object
// store takes the same way (ObjectStoreSettings: the TLS trust, the part size and how many parts
// upload at once), and what only one backend has. Whatever is left empty comes from the
// environment when the backend opens (resolve_s3_config and its siblings). Kept apart from the
// backends so that a command naming a store compiles none of them.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace etcdadm {

struct ObjectStoreSettings {
  std::string ca_bundle;  // --ca-bundle: PEM bundle for the store endpoint ("" = the system's; S3: AWS_CA_BUNDLE)
  bool insecure_skip_verify = false;  // --store-insecure-skip-tls-verify (test setups only)
  // --upload-part-size: S3's first part, GCS's chunk, Azure's block, Swift's first segment.
  size_t part_size = size_t{8} << 20;
  int concurrency = 4;  // --upload-concurrency: parts uploading at once (GCS chunks go in order)
  // A request that moves no byte for this long fails (and is retried as its backend retries): a
  // stalled server or a dead connection. `etcdadm auto`'s controller sets it shorter, so that a
  // hung request cannot hold back its host's own duties for a minute.
  std::chrono::milliseconds idle_timeout{60000};
};

struct S3Settings {
  std::string endpoint;
  std::string region;
  std::string addressing;  // "", "path" or "virtual"
  bool unsigned_payload = false;
  std::string sse;
  std::string sse_kms_key_id;
  // --object-lock-days / --object-lock-mode (S3Config::object_lock_*): "compliance" (default) or
  // "governance", in any case.
  int object_lock_days = 0;
  std::string object_lock_mode;
};

struct GcsSettings {
  std::string endpoint;  // "" = STORAGE_EMULATOR_HOST, else https://storage.googleapis.com
};

struct AzureSettings {
  std::string endpoint;
  std::string account;
};

struct StoreOptions {
  ObjectStoreSettings object;
  S3Settings s3;
  GcsSettings gcs;
  AzureSettings azure;
};

}  // namespace etcdadm
