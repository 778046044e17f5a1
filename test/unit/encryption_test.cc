// Encrypted stores (store/encryption.h, the layout v2 parts of store/layout.h): the marker, the
// rules for what a writer may ask of an existing store, passphrase checks, the keys-before-fetch
// check, secret files, the completion rule of encrypted backups, and age header rewrapping.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/fs.h"
#include "store/age.h"
#include "store/catalog.h"
#include "store/encryption.h"
#include "store/layout.h"
#include "store/backend/local/local_store.h"
#include "test/support/error_of.h"
#include "test/support/test_env.h"

namespace etcdadm {

namespace {

using test::kind_of;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what() + std::string(" | ") + e.hint();
  }
  ADD_FAILURE() << "no error";
  return "";
}

EncryptionRequest to_recipients(std::vector<age::X25519Recipient> r) {
  EncryptionRequest q;
  q.x25519 = std::move(r);
  return q;
}

EncryptionRequest to_passphrase(const std::string& p) {
  EncryptionRequest q;
  q.passphrase = p;
  return q;
}

}  // namespace

TEST(StoreEncryption, AnEncryptedStoreIsLayoutTwoWithItsRecipientsInTheMarker) {
  test::TempDir dir;
  LocalStore store(dir.path());
  auto a = age::generate_identity(), b = age::generate_identity();
  StoreRequest req;
  req.encryption = to_recipients({a.recipient(), b.recipient(), a.recipient()});  // a duplicate is dropped
  StoreSettings s = ensure_store_settings(store, req);
  ASSERT_TRUE(s.encryption);
  EXPECT_EQ(s.layout_version, kEncryptedLayoutVersion);
  EXPECT_EQ(s.encryption->recipient_labels(), (std::vector<std::string>{a.recipient().str(), b.recipient().str()}));

  auto marker = nlohmann::json::parse(read_file(dir / kStoreMarkerFile));
  EXPECT_EQ(marker["layoutVersion"], 2);
  EXPECT_EQ(marker["encryption"]["format"], "age");
  EXPECT_EQ(marker["encryption"]["recipients"].size(), 2u);
  // Nothing secret in the marker: no identity, not even its Bech32 prefix.
  EXPECT_EQ(read_file(dir / kStoreMarkerFile).find("AGE-SECRET-KEY"), std::string::npos);

  // Read back: the same setting; a writer without encryption flags gets the store's recipients.
  auto again = read_store_settings(store);
  ASSERT_TRUE(again && again->encryption);
  EXPECT_EQ(again->encryption->recipient_labels(), s.encryption->recipient_labels());
  StoreSettings plain_request = ensure_store_settings(store, {});
  age::Recipients to = recipients_for_save(*plain_request.encryption, {}, store.url());
  EXPECT_EQ(to.x25519.size(), 2u);
  EXPECT_FALSE(to.passphrase);
}

TEST(StoreEncryption, ARequestThatContradictsTheStoreIsRefusedWithWhatToDo) {
  test::TempDir dir;
  LocalStore plain(dir / "plain");
  ensure_store_settings(plain, {});
  auto a = age::generate_identity(), b = age::generate_identity();
  StoreRequest encrypted;
  encrypted.encryption = to_recipients({a.recipient()});
  EXPECT_NE(message_of([&] { ensure_store_settings(plain, encrypted); }).find("created without encryption"), std::string::npos);

  LocalStore enc(dir / "enc");
  ensure_store_settings(enc, encrypted);
  StoreRequest other;
  other.encryption = to_recipients({b.recipient()});
  std::string m = message_of([&] { ensure_store_settings(enc, other); });
  EXPECT_NE(m.find(a.recipient().str()), std::string::npos) << m;
  EXPECT_NE(m.find("backup rekey"), std::string::npos) << m;
  StoreRequest pass;
  pass.encryption = to_passphrase("correct horse");
  EXPECT_EQ(kind_of([&] { ensure_store_settings(enc, pass); }), ErrorKind::kInvalidArgument);
  // Recipients and a passphrase together: age allows a passphrase only alone.
  StoreRequest both;
  both.encryption = to_recipients({a.recipient()});
  both.encryption.passphrase = "x";
  LocalStore fresh(dir / "fresh");
  EXPECT_EQ(kind_of([&] { ensure_store_settings(fresh, both); }), ErrorKind::kInvalidArgument);
  EXPECT_FALSE(read_store_settings(fresh));  // nothing written
}

