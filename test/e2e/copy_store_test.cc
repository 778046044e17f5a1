// `backup copy` across backends: local -> S3 (Swift s3api, which checks SigV4) -> GCS (the firebase
// emulator) -> local, with a change log. At each hop every data file's SHA-256, read back with an
// independent client (/usr/bin/aws for S3, the GCS store for GCS), equals the digest the source
// recorded; a copy SIGKILLed mid-upload lists nothing and the re-run completes; a damaged source
// object is refused and nothing of it reaches the target; and at the end of the chain a
// point-in-time restore to the last revision serves the live member's HashKV.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <thread>

#include "common/fs.h"
#include "common/sha256.h"
#include "store/backend/gcs/gcs_store.h"
#include "store/layout.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return to_hex(h.finish());
}

class CopyAcrossStores : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    static int counter = 0;
    s3_bucket_ = "copy-" + std::to_string(++counter) + "-" + std::to_string(::getpid());
    gcs_bucket_ = "gcopy-" + std::to_string(counter) + "-" + std::to_string(::getpid());
    swift_server()->create_bucket(s3_bucket_);
  }
  // The fixture's helpers run against S3; the GCS emulator's variable is set as well, so that one
  // environment serves every hop.
  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", s3_url(prefix), "--s3-endpoint", swift_server()->endpoint()};
  }
  RunOptions store_env() const override {
    RunOptions o;
    o.env = swift_server()->env();
    o.env["STORAGE_EMULATOR_HOST"] = gcs_emulator()->endpoint();
    return o;
  }
  std::string s3_url(const std::string& prefix = "backups") const { return "s3://" + s3_bucket_ + "/" + prefix; }
  std::string gcs_url() const { return "gs://" + gcs_bucket_ + "/backups"; }

  ProcessResult copy(const std::string& from, const std::string& to, std::vector<std::string> extra = {},
                     RunOptions env = {}) {
    RunOptions o = store_env();
    for (const auto& [k, v] : env.env) o.env[k] = v;
    std::vector<std::string> args = {"backup", "copy", "--from", from, "--to", to, "--s3-endpoint", swift_server()->endpoint()};
    args.insert(args.end(), extra.begin(), extra.end());
    return cli(args, o);
  }

  nlohmann::json list(const std::string& store) {
    return cli_json({"backup", "list", "--store", store, "--s3-endpoint", swift_server()->endpoint(), "-o", "json"}, store_env());
  }

  // name -> the stored SHA-256 its metadata records, for every backup `store` lists.
  std::map<std::string, std::string> recorded(const std::string& store) {
    std::map<std::string, std::string> out;
    for (const auto& b : list(store)) out[b["backup"]] = b["storedSha256"];
    return out;
  }

  std::string s3_object_sha256(const std::string& key) {
    AwsCli aws(dir_.path(), swift_server()->endpoint(), swift_server()->env());
    std::string file = dir_ / "aws-download";
    auto r = aws.run({"s3", "cp", "s3://" + s3_bucket_ + "/backups/" + key, file});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return sha256_hex(read_file(file));
  }

  std::string gcs_object_sha256(const std::string& key) {
    GcsConfig c;
    c.endpoint = gcs_emulator()->endpoint();
    GcsStore gcs(std::make_shared<GcsClient>(c, std::make_shared<GcsAuth>(nullptr)), gcs_bucket_, "backups");
    auto reader = gcs.open(key);
    return sha256_hex(read_all(*reader));
  }

  std::string s3_bucket_, gcs_bucket_;
};

