// Flags shared by several commands: the backup store (URL, catalog, object-store options) and
// duration values.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backup/pre_change.h"
#include "cmd/output.h"
#include "common/error.h"
#include "etcdadm/upgrade/upgrade.h"
#include "store/age.h"
#include "store/backup_store.h"
#include "store/blob_store.h"
#include "store/catalog.h"
#include "store/codec.h"
#include "store/encryption.h"
#include "store/layout.h"
#include "store/store_url.h"

namespace etcdadm::cli {

// Flags every store-reading command shares.
struct StoreFlags {
  std::string store;
  std::string catalog;
  std::string output = "table";
  StoreOptions options;
  int part_size_mib = 8;
  void add_to(CLI::App* c, bool with_output = true) {
    c->add_option(
         "--store", store,
         "backup store: path, file:///path, s3://bucket/prefix, gs://bucket/prefix, azureblob://container/prefix, "
         "swift://container/prefix")
        ->envname("ETCDADM_STORE");
    c->add_option("--catalog", catalog,
                  "SQLite catalog file (env ETCDADM_CATALOG; default: " + Catalog::default_path() +
                      ", shared by every etcdadm on this host)");
    if (with_output) add_output_format_option(c, output);
    auto* g = c->add_option_group("Object store options (S3, GCS, Azure Blob, Swift)");
    g->add_option("--s3-endpoint", options.s3.endpoint,
                  "S3-compatible endpoint URL (default: S3_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS)");
    g->add_option("--s3-region", options.s3.region,
                  "bucket region (default: S3_REGION, AWS_REGION, AWS_DEFAULT_REGION, profile, us-east-1)");
    g->add_option("--s3-addressing", options.s3.addressing,
                  "path|virtual (default: path with a custom endpoint, virtual on AWS)")
        ->check(CLI::IsMember({"path", "virtual"}));
    g->add_option("--s3-sse", options.s3.sse, "server-side encryption: AES256 or aws:kms")
        ->check(CLI::IsMember({"AES256", "aws:kms"}));
    g->add_option("--s3-sse-kms-key-id", options.s3.sse_kms_key_id, "KMS key for --s3-sse aws:kms");
    g->add_option("--object-lock-days", options.s3.object_lock_days,
                  "S3: write every object with Object Lock retention for this many days (the bucket must have Object "
                  "Lock enabled; prune keeps locked backups and says until when; docs/object-stores.md)");
    g->add_option("--object-lock-mode", options.s3.object_lock_mode,
                  "with --object-lock-days: compliance (default: no one can shorten or remove it, not even the "
                  "account root) or governance (principals with s3:BypassGovernanceRetention can)")
        ->check(CLI::IsMember({"compliance", "governance", "COMPLIANCE", "GOVERNANCE"}));
    g->add_flag(
        "--s3-unsigned-payload", options.s3.unsigned_payload,
        "do not hash request bodies for the signature (saves CPU; integrity rests on TLS and etcdadm's own SHA-256)");
    g->add_option("--gcs-endpoint", options.gcs.endpoint,
                  "GCS JSON API endpoint (default: STORAGE_EMULATOR_HOST, else https://storage.googleapis.com)");
    g->add_option(
        "--azure-account", options.azure.account,
        "Azure storage account (default: AZURE_STORAGE_ACCOUNT, as kops sets it, or the connection string's)");
    g->add_option("--azure-endpoint", options.azure.endpoint,
                  "Azure Blob endpoint URL (default: AZURE_STORAGE_CONNECTION_STRING's BlobEndpoint, else "
                  "https://ACCOUNT.blob.core.windows.net)");
    g->add_option("--ca-bundle", options.object.ca_bundle,
                  "PEM CA bundle for the store endpoint (default for S3: AWS_CA_BUNDLE; else system)");
    g->add_flag("--store-insecure-skip-tls-verify", options.object.insecure_skip_verify,
                "do not verify the store endpoint's certificate (test setups only; --insecure-skip-tls-verify is "
                "etcd's, as in etcdctl)");
    g->add_option("--upload-concurrency", options.object.concurrency, "parts uploaded in parallel")
        ->default_val(4)
        ->check(CLI::Range(1, 64));
    g->add_option(
         "--upload-part-size", part_size_mib,
         "S3 first part size / GCS chunk size / Azure block / Swift segment size in MiB (S3 parts grow after 1000 "
         "parts, Swift segments after 100)")
        ->default_val(8)
        ->check(CLI::Range(5, 5120));
  }
  // Keys for encrypted stores: --passphrase-file (writes a passphrase store and reads it) and, with
  // `identities`, --identity (reads). Environment: ETCDADM_AGE_PASSPHRASE, ETCDADM_AGE_IDENTITY
  // (identity lines), ETCDADM_AGE_IDENTITY_FILE; each is removed from the environment once read.
  void add_key_flags(CLI::App* c, bool identities);
  // The passphrase from --passphrase-file or ETCDADM_AGE_PASSPHRASE (read once).
  const std::optional<std::string>& passphrase() const;
  // Everything given to open encrypted backups; nullptr when nothing was.
  std::shared_ptr<const age::Identities> keys() const;
  // The store, its handle holding keys() when the command takes them.
  // `idle_timeout`: ObjectStoreSettings::idle_timeout, when not the default.
  BackupStore open(std::optional<std::chrono::milliseconds> idle_timeout = std::nullopt) const {
    StoreOptions o = options;
    o.object.part_size = static_cast<size_t>(part_size_mib) << 20;
    if (idle_timeout) o.object.idle_timeout = *idle_timeout;
    return BackupStore(std::shared_ptr<BlobStore>(open_store(store, o)), key_flags_ ? keys() : nullptr);
  }
  // --object-lock-days writes through S3's Object Lock only: refused (kInvalidArgument) for a
  // written store `url` of another kind, rather than silently writing unlocked backups.
  void require_lockable(const std::string& url) const {
    if (options.s3.object_lock_days > 0 && parse_store_url(url).scheme != StoreUrl::Scheme::kS3) {
      throw Error(ErrorKind::kInvalidArgument, "--object-lock-days locks S3 objects; " + url + " is not an S3 store",
                  "on GCS, give the bucket a retention policy instead (docs/object-stores.md); prune reads it");
    }
  }
  Catalog open_catalog() const { return Catalog::open_or_memory(catalog.empty() ? Catalog::default_path() : catalog); }