TEST(StoreEncryption, APassphraseStoreChecksEveryWritersPassphraseBeforeAnyBackup) {
  test::TempDir dir;
  LocalStore store(dir.path());
  StoreRequest req;
  req.encryption = to_passphrase("correct horse battery staple");
  StoreSettings s = ensure_store_settings(store, req);
  ASSERT_TRUE(s.encryption && s.encryption->passphrase);
  EXPECT_EQ(s.encryption->recipient_labels(), std::vector<std::string>{"scrypt"});
  EXPECT_EQ(read_file(dir / kStoreMarkerFile).find("correct horse"), std::string::npos);

  auto right = recipients_for_save(*s.encryption, to_passphrase("correct horse battery staple"), store.url());
  EXPECT_EQ(right.passphrase, "correct horse battery staple");
  EXPECT_EQ(kind_of([&] { recipients_for_save(*s.encryption, to_passphrase("correct horse battery stapler"), store.url()); }),
            ErrorKind::kAuth);
  EXPECT_EQ(kind_of([&] { recipients_for_save(*s.encryption, {}, store.url()); }), ErrorKind::kInvalidArgument);
}

TEST(StoreEncryption, MalformedMarkersAreCorruptAndAnOldLayoutWithEncryptionIsRefused) {
  auto a = age::generate_identity();
  auto marker = [&](const nlohmann::json& enc, int layout) {
    return nlohmann::json{{"layoutVersion", layout}, {"compression", "gzip"}, {"encryption", enc}}.dump();
  };
  nlohmann::json good = {{"format", "age"}, {"recipients", {a.recipient().str()}}};
  EXPECT_TRUE(parse_store_settings(marker(good, 2), "m").encryption);
  // Layout 1 with "encryption" would let an older etcdadm write plain backups into it.
  EXPECT_EQ(kind_of([&] { parse_store_settings(marker(good, 1), "m"); }), ErrorKind::kCorrupt);
  for (const auto& bad : {nlohmann::json{{"format", "pgp"}, {"recipients", {a.recipient().str()}}},
                          nlohmann::json{{"format", "age"}, {"recipients", nlohmann::json::array()}},
                          nlohmann::json{{"format", "age"}, {"recipients", {"age1notakey"}}},
                          nlohmann::json{{"format", "age"}, {"recipients", {"scrypt"}}},  // no check
                          nlohmann::json{{"format", "age"}, {"recipients", {"scrypt", a.recipient().str()}}, {"passphraseCheck", "x"}},
                          nlohmann::json("age")}) {
    EXPECT_EQ(kind_of([&] { parse_store_settings(marker(bad, 2), "m"); }), ErrorKind::kCorrupt) << bad.dump();
  }
  EXPECT_EQ(parse_store_settings(marker(good, 3), "m").encryption->recipient_labels().size(), 1u);  // layout 3 may be encrypted
  EXPECT_EQ(kind_of([&] { parse_store_settings(marker(good, kNewestLayoutVersion + 1), "m"); }), ErrorKind::kInvalidArgument);
}

