// The S3 store against a real S3 server that verifies SigV4 (OpenStack Swift + s3api, started once
// for this binary on loopback), with a fault-injecting proxy in front of it for the retry tests,
// real etcd members for the end-to-end flow, and /usr/bin/aws + etcdctl as interop oracles.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>

#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "store/layout.h"
#include "store/s3_store.h"
#include "test/support/cli_fixture.h"
#include "test/support/fault_proxy.h"
#include "test/support/object_servers.h"

namespace etcdadm::test {
namespace {

SwiftS3Server* g_swift = nullptr;

class SwiftEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { g_swift = new SwiftS3Server(); }
  void TearDown() override {
    delete g_swift;
    g_swift = nullptr;
  }
};

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::string read_all(BlobReader& r) {
  std::string out;
  std::vector<uint8_t> buf(1 << 16);
  for (;;) {
    size_t n = r.read(buf.data(), buf.size());
    if (n == 0) return out;
    out.append(reinterpret_cast<const char*>(buf.data()), n);
  }
}

int port_of(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

// Each test gets its own bucket, so tests never see each other's objects.
class S3StoreTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    bucket_ = "t-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
    (void)info;
    g_swift->create_bucket(bucket_);
  }

  std::unique_ptr<S3Store> store(const std::string& prefix = "backups", S3StoreOptions o = {},
                                 const std::string& endpoint = "", RetryPolicy retry = fast_retry()) {
    S3Config c = g_swift->client()->config();
    if (!endpoint.empty()) c.endpoint = endpoint;
    c.retry = retry;
    c.http.idle_timeout = std::chrono::milliseconds(3000);
    AwsCredentials creds;
    creds.access_key_id = g_swift->access_key();
    creds.secret_access_key = g_swift->secret_key();
    auto client = std::make_shared<S3Client>(c, make_static_credentials(creds));
    return std::make_unique<S3Store>(client, bucket_, prefix, o);
  }

  static RetryPolicy fast_retry() { return RetryPolicy{5, std::chrono::milliseconds(20), std::chrono::milliseconds(200)}; }

  std::string url(const std::string& prefix = "backups") const { return "s3://" + bucket_ + "/" + prefix; }

  // etcdadm flags + env for this server.
  RunOptions s3_env() const {
    RunOptions o;
    o.env = g_swift->env();
    return o;
  }
  std::vector<std::string> store_flags(const std::string& prefix = "backups") const {
    return {"--store", url(prefix), "--s3-endpoint", g_swift->endpoint()};
  }

  nlohmann::json cli_json_env(std::vector<std::string> args, const RunOptions& env) {
    auto r = cli(args, env);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    auto start = r.output.find_first_of("[{");
    auto end = r.output.find_last_of("]}");
    if (start == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << "no JSON in output: " << r.output;
      return nullptr;
    }
    return nlohmann::json::parse(r.output.substr(start, end - start + 1));
  }

  bool no_multipart_uploads_left() { return g_swift->client()->list_multipart_uploads(bucket_, "").empty(); }

  static inline int counter_ = 0;
  std::string bucket_;
};