 private:
  bool key_flags_ = false, identity_flags_ = false;
  std::vector<std::string> identity_files_;
  std::string passphrase_file_;
  mutable std::optional<std::optional<std::string>> passphrase_;  // resolved once
  mutable std::shared_ptr<const age::Identities> keys_;
  mutable bool keys_resolved_ = false;
};

// Parses a duration flag ("30s", "15m", "2h", "7d"); throws kInvalidArgument naming the flag.
std::chrono::seconds duration_flag(const std::string& flag, const std::string& value, bool allow_zero);

// ---- the backup before a change (upgrade apply, defrag) ----

// --store (with its keys), --max-backup-age, --skip-backup: the backup a change of a running
// cluster starts from; one of --store and --skip-backup is required.
struct PreChangeBackupFlags {
  StoreFlags store;
  std::string max_backup_age = "0s";
  bool skip_backup = false;
  // The flags, in a group named `title`; --output stays with the command.
  void add_to(CLI::App* c, const std::string& title);
  // The backup to take (empty with --skip-backup). `what` names the change in messages.
  PreChangeBackup resolve(const std::string& what) const;
};

// ---- the flags of commands that write backups ----

inline constexpr const char* kKeepVersionsHelp =
    "on a versioned bucket, leave the noncurrent versions of what is deleted to the bucket's lifecycle rule "
    "(default: delete every version, as etcd-manager does; docs/object-stores.md)";

inline std::optional<Compression> compression_flag(const std::string& s) {
  if (s.empty()) return std::nullopt;
  auto c = parse_compression(s);
  if (!c) throw Error(ErrorKind::kInvalidArgument, "unknown compression '" + s + "'", "use gzip, zstd or none");
  return c;
}

// Age recipients given on the command line (public keys: no mode check on their files).
struct RecipientFlags {
  std::vector<std::string> encrypt_to, encrypt_to_files;
  // `env`: also read ETCDADM_AGE_RECIPIENTS (comma-separated), for commands run from units.
  void add_to(CLI::App* c, const std::string& what, bool env) {
    auto* o = c->add_option("--encrypt-to", encrypt_to,
                            "age recipient (age1..., repeatable): " + what +
                                (env ? " (env ETCDADM_AGE_RECIPIENTS, comma-separated)" : ""))
                  ->delimiter(',');
    if (env) o->envname("ETCDADM_AGE_RECIPIENTS");
    c->add_option("--encrypt-to-file", encrypt_to_files,
                  "file of age recipients, one per line as `age -R` reads it (repeatable)");
  }
  bool given() const { return !encrypt_to.empty() || !encrypt_to_files.empty(); }
  std::vector<age::X25519Recipient> recipients() const {
    std::vector<age::X25519Recipient> out;
    for (const auto& text : encrypt_to) out.push_back(age::parse_recipient(text));
    for (const auto& file : encrypt_to_files) {
      for (const auto& recipient : load_recipients_file(file)) out.push_back(recipient);
    }
    return out;
  }
};

// Flags of the commands that write backups and may create the store.
struct StoreCreationFlags {
  std::string compression, mode;
  RecipientFlags recipients;
  int level = -1;
  void add_to(CLI::App* c) {
    recipients.add_to(c,
                      "the store's public keys: a new store is encrypted to them, an existing one must have exactly "
                      "them, and this host writes for them from now on (--passphrase-file instead: to a passphrase)",
                      /*env=*/true);
    c->add_option("--compression", compression, "gzip|zstd|none (only when creating a store; default gzip)");
    c->add_option("--compression-level", level, "codec level (gzip 0-3 via ISA-L, default 1; zstd 1-19, default 1)");
    c->add_option("--store-mode", mode,
                  "local store file mode, recorded in the store (default 0600, directories 0700; 0640 lets a backup "
                  "group read)");
  }
  // `passphrase`: StoreFlags::passphrase() (creates a passphrase store, or writes into one).
  StoreRequest request(const std::optional<std::string>& passphrase) const {
    StoreRequest r{
        compression_flag(compression), mode.empty() ? std::nullopt : std::optional(parse_store_file_mode(mode)), {}};
    r.encryption.x25519 = recipients.recipients();
    r.encryption.passphrase = passphrase;
    return r;
  }
};

}  // namespace etcdadm::cli
