// Encrypted stores end to end, on the etcd under test: Debian's `age` and `age-keygen` make the
// keys and read what we write (and we read what `age -r` wrote); a restore from an encrypted
// backup starts etcd with the source's HashKV; wrong or missing keys, world-readable key files and
// damage at every place of an age file are refused with nothing written; `backup rekey` retires an
// old identity and survives kill -9 at each of its steps.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "store/age.h"
#include "store/layout.h"
#include "test/support/cli_fixture.h"
#include "test/support/etcd_versions.h"

namespace etcdadm::test {

namespace {

constexpr size_t kChunk = 64 * 1024 + 16;  // an age payload chunk with its tag

ProcessResult sh(const std::string& script) { return run_process({"/bin/sh", "-c", script}); }

std::string file_sha256(const std::string& path) {
  Sha256 h;
  read_file_chunks(path, [&](const uint8_t* d, size_t n) { h.update(d, n); });
  return to_hex(h.finish());
}

class Encryption : public CliTest {
 protected:
  // An identity made by Debian's age-keygen (mode 0600, as it writes it); returns its recipient.
  std::string keygen(const std::string& name) {
    std::string path = dir_ / name;
    auto r = run_process({"age-keygen", "-o", path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    ::chmod(path.c_str(), 0600);
    auto pub = run_process({"age-keygen", "-y", path});
    EXPECT_EQ(pub.exit_code, 0) << pub.output;
    std::string recipient = pub.output.substr(0, pub.output.find('\n'));
    EXPECT_EQ(recipient.rfind("age1", 0), 0u) << pub.output;
    return recipient;
  }

  std::string data_path(const std::string& name) { return store_ + "/" + name + "/etcd.backup.gz.age"; }

  // Makes the metadata agree with whatever the data file now holds, so that only the age layer
  // can notice a change (the stored SHA-256 alone would catch it first otherwise).
  void rerecord_digest(const std::string& name) {
    std::string meta_path = store_ + "/" + name + "/" + kBackupMetaFile;
    auto meta = nlohmann::json::parse(read_file(meta_path));
    meta["storedSha256"] = file_sha256(data_path(name));
    meta["storedSize"] = std::filesystem::file_size(data_path(name));
    write_file_atomic(meta_path, meta.dump(2), 0600);
  }

  std::vector<std::string> secret_free_check_paths() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(store_)) {
      if (e.is_regular_file() && e.path().filename().string().rfind("etcd.backup", 0) != 0) out.push_back(e.path());
    }
    return out;
  }
};

}  // namespace

TEST_F(Encryption, AgeReadsOurBackupAndARestoreStartsEtcdWithTheSameHashKV) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 200, 500);
  std::string recipient = keygen("key.txt");

  auto saved = save(m, {"--encrypt-to", recipient});
  const std::string name = saved["backup"];
  const int64_t revision = saved["revision"];
  EXPECT_EQ(saved["encryption"], "age");
  EXPECT_EQ(saved["encryptedTo"], nlohmann::json::array({recipient}));
  EXPECT_EQ(saved["dataFile"], "etcd.backup.gz.age");
  load_keys(client, "/registry/later/", 10, 10);
  // etcd-manager would list a backup it cannot restore: it gets no _etcd_backup.meta.
  EXPECT_FALSE(path_exists(store_ + "/" + name + "/" + kEtcdManagerMetaFile));
  auto marker = nlohmann::json::parse(read_file(store_ + "/" + kStoreMarkerFile));
  EXPECT_EQ(marker["layoutVersion"], 2);
  EXPECT_EQ(marker["encryption"]["recipients"], nlohmann::json::array({recipient}));

  // Listing needs no key: names, times, sizes, revision, recipients.
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["revision"], revision);
  EXPECT_EQ(listed[0]["encryptedTo"], nlohmann::json::array({recipient}));

  // The oracle: age -d | gunzip gives the snapshot etcd's own tool reads, at our revision.
  std::string plain = dir_ / "plain.db";
  auto manual = sh("age -d -i '" + dir_ / "key.txt" + "' '" + data_path(name) + "' | gunzip > '" + plain + "'");
  ASSERT_EQ(manual.exit_code, 0) << manual.output;
  EXPECT_EQ(snapshot_status(plain)["revision"], revision);
  EXPECT_EQ(file_sha256(plain).size(), 64u);

  // A second save needs no flag: the store says whom to encrypt to.
  auto second = save(m);
  EXPECT_EQ(second["encryptedTo"], nlohmann::json::array({recipient}));

  // Every reader with the identity: verify, get, restore into a data dir that etcd starts from.
  auto verified = cli_json({"backup", "verify", name, "--store", store_, "--identity", dir_ / "key.txt", "-o", "json"});
  EXPECT_EQ(verified["structure"], "checked");
  EXPECT_EQ(verified["revision"], revision);
  RunOptions env;
  env.env["ETCDADM_AGE_IDENTITY_FILE"] = dir_ / "key.txt";
  auto got = cli({"backup", "get", name, "/registry/secrets/", "--prefix", "--store", store_, "-o", "json"}, env);
  EXPECT_EQ(got.exit_code, 0) << got.output;
  RunOptions identity_text;
  identity_text.env["ETCDADM_AGE_IDENTITY"] = read_file(dir_ / "key.txt");
  auto diff = cli({"backup", "diff", name, second["backup"], "--store", store_}, identity_text);
  EXPECT_EQ(diff.exit_code, 0) << diff.output;
  auto inspected = cli_json({"backup", "inspect", name, "--store", store_, "--identity", dir_ / "key.txt", "-o", "json"});
  EXPECT_EQ(inspected["revision"], revision);
  auto put_back = cli({"backup", "restore-keys", name, "/registry/secrets/", "--prefix", "--dry-run", "--store", store_,
                       "--identity", dir_ / "key.txt", "--endpoints", m.client_url()});
  EXPECT_EQ(put_back.exit_code, 0) << put_back.output;
  // Without the identity each of them is refused, naming the recipient.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"backup", "inspect", name, "--store", store_},
        std::vector<std::string>{"backup", "get", name, "/registry/secrets/", "--prefix", "--store", store_},
        std::vector<std::string>{"backup", "verify", name, "--store", store_}}) {
    auto refused = cli(args);
    EXPECT_EQ(refused.exit_code, 7) << args[1] << ": " << refused.output;
    EXPECT_NE(refused.output.find(recipient), std::string::npos) << args[1] << ": " << refused.output;
  }

  EtcdOptions ro;
  ro.name = "r1";
  ro.peer_port = free_port();
  ro.data_dir = dir_ / "r1-data";
  auto restored_run = cli({"backup", "restore", name, "--store", store_, "--identity", dir_ / "key.txt", "--data-dir",
                           ro.data_dir, "--name", "r1", "--initial-cluster-token", ro.initial_cluster_token,
                           "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(ro.peer_port),
                           "--keep-revision"});  // compared by HashKV at the backup's revision
  ASSERT_EQ(restored_run.exit_code, 0) << restored_run.output;
  auto& restored = start_member(ro);
  EtcdClient rc(restored.connection());
  EXPECT_EQ(all_keys(rc), all_keys(client, revision));
  EXPECT_EQ(rc.hash_kv(restored.client_url(), revision).hash(), client.hash_kv(m.client_url(), revision).hash());

  // No secret anywhere but the key file: not in the store's small files, not in any output.
  std::string secret = read_file(dir_ / "key.txt");
  secret = secret.substr(secret.find("AGE-SECRET-KEY-"), 74);
  for (const auto& p : secret_free_check_paths()) EXPECT_EQ(read_file(p).find("AGE-SECRET-KEY"), std::string::npos) << p;
  for (const auto* out : {&got.output, &diff.output, &restored_run.output}) EXPECT_EQ(out->find(secret), std::string::npos);
}