TEST_F(S3StoreTest, SmallObjectsRoundTripStatListRemove) {
  auto s = store();
  s->write_small("a/one.json", "{\"x\":1}");
  s->write_small("a/two.json", "{\"x\":2}");
  s->write_small("b/three", "3");
  EXPECT_EQ(s->read_small("a/one.json"), "{\"x\":1}");
  auto st = s->stat("a/two.json");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->size, 7u);
  EXPECT_GT(st->modified_unix_micros, 0);
  EXPECT_FALSE(s->stat("a/missing").has_value());
  auto l = s->list("a/");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].key, "a/one.json");
  EXPECT_EQ(l[1].key, "a/two.json");
  EXPECT_THROW(s->write_small("a/one.json", "again"), Error);  // no silent overwrite
  s->remove_many({"a/one.json", "a/two.json"});
  EXPECT_TRUE(s->list("a/").empty());
  EXPECT_EQ(s->list("").size(), 1u);
  try {
    s->open("a/one.json");
    FAIL() << "expected kNotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

TEST_F(S3StoreTest, ListingPaginates) {
  auto c = g_swift->client();
  for (int i = 0; i < 5; ++i) c->put_object(bucket_, "p/k" + std::to_string(i), "v");
  std::vector<std::string> keys;
  std::string token;
  int pages = 0;
  do {
    S3ListPage page = c->list_objects(bucket_, "p/", token, 2);
    for (auto& o : page.objects) keys.push_back(o.key);
    token = page.next_continuation_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(keys, (std::vector<std::string>{"p/k0", "p/k1", "p/k2", "p/k3", "p/k4"}));
}

TEST_F(S3StoreTest, MultipartUploadStreamsInPartsAndReadsBack) {
  S3StoreOptions o;
  o.part_size = 5u << 20;
  o.concurrency = 3;
  auto s = store("mp", o);
  std::string data = random_bytes((23u << 20) + 12345, 7);
  auto w = s->create("big.bin", false);
  for (size_t off = 0; off < data.size(); off += 100000) {
    size_t n = std::min<size_t>(100000, data.size() - off);
    w->write(reinterpret_cast<const uint8_t*>(data.data() + off), n);
  }
  EXPECT_FALSE(s->stat("big.bin").has_value()) << "visible before commit";
  w->commit();
  auto r = s->open("big.bin");
  EXPECT_EQ(r->size(), data.size());
  EXPECT_TRUE(read_all(*r) == data);
  EXPECT_TRUE(no_multipart_uploads_left());
}

TEST_F(S3StoreTest, AbortedUploadLeavesNoObjectAndNoParts) {
  S3StoreOptions o;
  o.part_size = 5u << 20;
  auto s = store("mp", o);
  std::string data = random_bytes(12u << 20, 3);
  {
    auto w = s->create("partial.bin", false);
    w->write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    EXPECT_FALSE(no_multipart_uploads_left()) << "parts should be in flight before abort";
    w->abort();
  }
  {
    auto w = s->create("dropped.bin", false);  // destroyed without commit
    w->write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  EXPECT_FALSE(s->stat("partial.bin").has_value());
  EXPECT_FALSE(s->stat("dropped.bin").has_value());
  EXPECT_TRUE(no_multipart_uploads_left());
}

TEST_F(S3StoreTest, WrongSecretSaysSignatureDoesNotMatch) {
  RunOptions env = s3_env();
  env.env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret";
  std::vector<std::string> args = {"backup", "list"};
  for (auto& f : store_flags()) args.push_back(f);
  auto r = cli(args, env);
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_NE(r.output.find("signature does not match"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("check your credentials"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not-the-secret"), std::string::npos) << "secret leaked into output";
}

TEST_F(S3StoreTest, UnknownAccessKeyAndMissingBucketAreClear) {
  RunOptions env = s3_env();
  env.env["AWS_ACCESS_KEY_ID"] = "nobody:nobody";
  std::vector<std::string> args = {"backup", "list"};
  for (auto& f : store_flags()) args.push_back(f);
  auto r = cli(args, env);
  EXPECT_EQ(r.exit_code, 7) << r.output;
  args = {"backup", "list", "--store", "s3://no-such-bucket-x/p", "--s3-endpoint", g_swift->endpoint()};
  r = cli(args, s3_env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("NoSuchBucket"), std::string::npos) << r.output;
}

TEST_F(S3StoreTest, SaveListVerifyRestoreEndToEnd) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 300, 700);
  std::vector<std::string> save = {"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"};
  for (auto& f : store_flags()) save.push_back(f);
  auto saved = cli_json_env(save, s3_env());
  std::string name = saved["name"];
  int64_t revision = saved["revision"];
  load_keys(client, "/registry/later/", 10, 10);

  std::vector<std::string> list = {"backup", "list", "-o", "json"};
  for (auto& f : store_flags()) list.push_back(f);
  auto listed = cli_json_env(list, s3_env());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["name"], name);

  std::vector<std::string> verify = {"backup", "verify", name};
  for (auto& f : store_flags()) verify.push_back(f);
  auto v = cli(verify, s3_env());
  EXPECT_EQ(v.exit_code, 0) << v.output;

  EtcdOptions ro;
  ro.name = "r1";
  ro.peer_port = free_port();
  ro.data_dir = dir_ / "r1-data";
  ro.initial_cluster_token = "etcd-cluster";
  std::vector<std::string> restore = {"backup", "restore", "latest", "--data-dir", ro.data_dir, "--name", "r1",
                                      "--initial-advertise-peer-urls", "http://127.0.0.1:" + std::to_string(ro.peer_port)};
  for (auto& f : store_flags()) restore.push_back(f);
  auto rr = cli(restore, s3_env());
  ASSERT_EQ(rr.exit_code, 0) << rr.output;
  auto& restored = start_member(ro);
  EtcdClient rc(restored.connection());
  EXPECT_EQ(all_keys(rc), all_keys(client, revision));
  EXPECT_EQ(rc.hash_kv(restored.client_url(), revision).hash(), client.hash_kv(m.client_url(), revision).hash());
}

}  // namespace
}  // namespace etcdadm::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new etcdadm::test::SwiftEnvironment());
  return RUN_ALL_TESTS();
}
