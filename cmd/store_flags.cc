#include "cmd/store_flags.h"

#include "common/error.h"
#include "common/timefmt.h"
#include "store/encryption.h"

namespace etcdadm::cli {

void StoreFlags::add_key_flags(CLI::App* c, bool identities) {
  key_flags_ = true;
  identity_flags_ = identities;
  auto* g = c->add_option_group("Encryption keys (age)");
  g->add_option("--passphrase-file", passphrase_file_,
                "file (mode 0600) whose first line is the passphrase of a passphrase-encrypted store (env "
                "ETCDADM_AGE_PASSPHRASE holds the passphrase itself)");
  if (identities) {
    g->add_option(
        "--identity", identity_files_,
        "age identity file (mode 0600, as age-keygen writes it; repeatable, several keys per file) that opens "
        "encrypted backups (env ETCDADM_AGE_IDENTITY_FILE; ETCDADM_AGE_IDENTITY holds identity lines "
        "themselves)");
  }
}

const std::optional<std::string>& StoreFlags::passphrase() const {
  if (!passphrase_) {
    // Both read, so that the environment never keeps the secret for a child process.
    std::optional<std::string> from_env = take_secret_env("ETCDADM_AGE_PASSPHRASE");
    if (!passphrase_file_.empty())
      passphrase_ = load_passphrase_file(passphrase_file_);
    else
      passphrase_ = from_env;
  }
  return *passphrase_;
}

std::shared_ptr<const age::Identities> StoreFlags::keys() const {
  if (keys_resolved_) return keys_;
  keys_resolved_ = true;
  auto ids = std::make_shared<age::Identities>();
  if (identity_flags_) {
    std::vector<std::string> files = identity_files_;
    if (auto env_file = take_secret_env("ETCDADM_AGE_IDENTITY_FILE"); env_file && files.empty())
      files.push_back(*env_file);
    for (const auto& file : files) {
      for (auto& id : load_identity_file(file)) ids->x25519.push_back(id);
    }
    if (auto text = take_secret_env("ETCDADM_AGE_IDENTITY")) {
      for (auto& id : age::parse_identity_file(*text, "ETCDADM_AGE_IDENTITY")) ids->x25519.push_back(id);
    }
  }
  ids->passphrase = passphrase();
  if (!ids->x25519.empty() || ids->passphrase) keys_ = ids;
  return keys_;
}

std::chrono::seconds duration_flag(const std::string& flag, const std::string& value, bool allow_zero) {
  auto d = parse_duration(value);
  if (!d || d->count() < 0 || (!allow_zero && d->count() == 0)) {
    throw Error(ErrorKind::kInvalidArgument, "invalid " + flag + " " + value, "e.g. 30s, 15m, 2h");
  }
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

}  // namespace etcdadm::cli

namespace etcdadm::cli {

void PreChangeBackupFlags::add_to(CLI::App* c, const std::string& title) {
  auto* g = c->add_option_group(title);
  store.add_to(g, /*with_output=*/false);
  store.add_key_flags(c, /*identities=*/false);
  g->add_option("--max-backup-age", max_backup_age,
                "use the newest backup of this cluster in --store when it is younger than this (0: always take one)")
      ->capture_default_str();
  g->add_flag("--skip-backup", skip_backup, "go without a backup first");
}

PreChangeBackup PreChangeBackupFlags::resolve(const std::string& what) const {
  if (skip_backup) {
    if (!store.store.empty()) throw Error(ErrorKind::kInvalidArgument, "give --store or --skip-backup, not both");
    return {};
  }
  if (store.store.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "no --store for the backup taken before " + what,
                "give --store (with --max-backup-age to reuse a recent backup), or --skip-backup to go without one");
  }
  PreChangeBackupOptions b;
  b.max_age = duration_flag("--max-backup-age", max_backup_age, true);
  b.save.store.encryption.passphrase = store.passphrase();
  auto flags = std::make_shared<StoreFlags>(store);
  return [flags, b](EtcdClient& cluster) {
    auto s = flags->open();
    Catalog catalog = flags->open_catalog();
    return backup_before_change(cluster, *s, &catalog, b).name;
  };
}

}  // namespace etcdadm::cli