TEST(StoreEncryption, KeysAreCheckedAgainstTheRecipientsBeforeAnyFetch) {
  auto a = age::generate_identity(), b = age::generate_identity();
  std::vector<std::string> to_a = {a.recipient().str()};
  age::Identities with_a, with_b, with_pass;
  with_a.x25519 = {a};
  with_b.x25519 = {b};
  with_pass.passphrase = "p";
  EXPECT_NO_THROW(require_keys_for(to_a, &with_a, "backup x"));
  std::string m = message_of([&] { require_keys_for(to_a, &with_b, "backup x"); });
  EXPECT_NE(m.find(a.recipient().str()), std::string::npos) << m;  // who it is encrypted to
  EXPECT_NE(m.find(b.recipient().str()), std::string::npos) << m;  // what was given (public key only)
  EXPECT_EQ(m.find(b.str()), std::string::npos) << "a secret in a message: " << m;
  EXPECT_EQ(kind_of([&] { require_keys_for(to_a, nullptr, "backup x"); }), ErrorKind::kAuth);
  // A passphrase backup read with an X25519 identity, and the other way round.
  m = message_of([&] { require_keys_for({"scrypt"}, &with_a, "backup x"); });
  EXPECT_NE(m.find("passphrase"), std::string::npos) << m;
  EXPECT_EQ(kind_of([&] { require_keys_for(to_a, &with_pass, "backup x"); }), ErrorKind::kAuth);
  EXPECT_NO_THROW(require_keys_for({"scrypt"}, &with_pass, "backup x"));
}

TEST(SecretFiles, AFileOthersOrTheGroupCanReadIsRefusedNamingTheFix) {
  test::TempDir dir;
  auto id = age::generate_identity();
  std::string path = dir / "key.txt";
  write_file_atomic(path, "# created: now\n" + id.str() + "\n", 0600);
  ASSERT_EQ(load_identity_file(path).size(), 1u);
  for (mode_t mode : {0640, 0604, 0660, 0644}) {
    ::chmod(path.c_str(), mode);
    std::string m = message_of([&] { load_identity_file(path); });
    EXPECT_NE(m.find("chmod 600 " + path), std::string::npos) << m;
  }
  ::chmod(path.c_str(), 0400);
  EXPECT_EQ(load_identity_file(path).size(), 1u);

  std::string pass = dir / "pass";
  write_file_atomic(pass, "two words \r\nsecond line ignored\n", 0600);
  EXPECT_EQ(load_passphrase_file(pass), "two words ");  // only the line ending is dropped
  write_file_atomic(pass, "\nx\n", 0600);
  EXPECT_EQ(kind_of([&] { load_passphrase_file(pass); }), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind_of([&] { load_passphrase_file(dir / "missing"); }), ErrorKind::kNotFound);
  EXPECT_EQ(kind_of([&] { load_identity_file(dir.path()); }), ErrorKind::kInvalidArgument);  // a directory

  ::setenv("ETCDADM_TEST_SECRET", "s3cr3t", 1);
  EXPECT_EQ(take_secret_env("ETCDADM_TEST_SECRET"), "s3cr3t");
  EXPECT_EQ(std::getenv("ETCDADM_TEST_SECRET"), nullptr);  // gone: no child process inherits it
  EXPECT_FALSE(take_secret_env("ETCDADM_TEST_SECRET"));
}

TEST(EncryptedLayout, AnEncryptedBackupExistsOnceItsMetadataIsWrittenAndHasNoEtcdManagerFile) {
  test::TempDir dir;
  LocalStore store(dir.path());
  EXPECT_EQ(data_file_name(Compression::kGzip, true), "etcd.backup.gz.age");
  EXPECT_EQ(data_file_name(Compression::kZstd, false), "etcd.backup.zst");
  const std::string a = "2026-01-01T00:00:00Z-000001", b = "2026-01-01T00:00:00Z-000002",
                    c = "2026-01-01T00:00:00Z-000003";
  store.write_small(a + "/etcd.backup.gz.age", "x");  // encrypted, metadata not yet written
  store.write_small(b + "/etcd.backup.gz.age", "x");
  store.write_small(b + "/" + kBackupMetaFile, "{}");
  store.write_small(c + "/" + kBackupMetaFile, "{}");  // metadata without a data file: no backup
  auto listed = scan_backups(store);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].name, b);
  EXPECT_EQ(listed[0].completion_key, b + "/" + kBackupMetaFile);
  // A plain backup etcd-manager can restore ends with its file, which then completes it.
  store.write_small(c + "/etcd.backup.gz", "x");
  store.write_small(c + "/" + kEtcdManagerMetaFile, "{}");
  listed = scan_backups(store);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1].completion_key, c + "/" + kEtcdManagerMetaFile);
}