TEST_F(Encryption, AFileEncryptedWithAgeIsImportedIntoAnEncryptedStoreAndRestored) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/import/", 50, 100);
  std::string store_recipient = keygen("store-key.txt");
  std::string transport_recipient = keygen("transport-key.txt");
  std::string snap = dir_ / "snap.db", encrypted = dir_ / "snap.db.age";
  etcdctl_snapshot(m, snap);
  auto enc = run_process({"age", "-r", transport_recipient, "-o", encrypted, snap});
  ASSERT_EQ(enc.exit_code, 0) << enc.output;

  // Without the key that opens the file: refused, and no backup appears.
  auto refused = cli({"backup", "import", encrypted, "--store", store_, "--encrypt-to", store_recipient});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("--identity"), std::string::npos) << refused.output;
  EXPECT_TRUE(cli_json({"backup", "list", "--store", store_, "-o", "json"}).empty());

  auto imported = cli_json({"backup", "import", encrypted, "--store", store_, "--encrypt-to", store_recipient, "--identity",
                            dir_ / "transport-key.txt", "-o", "json"});
  EXPECT_EQ(imported["encryptedTo"], nlohmann::json::array({store_recipient}));
  std::string out = dir_ / "out.db";
  auto fetched = cli({"backup", "restore", imported["backup"], "--store", store_, "--identity", dir_ / "store-key.txt",
                      "--output-file", out});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
  EXPECT_EQ(file_sha256(out), file_sha256(snap));
  // The transport key does not open the store's backup.
  auto wrong = cli({"backup", "restore", imported["backup"], "--store", store_, "--identity", dir_ / "transport-key.txt",
                    "--output-file", dir_ / "wrong.db"});
  EXPECT_EQ(wrong.exit_code, 7) << wrong.output;
  EXPECT_FALSE(path_exists(dir_ / "wrong.db"));
}

