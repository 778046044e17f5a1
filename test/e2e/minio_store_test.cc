// The S3 store against MinIO (single drive, loopback, started once for this binary): a second S3
// server beside Swift's s3api, with what Swift lacks: conditional writes (If-None-Match: *) and
// versioned buckets. /usr/bin/aws is the oracle for what the bucket really holds.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "store/s3_store.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

class MinioStoreTest : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    bucket_ = "minio-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
    g_minio->create_bucket(bucket_);
  }

  // A client of its own per store, so that what it learns about the server is this test's.
  std::unique_ptr<S3Store> store(std::shared_ptr<S3Client> client = g_minio->client(), size_t part_size = 5u << 20) {
    S3StoreOptions o;
    o.part_size = part_size;
    return std::make_unique<S3Store>(std::move(client), bucket_, "backups", o);
  }

  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", "s3://" + bucket_ + "/" + prefix, "--s3-endpoint", g_minio->endpoint(), "--upload-part-size", "5"};
  }
  RunOptions store_env() const override {
    RunOptions o;
    o.env = g_minio->env();
    return o;
  }

  AwsCli aws() const { return AwsCli(dir_.path(), g_minio->endpoint(), g_minio->env()); }
  nlohmann::json aws_json(const std::vector<std::string>& args) const {
    auto r = aws().run(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.output);
  }

  // Two writers of the same key that both passed the check before the upload, as two saves racing
  // would: the second to finish must fail and leave the first one's object as it was.
  void expect_second_writer_refused(size_t bytes) {
    auto client = g_minio->client();
    auto s = store(client);
    std::string first = random_bytes(bytes, 1), second = random_bytes(bytes, 2);
    auto w1 = s->create("race.bin", /*overwrite=*/false);
    auto w2 = s->create("race.bin", /*overwrite=*/false);
    w1->write(reinterpret_cast<const uint8_t*>(first.data()), first.size());
    w2->write(reinterpret_cast<const uint8_t*>(second.data()), second.size());
    w1->commit();
    try {
      w2->commit();
      ADD_FAILURE() << "the second writer replaced the object";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists) << e.what();
      EXPECT_NE(std::string(e.what()).find("412"), std::string::npos) << e.what();
    }
    w2.reset();  // aborts its multipart upload, if it had one
    EXPECT_TRUE(read_all(*s->open("race.bin")) == first);
    EXPECT_EQ(client->conditional_writes(), S3Client::ConditionalWrites::kSupported);
    EXPECT_TRUE(g_minio->client()->list_multipart_uploads(bucket_, "").empty());
  }
};

TEST_F(MinioStoreTest, BlobStoreContract) { check_blob_store_contract(*store()); }

TEST_F(MinioStoreTest, RacingWritersOfOneKeyNeverReplaceEachOtherSinglePut) { expect_second_writer_refused(100000); }

TEST_F(MinioStoreTest, RacingWritersOfOneKeyNeverReplaceEachOtherMultipart) {
  expect_second_writer_refused((11u << 20) + 7);  // three 5 MiB parts
}

// The CLI flow in 5 MiB parts (a ~12 MiB snapshot that does not compress): every part, the
// completion with If-None-Match, list, verify, restore, and the restored member's HashKV.
TEST_F(MinioStoreTest, SaveListVerifyRestoreEndToEndInParts) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 12000, 1000, 9);
  save_list_verify_restore(m);
  auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_GT(listed[0]["storedSize"].get<uint64_t>(), 5u << 20) << "fits one part: not a multipart upload";
}

// Retention on a bucket with versioning on: a prune deletes through delete markers, so listing,
// restore and the next save see only what the policy kept, while the bucket still holds the
// pruned backups as noncurrent versions (docs/operations.md: expire them with a lifecycle rule).
TEST_F(MinioStoreTest, PruneOnAVersionedBucketHidesWhatItDeletesAndKeepsVersions) {
  aws_json({"s3api", "put-bucket-versioning", "--bucket", bucket_, "--versioning-configuration", "Status=Enabled"});
  ASSERT_EQ(aws_json({"s3api", "get-bucket-versioning", "--bucket", bucket_})["Status"], "Enabled");

  auto& m = start_member();
  EtcdClient client(m.connection());
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    load_keys(client, "/registry/pods/round" + std::to_string(i) + "/", 50, 300);
    auto saved = cli_json(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}),
                          store_env());
    names.push_back(saved["name"]);
  }
  auto pruned = cli(with_store({"backup", "prune", "--policy", "count:1"}), store_env());
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;

  auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["name"], names[2]);
  auto restored = cli(with_store({"backup", "restore", "latest", "--output-file", dir_ / "latest.db"}), store_env());
  ASSERT_EQ(restored.exit_code, 0) << restored.output;

  // What the bucket holds, as aws sees it: a delete marker over every object of the two pruned
  // backups, each with its data still there as a noncurrent version.
  auto versions = aws_json({"s3api", "list-object-versions", "--bucket", bucket_, "--prefix", "backups/"});
  std::set<std::string> marked, noncurrent;
  for (const auto& d : versions.value("DeleteMarkers", nlohmann::json::array())) {
    if (d["IsLatest"].get<bool>()) marked.insert(d["Key"].get<std::string>());
  }
  for (const auto& v : versions.value("Versions", nlohmann::json::array())) {
    if (!v["IsLatest"].get<bool>()) noncurrent.insert(v["Key"].get<std::string>());
  }
  for (int i = 0; i < 2; ++i) {
    std::string meta = "backups/" + names[i] + "/_etcd_backup.meta";
    EXPECT_TRUE(marked.count(meta)) << meta << " has no delete marker";
    EXPECT_TRUE(noncurrent.count(meta)) << meta << " is not kept as a noncurrent version";
  }
  EXPECT_EQ(marked, noncurrent);
  for (const auto& k : marked) EXPECT_EQ(k.find(names[2]), std::string::npos) << "the kept backup was deleted: " << k;

  // A save after the prune lands beside the kept one.
  auto again = cli(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url()}), store_env());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(cli_json(with_store({"backup", "list", "-o", "json"}), store_env()).size(), 2u);
}

}  // namespace
}  // namespace etcdadm::test