TEST(EncryptedLayout, MetadataRecordsRecipientsAndARekeyUnderWay) {
  BackupMeta m;
  m.name = "n";
  m.data_file = "etcd.backup.gz.age";
  m.encryption = "age";
  m.encrypted_to = {"age1a", "age1b"};
  m.stored_sha256 = "old";
  m.rekey = RekeyInProgress{"new", 42, {"age1c"}};
  BackupMeta back = backup_meta_from_json(backup_meta_to_json(m), "t");
  EXPECT_EQ(back.encrypted_to, m.encrypted_to);
  ASSERT_TRUE(back.rekey);
  EXPECT_EQ(back.rekey->stored_sha256, "new");
  EXPECT_EQ(back.rekey->stored_size, 42u);
  BackupRecord r = record_from_meta(back);
  EXPECT_TRUE(r.encrypted());
  EXPECT_TRUE(r.stored_sha256_matches("old"));
  EXPECT_TRUE(r.stored_sha256_matches("new"));
  EXPECT_FALSE(r.stored_sha256_matches("other"));
  EXPECT_EQ(r.recipients(), (std::vector<std::string>{"age1a", "age1b", "age1c"}));
  // An unknown encryption is refused with "upgrade", not read as plain.
  std::string future = backup_meta_to_json(m);
  future.replace(future.find("\"age\""), 5, "\"pq\"");
  EXPECT_EQ(kind_of([&] { backup_meta_from_json(future, "t"); }), ErrorKind::kInvalidArgument);
}