TEST_F(Encryption, WrongKeysLooseKeyFilesAndDamageAnywhereAreRefusedWithNothingWritten) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/big/", 300, 1000, 7);  // pseudo-random values: several 64 KiB chunks after gzip
  std::string recipient = keygen("key.txt");
  keygen("other.txt");
  auto saved = save(m, {"--encrypt-to", recipient});
  const std::string name = saved["backup"];
  const std::string original = read_file(data_path(name));
  const size_t header = *age::header_size(original);
  const size_t payload = header + 16;  // after the nonce
  ASSERT_GT(original.size(), payload + 3 * kChunk) << "the test needs at least four chunks";
  std::string out = dir_ / "out.db";
  auto restore = [&](const std::string& key) {
    return cli({"backup", "restore", name, "--store", store_, "--identity", dir_ / key, "--output-file", out});
  };

  // Missing and wrong identities: the recipients are named; no damage is recorded (nothing is wrong with the backup).
  auto none = cli({"backup", "restore", name, "--store", store_, "--output-file", out});
  EXPECT_EQ(none.exit_code, 7) << none.output;
  EXPECT_NE(none.output.find(recipient), std::string::npos) << none.output;
  auto wrong = restore("other.txt");
  EXPECT_EQ(wrong.exit_code, 7) << wrong.output;
  EXPECT_NE(wrong.output.find(recipient), std::string::npos) << wrong.output;
  EXPECT_FALSE(path_exists(out));
  EXPECT_FALSE(path_exists(store_ + "/" + name + "/" + kDamageMarkerFile));
  // A key file the group or others can read is refused before it is used.
  ::chmod((dir_ / "key.txt").c_str(), 0644);
  auto loose = restore("key.txt");
  EXPECT_EQ(loose.exit_code, 2) << loose.output;
  EXPECT_NE(loose.output.find("chmod 600"), std::string::npos) << loose.output;
  ::chmod((dir_ / "key.txt").c_str(), 0600);
  EXPECT_FALSE(path_exists(out));

  // Damage the stored SHA-256 catches before age is asked: recorded as damage.
  std::string flipped = original;
  flipped[payload + kChunk + 100] ^= 0x01;
  write_file_atomic(data_path(name), flipped, 0600);
  auto caught = restore("key.txt");
  EXPECT_EQ(caught.exit_code, 5) << caught.output;
  EXPECT_NE(caught.output.find("recorded SHA-256"), std::string::npos) << caught.output;
  EXPECT_TRUE(path_exists(store_ + "/" + name + "/" + kDamageMarkerFile));
  std::filesystem::remove(store_ + "/" + name + "/" + kDamageMarkerFile);

  // Damage with the digests made to agree: the age layer alone must refuse each.
  struct Case {
    const char* what;
    std::string bytes;
  };
  std::vector<Case> cases;
  std::string c = original;
  c[header - 10] ^= 0x01;  // the header MAC line
  cases.push_back({"header MAC", c});
  c = original;
  c[original.find("\n", original.find("-> X25519")) + 5] ^= 0x01;  // the stanza body (wrapped file key)
  cases.push_back({"stanza body", c});
  c = original;
  c[payload + 2 * kChunk + 77] ^= 0x01;
  cases.push_back({"middle chunk", c});
  c = original;
  c[original.size() - 5] ^= 0x01;
  cases.push_back({"last chunk", c});
  cases.push_back({"truncated", original.substr(0, original.size() - 100)});
  cases.push_back({"cut at a chunk boundary", original.substr(0, payload + 2 * kChunk)});
  c = original;
  std::swap_ranges(c.begin() + payload, c.begin() + payload + kChunk, c.begin() + payload + kChunk);
  cases.push_back({"swapped chunks", c});
  for (const auto& k : cases) {
    write_file_atomic(data_path(name), k.bytes, 0600);
    rerecord_digest(name);
    auto r = restore("key.txt");
    EXPECT_NE(r.exit_code, 0) << k.what << ": " << r.output;
    EXPECT_TRUE(r.output.find("age file") != std::string::npos || r.output.find("not a valid age file") != std::string::npos)
        << k.what << ": " << r.output;
    EXPECT_FALSE(path_exists(out)) << k.what;
    std::filesystem::remove(store_ + "/" + name + "/" + kDamageMarkerFile);
  }
  // Restored: the same backup reads again (the damage markers are gone, the digest agrees).
  write_file_atomic(data_path(name), original, 0600);
  rerecord_digest(name);
  auto ok = restore("key.txt");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST_F(Encryption, APassphraseStoreTakesOnlyItsPassphrase) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/p/", 20, 50);
  const std::string passphrase = "the quick brown etcd jumps";
  write_file_atomic(dir_ / "pass", passphrase + "\n", 0600);
  write_file_atomic(dir_ / "wrong-pass", "not it\n", 0600);
  keygen("key.txt");
  auto saved = save(m, {"--passphrase-file", dir_ / "pass"});
  const std::string name = saved["backup"];
  EXPECT_EQ(saved["encryptedTo"], nlohmann::json::array({"scrypt"}));

  // A mistyped passphrase writes nothing; the right one from the environment does.
  auto typo = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url(), "--passphrase-file", dir_ / "wrong-pass"});
  EXPECT_EQ(typo.exit_code, 7) << typo.output;
  EXPECT_EQ(cli_json({"backup", "list", "--store", store_, "-o", "json"}).size(), 1u);
  RunOptions env;
  env.env["ETCDADM_AGE_PASSPHRASE"] = passphrase;
  auto second = cli({"backup", "save", "--store", store_, "--endpoints", m.client_url()}, env);
  EXPECT_EQ(second.exit_code, 0) << second.output;

  std::string out = dir_ / "out.db";
  auto with_identity = cli({"backup", "restore", name, "--store", store_, "--identity", dir_ / "key.txt", "--output-file", out});
  EXPECT_EQ(with_identity.exit_code, 7) << with_identity.output;
  EXPECT_NE(with_identity.output.find("passphrase"), std::string::npos) << with_identity.output;
  EXPECT_FALSE(path_exists(out));
  auto ok = cli({"backup", "restore", name, "--store", store_, "--passphrase-file", dir_ / "pass", "--output-file", out});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(snapshot_status(out)["revision"], saved["revision"]);
  for (const auto* o : {&typo.output, &second.output, &ok.output}) EXPECT_EQ(o->find(passphrase), std::string::npos) << *o;
  for (const auto& p : secret_free_check_paths()) EXPECT_EQ(read_file(p).find(passphrase), std::string::npos) << p;
}