TEST_F(CopyAcrossStores, LocalToS3ToGcsToLocalKeepsEveryDigestAndTheChangeLog) {
  using namespace std::chrono_literals;
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 60, 400);
  // Two backups in a local store, and the change log after them from a continuous sidecar.
  for (int i = 0; i < 2; ++i) {
    auto r = cli({"--log-level", "warn", "backup", "save", "--store", store_, "--endpoints", m.client_url()});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::this_thread::sleep_for(1100ms);  // names have one-second resolution
  }
  RunOptions so;
  so.env["ETCDADM_CATALOG"] = dir_ / "sidecar-catalog.db";
  auto sidecar = ChildProcess::start({ETCDADM_BIN, "backup", "sidecar", "--store", store_, "--endpoints", m.client_url(),
                                      "--schedule", "@yearly", "--listen", "", "--continuous", "--segment-interval", "1s"},
                                     dir_ / "sidecar.log", so);
  load_keys(client, "/registry/secrets/", 40, 300, 2);
  client.put("/registry/pods/k-000001", "changed");
  const int64_t last = client.status(m.client_url()).header().revision();
  ASSERT_EQ(wait_for_change_log({"--store", store_}, last), last) << read_file(dir_ / "sidecar.log");
  EXPECT_EQ(sidecar.stop(10000ms), 0);
  const auto source = recorded(store_);
  ASSERT_EQ(source.size(), 2u);

  // Hop 1, local -> S3, killed first while the first data file is uploaded (not yet committed).
  RunOptions kill;
  kill.env["ETCDADM_FAILPOINTS"] = "copy/data/written";
  auto killed = copy(store_, s3_url(), {"--all"}, kill);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
  EXPECT_TRUE(list(s3_url()).empty());
  auto hop1 = copy(store_, s3_url(), {"--all"});
  ASSERT_EQ(hop1.exit_code, 0) << hop1.output;
  EXPECT_EQ(recorded(s3_url()), source);
  for (const auto& [name, sha] : source) EXPECT_EQ(s3_object_sha256(name + "/etcd.backup.gz"), sha) << name;

  // Hop 2, S3 -> GCS.
  auto hop2 = copy(s3_url(), gcs_url(), {"--all"});
  ASSERT_EQ(hop2.exit_code, 0) << hop2.output;
  EXPECT_EQ(recorded(gcs_url()), source);
  for (const auto& [name, sha] : source) EXPECT_EQ(gcs_object_sha256(name + "/etcd.backup.gz"), sha) << name;

  // Hop 3, GCS -> local; then the newest state the log reaches, restored from the last copy.
  std::string back = dir_ / "back";
  auto hop3 = copy(gcs_url(), back, {"--all", "-o", "json"});
  ASSERT_EQ(hop3.exit_code, 0) << hop3.output;
  EXPECT_EQ(recorded(back), source);
  for (const auto& [name, sha] : source) {
    Sha256 h;
    std::string bytes = read_file(back + "/" + name + "/etcd.backup.gz");
    h.update(bytes.data(), bytes.size());
    EXPECT_EQ(to_hex(h.finish()), sha) << name;
  }
  EtcdOptions eo;
  eo.name = "copied";
  eo.peer_port = free_port();
  eo.data_dir = dir_ / "restored";
  auto rr = cli({"backup", "restore", "latest", "--store", back, "--to-revision", "end", "--data-dir", eo.data_dir,
                 "--name", eo.name, "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(eo.peer_port),
                 "--keep-revision"});  // compared by HashKV at the log's last revision
  ASSERT_EQ(rr.exit_code, 0) << rr.output;
  auto& restored = start_member(eo);
  EtcdClient rc(restored.connection());
  EXPECT_EQ(rc.status(restored.client_url()).header().revision(), last);
  EXPECT_EQ(rc.hash_kv(restored.client_url(), last).hash(), client.hash_kv(m.client_url(), last).hash());

  // A second run of every hop copies nothing.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{store_, s3_url()}, {s3_url(), gcs_url()}}) {
    auto again = copy(from, to, {"--all", "-o", "json"});
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_NE(again.output.find("\"bytes\": 0"), std::string::npos) << again.output;
  }
}

TEST_F(CopyAcrossStores, ADamagedS3ObjectIsRefusedAndNothingOfItReachesGcs) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 40, 400);
  auto saved = cli_json(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}),
                        store_env());
  const std::string name = saved["backup"];
  // The object's bytes change in the bucket (bit rot, a bad actor): one byte, through aws.
  AwsCli aws(dir_.path(), swift_server()->endpoint(), swift_server()->env());
  std::string file = dir_ / "object";
  const std::string key = "s3://" + s3_bucket_ + "/backups/" + name + "/etcd.backup.gz";
  ASSERT_EQ(aws.run({"s3", "cp", key, file}).exit_code, 0);
  std::string bytes = read_file(file);
  bytes[bytes.size() / 2] ^= 0x20;
  write_file_atomic(file, bytes, 0600, /*overwrite=*/true);
  ASSERT_EQ(aws.run({"s3", "cp", file, key}).exit_code, 0);

  auto r = copy(s3_url(), gcs_url(), {name});
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("does not match its recorded SHA-256"), std::string::npos) << r.output;
  EXPECT_TRUE(list(gcs_url()).empty());
  GcsConfig c;
  c.endpoint = gcs_emulator()->endpoint();
  GcsStore gcs(std::make_shared<GcsClient>(c, std::make_shared<GcsAuth>(nullptr)), gcs_bucket_, "backups");
  for (const auto& b : gcs.list("")) EXPECT_EQ(b.key.find(name), std::string::npos) << b.key;
}

}  // namespace
}  // namespace etcdadm::test