TEST(EncryptedLayout, TheCatalogKeepsEncryptionAndReReadsARekeyedBackup) {
  test::TempDir dir;
  LocalStore store(dir / "store");
  Catalog catalog(dir / "catalog.db");
  BackupMeta m;
  m.name = "2026-01-01T00:00:00Z-000001";
  m.created_at = "2026-01-01T00:00:00.000001Z";
  m.data_file = "etcd.backup.gz.age";
  m.encryption = "age";
  m.encrypted_to = {"age1old"};
  m.stored_size = 3;
  store.write_small(m.name + "/etcd.backup.gz.age", "abc");
  store.write_small(m.name + "/" + kBackupMetaFile, backup_meta_to_json(m));
  catalog.sync(store);
  auto listed = catalog.backups(store.url());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].encryption, "age");
  EXPECT_EQ(listed[0].encrypted_to, std::vector<std::string>{"age1old"});

  // Another host rekeys: same size, new recipients, a new data file. The next sync sees the new
  // modification time and reads the metadata again.
  m.encrypted_to = {"age1new"};
  store.write_small(m.name + "/" + kBackupMetaFile, backup_meta_to_json(m), true);
  std::string path = dir / ("store/" + m.name + "/etcd.backup.gz.age");
  struct timespec times[2] = {{0, UTIME_OMIT}, {1700000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  SyncStats stats = catalog.sync(store);
  EXPECT_EQ(stats.added, 1);
  EXPECT_EQ(catalog.backups(store.url())[0].encrypted_to, std::vector<std::string>{"age1new"});
  EXPECT_EQ(catalog.sync(store).unchanged, 1);
}

TEST(AgeRewrap, TheNewHeaderOpensTheUnchangedPayloadAndTheOldKeyNoLonger) {
  auto old_id = age::generate_identity(), new_id = age::generate_identity(), third = age::generate_identity();
  age::Recipients to_old;
  to_old.x25519 = {old_id.recipient()};
  std::string plain(200000, 'x');
  for (size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<char>(i * 7 + i / 300);
  std::string file = age::encrypt(to_old, plain);

  age::Identities with_old, with_new, with_third;
  with_old.x25519 = {old_id};
  with_new.x25519 = {new_id};
  with_third.x25519 = {third};
  age::Recipients to_new;
  to_new.x25519 = {new_id.recipient(), third.recipient()};
  size_t header = *age::header_size(file);
  age::RewrappedHeader h = age::rewrap_header(file.substr(0, header), with_old, to_new);
  EXPECT_EQ(h.old_header_size, header);
  std::string rekeyed = h.header + file.substr(header);
  EXPECT_EQ(rekeyed.substr(rekeyed.size() - (file.size() - header)), file.substr(header));  // payload byte for byte
  EXPECT_EQ(age::decrypt(with_new, rekeyed), plain);
  EXPECT_EQ(age::decrypt(with_third, rekeyed), plain);
  EXPECT_EQ(kind_of([&] { age::decrypt(with_old, rekeyed); }), ErrorKind::kAuth);
  // Only a key of the file can rewrap it; a partial header is asked for more.
  EXPECT_EQ(kind_of([&] { age::rewrap_header(file.substr(0, header), with_third, to_new); }), ErrorKind::kAuth);
  EXPECT_FALSE(age::header_size(file.substr(0, header - 1)));
  EXPECT_TRUE(age::looks_like_age(file.substr(0, 5)));
  EXPECT_FALSE(age::looks_like_age("SQLite format 3"));
  // To a passphrase: age's own decryptor rules (scrypt alone) hold.
  age::Recipients to_pass;
  to_pass.passphrase = "pw";
  to_pass.scrypt_work_factor = 10;
  std::string pass_file = age::rewrap_header(file.substr(0, header), with_old, to_pass).header + file.substr(header);
  age::Identities with_pass;
  with_pass.passphrase = "pw";
  EXPECT_EQ(age::decrypt(with_pass, pass_file), plain);
}

}  // namespace etcdadm

namespace etcdadm {

// A scratch dir may hold a decrypted snapshot: one that a SIGKILL left behind is removed by the
// next one made with the same prefix; a live one (its lock held) is not.
TEST(ScratchDir, AKilledProcesssDirIsRemovedByTheNextAndALiveOneIsKept) {
  test::TempDir tmp;
  const char* old = std::getenv("TMPDIR");
  std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto* d = new ScratchDir("etcdadm-scratch-test");  // never destroyed: the process is killed
    write_file_atomic(d->path() + "/snapshot.db", "plaintext", 0600);
    ssize_t ignored = ::write(fds[1], d->path().c_str(), d->path().size());
    (void)ignored;
    ::raise(SIGKILL);
  }
  ::close(fds[1]);
  char buf[512] = {};
  ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_GT(n, 0);
  std::string killed(buf, static_cast<size_t>(n));
  ASSERT_TRUE(path_exists(killed + "/snapshot.db"));
  {
    ScratchDir live("etcdadm-scratch-test");
    EXPECT_FALSE(path_exists(killed)) << "left by a killed process";
    ScratchDir second("etcdadm-scratch-test");
    EXPECT_TRUE(path_exists(live.path())) << "a live scratch dir was removed";
    struct stat st {};
    ASSERT_EQ(::stat(second.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  if (old != nullptr) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
}


// Processes (here threads: flock locks belong to open files, not to processes) making scratch dirs
// of one prefix at once never take each other's for abandoned: a clean-up used to find a lock file
// between its maker's open and flock, lock it, and remove the dir its maker went on to use
// (SnapshotInspect failed so in a clean-clone run: "cannot create the inspection's scratch file").
TEST(ScratchDir, DirsMadeAtOnceNeverRemoveEachOther) {
  test::TempDir tmp;
  std::atomic<int> lost{0};
  std::vector<std::thread> makers;
  for (int t = 0; t < 4; ++t) {
    makers.emplace_back([&] {
      for (int i = 0; i < 400; ++i) {
        try {
          ScratchDir d("etcdadm-race-test", tmp.path());
          write_file_atomic(d.path() + "/part-0", "x", 0600);
          if (!path_exists(d.path() + "/.lock")) ++lost;
        } catch (const Error&) {
          ++lost;  // its lock taken by a clean-up, or its dir removed
        }
      }
    });
  }
  for (auto& m : makers) m.join();
  EXPECT_EQ(lost.load(), 0) << "scratch dirs removed while their makers used them";
}

}  // namespace etcdadm