// docs/security.md, "the store's audience": a writer of the store who replaces the marker's
// recipients, deletes the marker or makes it plain gets no later backup of this host; only a
// rekey here or `backup pin` moves what this host writes for.
TEST_F(Encryption, TheStoresAudienceIsPinnedOnTheSavingHostAndAChangeMadeElsewhereIsRefused) {
  auto& m = start_member();
  std::string a = keygen("a.txt"), b = keygen("b.txt"), mallory = keygen("mallory.txt");
  save(m, {"--encrypt-to", a});
  const std::string marker_path = store_ + "/" + kStoreMarkerFile;
  const std::string good_marker = read_file(marker_path);
  auto backups_in_store = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(store_)) n += e.is_directory() && e.path().filename() != "changelog";
    return n;
  };
  // A host is its catalog: "elsewhere" is a host that never wrote into this store (no pin).
  const std::string here = dir_ / "catalog.db", elsewhere = dir_ / "other-host.db";
  auto save_on = [&](const std::string& host) {
    return run_etcdadm({"backup", "save", "--store", store_, "--endpoints", m.client_url()}, host);
  };
  auto save_cli = [&] { return save_on(here); };

  // 1. The recipients replaced by the writer's own.
  auto marker = nlohmann::json::parse(good_marker);
  marker["encryption"]["recipients"] = nlohmann::json::array({mallory});
  write_file_atomic(marker_path, marker.dump(2), 0600);
  auto changed = save_cli();
  EXPECT_NE(changed.exit_code, 0) << changed.output;
  for (const std::string& said : {std::string("audience of store"), a, mallory, std::string("etcdadm backup pin --store")}) {
    EXPECT_NE(changed.output.find(said), std::string::npos) << said << " not in:\n" << changed.output;
  }
  EXPECT_EQ(backups_in_store(), 1);

  // 2. The marker deleted: this host pinned encryption, and a host that never wrote here sees the
  // encrypted backups; neither writes in the clear, nor a new marker.
  std::filesystem::remove(marker_path);
  for (const auto& host : {here, elsewhere}) {
    auto deleted = save_on(host);
    EXPECT_NE(deleted.exit_code, 0) << deleted.output;
    EXPECT_NE(deleted.output.find("in the clear"), std::string::npos) << deleted.output;
    EXPECT_FALSE(path_exists(marker_path)) << host;
  }
  EXPECT_EQ(backups_in_store(), 1);

  // 3. A plain marker: the same on both hosts.
  write_file_atomic(marker_path, R"({"layoutVersion": 1, "compression": "gzip", "fileMode": "0600"})", 0600);
  EXPECT_NE(save_cli().exit_code, 0);
  auto plain_elsewhere = save_on(elsewhere);
  EXPECT_NE(plain_elsewhere.exit_code, 0) << plain_elsewhere.output;
  EXPECT_NE(plain_elsewhere.output.find("holds encrypted backups"), std::string::npos) << plain_elsewhere.output;
  EXPECT_NE(cli({"backup", "pin", "--store", store_}).exit_code, 0);
  EXPECT_EQ(backups_in_store(), 1);

  // The marker back: saves go on, encrypted to a.
  write_file_atomic(marker_path, good_marker, 0600);
  EXPECT_EQ(save(m)["encryptedTo"], nlohmann::json::array({a}));

  // 4. A rekey on this host moves the pin with the marker.
  auto rekey = cli({"backup", "rekey", "--store", store_, "--encrypt-to", b});
  ASSERT_EQ(rekey.exit_code, 0) << rekey.output;
  EXPECT_EQ(save(m)["encryptedTo"], nlohmann::json::array({b}));

  // 5. A rekey on another host is refused here until a person accepts it with `backup pin`.
  auto rekeyed_elsewhere = run_etcdadm({"backup", "rekey", "--store", store_, "--encrypt-to", a}, elsewhere);
  ASSERT_EQ(rekeyed_elsewhere.exit_code, 0) << rekeyed_elsewhere.output;
  EXPECT_NE(save_cli().exit_code, 0);
  auto pinned = cli_json({"backup", "pin", "--store", store_, "-o", "json"});
  EXPECT_EQ(pinned["recipients"], nlohmann::json::array({a}));
  EXPECT_EQ(pinned["before"]["recipients"], nlohmann::json::array({b}));
  EXPECT_EQ(save(m)["encryptedTo"], nlohmann::json::array({a}));
  // Naming the recipients is an acceptance too.
  EXPECT_EQ(save(m, {"--encrypt-to", a})["encryptedTo"], nlohmann::json::array({a}));
}

TEST_F(Encryption, RekeyRetiresTheOldIdentityAndAKillAtEachStepLeavesEveryBackupReadable) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/rk/", 200, 500, 3);
  std::string a = keygen("a.txt"), b = keygen("b.txt");
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) names.push_back(save(m, {"--encrypt-to", a})["backup"]);

  auto opens_with = [&](const std::string& name, std::vector<std::string> keys) {
    std::vector<std::string> args = {"backup", "verify", name, "--shallow", "--store", store_};
    for (const auto& k : keys) args.insert(args.end(), {"--identity", dir_ / k});
    return cli(args).exit_code == 0;
  };
  auto full = cli({"backup", "rekey", "--all", "--store", store_, "--encrypt-to", b, "--identity", dir_ / "a.txt"});
  ASSERT_EQ(full.exit_code, 0) << full.output;
  for (const auto& n : names) {
    EXPECT_FALSE(opens_with(n, {"a.txt"})) << n;
    EXPECT_TRUE(opens_with(n, {"b.txt"})) << n;
  }
  // The oracle agrees: age opens the rekeyed file with b only.
  EXPECT_EQ(sh("age -d -i '" + dir_ / "b.txt" + "' '" + data_path(names[0]) + "' | gunzip | wc -c").exit_code, 0);
  EXPECT_NE(sh("age -d -i '" + dir_ / "a.txt" + "' '" + data_path(names[0]) + "' > /dev/null").exit_code, 0);
  // New saves go to b.
  EXPECT_EQ(save(m)["encryptedTo"], nlohmann::json::array({b}));

  // SIGKILLed at each step of a backup's rekey (failpoints, common/failpoint.h): its new file being
  // written, the metadata saying a rekey is under way, the new file committed before the metadata
  // says so. Each killed run leaves work for the next, which resumes it; first towards a (then
  // finished), then towards b (finished below by a run back to a).
  for (const std::string& to : {a, b}) {
    for (const std::string point : {"rekey/data/streaming", "rekey/meta/in-progress", "rekey/data/committed"}) {
      std::vector<std::string> argv = {ETCDADM_BIN, "backup", "rekey", "--all", "--store", store_, "--encrypt-to", to,
                                       "--identity", dir_ / "a.txt", "--identity", dir_ / "b.txt"};
      RunOptions ro;
      ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
      ro.env["ETCDADM_FAILPOINTS"] = point;
      auto killed = run_process(argv, ro);
      ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << point << ": the kill did not land\n" << killed.output;
      for (const auto& n : names) {
        EXPECT_TRUE(opens_with(n, {"a.txt", "b.txt"})) << n << " unreadable after a kill at " << point << " (to " << to << ")";
      }
    }
    if (to == a) {
      auto finished = cli({"backup", "rekey", "--all", "--store", store_, "--encrypt-to", a, "--identity", dir_ / "a.txt",
                           "--identity", dir_ / "b.txt"});
      ASSERT_EQ(finished.exit_code, 0) << finished.output;
    }
  }
  // A run to the end finishes whatever a kill left: every backup opens with the last target only.
  auto last = cli({"backup", "rekey", "--all", "--store", store_, "--encrypt-to", a, "--identity", dir_ / "a.txt",
                   "--identity", dir_ / "b.txt"});
  ASSERT_EQ(last.exit_code, 0) << last.output;
  for (const auto& n : names) {
    EXPECT_TRUE(opens_with(n, {"a.txt"})) << n;
    EXPECT_FALSE(opens_with(n, {"b.txt"})) << n;
    auto meta = nlohmann::json::parse(read_file(store_ + "/" + n + "/" + kBackupMetaFile));
    EXPECT_FALSE(meta.contains("rekeyInProgress")) << meta.dump();
    EXPECT_EQ(meta["encryptedTo"], nlohmann::json::array({a}));
  }
  // Without a key the sidecar-style check still reads the stored bytes and the header.
  auto shallow = cli({"backup", "verify", names[0], "--shallow", "--store", store_});
  EXPECT_EQ(shallow.exit_code, 0) << shallow.output;
  EXPECT_NE(shallow.output.find("not decrypted"), std::string::npos) << shallow.output;
}

}  // namespace etcdadm::test
