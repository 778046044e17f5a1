// The S3 store against MinIO (single drive, loopback, started once for this binary): a second S3
// server beside Swift's s3api, with what Swift lacks: conditional writes (If-None-Match: *) and
// versioned buckets. /usr/bin/aws is the oracle for what the bucket really holds.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "store/backend/s3/s3_store.h"
#include "test/support/fault_proxy.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

class MinioStoreTest : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    bucket_ = "minio-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
    minio_server()->create_bucket(bucket_);
  }

  // A client of its own per store, so that what it learns about the server is this test's.
  std::unique_ptr<S3Store> store(std::shared_ptr<S3Client> client = minio_server()->client(), size_t part_size = 5u << 20) {
    S3StoreOptions o;
    o.part_size = part_size;
    return std::make_unique<S3Store>(std::move(client), bucket_, "backups", o);
  }

  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", "s3://" + bucket_ + "/" + prefix, "--s3-endpoint", minio_server()->endpoint(), "--upload-part-size", "5"};
  }
  RunOptions store_env() const override {
    RunOptions o;
    o.env = minio_server()->env();
    return o;
  }

  AwsCli aws() const { return AwsCli(dir_.path(), minio_server()->endpoint(), minio_server()->env()); }
  nlohmann::json aws_json(const std::vector<std::string>& args) const {
    auto r = aws().run(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output.empty() ? nlohmann::json::object() : nlohmann::json::parse(r.output);
  }

  // Two writers of the same key that both passed the check before the upload, as two saves racing
  // would: the second to finish must fail and leave the first one's object as it was.
  void expect_second_writer_refused(size_t bytes) {
    auto client = minio_server()->client();
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
    EXPECT_TRUE(minio_server()->client()->list_multipart_uploads(bucket_, "").empty());
  }
};

TEST_F(MinioStoreTest, BlobStoreContract) { check_blob_store_contract(*store()); }

TEST_F(MinioStoreTest, ConditionalWritesContract) { check_conditional_writes_contract(*store()); }

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

// Object Lock, enforced by the server: backups saved with --object-lock-days carry a retention
// that MinIO refuses to let anyone delete (the oracle: a version delete through /usr/bin/aws is
// refused), and prune, whose policy would delete them, keeps them, says until when, and goes on
// with what it may delete. A bucket without Object Lock refuses such a save with a clear message.
TEST_F(MinioStoreTest, ObjectLockedBackupsAreKeptByTheServerAndPruneSaysUntilWhen) {
  const std::string locked_bucket = bucket_ + "-locked";
  aws_json({"s3api", "create-bucket", "--bucket", locked_bucket, "--object-lock-enabled-for-bucket"});
  auto flags = [&](std::vector<std::string> args) {
    for (const auto& f : std::vector<std::string>{"--store", "s3://" + locked_bucket + "/backups", "--s3-endpoint",
                                                  minio_server()->endpoint()}) {
      args.push_back(f);
    }
    return args;
  };
  auto& m = start_member();
  EtcdClient client(m.connection());
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    load_keys(client, "/registry/pods/lock" + std::to_string(i) + "/", 30, 300);
    std::vector<std::string> lock = {"--object-lock-days", "1"};
    if (i == 1) lock = {"--object-lock-days", "1", "--object-lock-mode", "governance"};
    if (i == 2) lock = {};  // the newest without a lock of its own
    std::vector<std::string> args = {"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"};
    args.insert(args.end(), lock.begin(), lock.end());
    auto saved = cli_json(flags(args), store_env());
    names.push_back(saved["backup"]);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // names have one-second resolution
  }
  const std::string data_key = "backups/" + names[0] + "/etcd.backup.gz";
  auto head = aws_json({"s3api", "head-object", "--bucket", locked_bucket, "--key", data_key});
  EXPECT_EQ(head["ObjectLockMode"], "COMPLIANCE") << head.dump(2);
  ASSERT_TRUE(head.contains("ObjectLockRetainUntilDate")) << head.dump(2);
  EXPECT_EQ(aws_json({"s3api", "head-object", "--bucket", locked_bucket, "--key",
                      "backups/" + names[1] + "/etcd.backup.gz"})["ObjectLockMode"],
            "GOVERNANCE");

  // The server refuses to delete the locked version, whoever asks.
  const std::string version = head["VersionId"];
  auto refused = aws().run({"s3api", "delete-object", "--bucket", locked_bucket, "--key", data_key, "--version-id", version});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  // AWS answers AccessDenied; MinIO "Object is WORM protected and cannot be overwritten".
  EXPECT_TRUE(refused.output.find("AccessDenied") != std::string::npos ||
              refused.output.find("WORM protected") != std::string::npos)
      << refused.output;

  // Prune to one backup: the two locked ones stay, reported with their date, and the bucket still
  // lists all three (no delete marker hides them).
  auto pruned = cli(flags({"backup", "prune", "--policy", "count:1", "-o", "json"}), store_env());
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  auto j = nlohmann::json::parse(pruned.output.substr(pruned.output.find('{')));
  ASSERT_EQ(j["locked"].size(), 2u) << j.dump(2);
  const std::string until_date = head["ObjectLockRetainUntilDate"].get<std::string>().substr(0, 10);
  for (const auto& l : j["locked"]) {
    EXPECT_NE(l["kept"].get<std::string>().find("kept until " + until_date), std::string::npos) << l.dump();
  }
  EXPECT_NE(j["locked"][0]["kept"].get<std::string>().find("mode"), std::string::npos);
  EXPECT_TRUE(j["deleted"].empty()) << j.dump(2);
  auto listed = cli_json(flags({"backup", "list", "-o", "json"}), store_env());
  EXPECT_EQ(listed.size(), 3u) << listed.dump(2);
  auto table = cli(flags({"backup", "prune", "--policy", "count:1"}), store_env());
  EXPECT_NE(table.output.find("locked by the store, kept until " + until_date), std::string::npos) << table.output;

  // A bucket without Object Lock: the save is refused, and says what to do.
  auto plain = cli(with_store({"backup", "save", "--endpoints", m.client_url(), "--object-lock-days", "1"}), store_env());
  EXPECT_NE(plain.exit_code, 0) << plain.output;
  EXPECT_NE(plain.output.find("Object Lock"), std::string::npos) << plain.output;
}

// Retention on a bucket with versioning on. With --keep-noncurrent-versions a prune deletes through
// delete markers and leaves the pruned backups as noncurrent versions (for the bucket's lifecycle
// rule); by default it then removes every noncurrent version and delete marker, as etcd-manager's
// RemoveAllVersions does, and finishes what an earlier prune left. /usr/bin/aws lists what is left.
TEST_F(MinioStoreTest, PruneOnAVersionedBucketRemovesEveryVersionOfWhatItDeletes) {
  aws_json({"s3api", "put-bucket-versioning", "--bucket", bucket_, "--versioning-configuration", "Status=Enabled"});
  ASSERT_EQ(aws_json({"s3api", "get-bucket-versioning", "--bucket", bucket_})["Status"], "Enabled");

  auto& m = start_member();
  EtcdClient client(m.connection());
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    load_keys(client, "/registry/pods/round" + std::to_string(i) + "/", 50, 300);
    auto saved = cli_json(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}),
                          store_env());
    names.push_back(saved["backup"]);
  }
  struct Held {
    std::set<std::string> current, noncurrent, markers;
  };
  auto held = [&] {
    Held h;
    auto versions = aws_json({"s3api", "list-object-versions", "--bucket", bucket_, "--prefix", "backups/"});
    for (const auto& d : versions.value("DeleteMarkers", nlohmann::json::array())) h.markers.insert(d["Key"].get<std::string>());
    for (const auto& v : versions.value("Versions", nlohmann::json::array())) {
      (v["IsLatest"].get<bool>() ? h.current : h.noncurrent).insert(v["Key"].get<std::string>());
    }
    return h;
  };
  auto under = [](const std::set<std::string>& keys, const std::string& name) {
    return std::count_if(keys.begin(), keys.end(), [&](const std::string& k) { return k.find(name) != std::string::npos; });
  };

  auto kept = cli(with_store({"backup", "prune", "--policy", "count:2", "--keep-noncurrent-versions"}), store_env());
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_NE(kept.output.find("lifecycle rule"), std::string::npos) << kept.output;
  Held h = held();
  EXPECT_GE(under(h.markers, names[0]), 2) << "data file and metadata deleted through delete markers";
  EXPECT_EQ(under(h.noncurrent, names[0]), under(h.markers, names[0])) << "each kept as a noncurrent version";
  EXPECT_EQ(under(h.current, names[0]), 0);

  auto pruned = cli_json(with_store({"backup", "prune", "--policy", "count:1", "-o", "json"}), store_env());
  EXPECT_EQ(pruned["deleted"], nlohmann::json::array({names[1]}));
  EXPECT_TRUE(pruned["versionedBucket"].get<bool>());
  EXPECT_GE(pruned["noncurrentVersionsRemoved"].get<int>(), 8) << pruned.dump();
  h = held();
  EXPECT_TRUE(h.markers.empty()) << *h.markers.begin();
  EXPECT_TRUE(h.noncurrent.empty()) << *h.noncurrent.begin();
  EXPECT_EQ(under(h.current, names[0]) + under(h.current, names[1]), 0);
  EXPECT_GE(under(h.current, names[2]), 2) << "the kept backup is untouched";

  auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["backup"], names[2]);
  auto restored = cli(with_store({"backup", "restore", "latest", "--output-file", dir_ / "latest.db"}), store_env());
  ASSERT_EQ(restored.exit_code, 0) << restored.output;
  auto again = cli(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url()}), store_env());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(cli_json(with_store({"backup", "list", "-o", "json"}), store_env()).size(), 2u);
}

// A rekey on a versioned bucket: the replaced data file would live on as a noncurrent version that
// the retired key still opens. After the rekey, no version of the backup is left that the new key
// cannot open, and the old identity opens nothing.
TEST_F(MinioStoreTest, RekeyOnAVersionedBucketLeavesNoVersionTheRetiredKeyOpens) {
  aws_json({"s3api", "put-bucket-versioning", "--bucket", bucket_, "--versioning-configuration", "Status=Enabled"});
  auto [old_key, backup] = encrypted_save_list_verify_restore("/registry/secrets/", 100, 200);
  std::string name = backup["backup"];
  AgeFlags new_key;
  {
    auto gen = run_process({"age-keygen", "-o", dir_ / "new-key.txt"});
    ASSERT_EQ(gen.exit_code, 0) << gen.output;
    new_key.identity_file = dir_ / "new-key.txt";
    auto pub = run_process({"age-keygen", "-y", new_key.identity_file});
    new_key.recipient = pub.output.substr(0, pub.output.find('\n'));
  }
  auto r = cli_json(with_store({"backup", "rekey", "--all", "--encrypt-to", new_key.recipient, "--identity",
                                old_key.identity_file, "-o", "json"}),
                    store_env());
  EXPECT_EQ(r["rekeyed"], nlohmann::json::array({name}));
  EXPECT_GE(r["oldVersionsRemoved"].get<int>(), 1) << r.dump();
  auto versions = aws_json({"s3api", "list-object-versions", "--bucket", bucket_, "--prefix", "backups/" + name + "/"});
  EXPECT_TRUE(versions.value("DeleteMarkers", nlohmann::json::array()).empty()) << versions.dump();
  for (const auto& v : versions.value("Versions", nlohmann::json::array())) {
    EXPECT_TRUE(v["IsLatest"].get<bool>()) << "a replaced version is left: " << v.dump();
  }
  // Every version of the data file there is opens with the new key only.
  std::string data = "backups/" + name + "/etcd.backup.gz.age";
  ASSERT_EQ(aws().run({"s3", "cp", "s3://" + bucket_ + "/" + data, dir_ / "now.age"}).exit_code, 0);
  EXPECT_EQ(run_process({"age", "-d", "-i", new_key.identity_file, "-o", dir_ / "now.gz", dir_ / "now.age"}).exit_code, 0);
  EXPECT_NE(run_process({"age", "-d", "-i", old_key.identity_file, "-o", dir_ / "old.gz", dir_ / "now.age"}).exit_code, 0);
}

// A scale case: a benchmark with a correctness check, in the full tier only (test/CMakeLists.txt
// runs *Scale.* once, on the newest minor; docs/testing.md).
class MinioStoreScale : public MinioStoreTest {};

TEST_F(MinioStoreScale, TenThousandBackupsListWarmInTwoRequestsAndPruneDeletesThemInBatches) {
  FaultProxy proxy("127.0.0.1", port_of(minio_server()->endpoint()));
  const std::vector<std::string> via_proxy = {"--store", "s3://" + bucket_ + "/backups", "--s3-endpoint", proxy.url()};
  auto names = list_many_backups_through_proxy(
      10000, [&] { return store(); }, proxy, via_proxy, store_env(),
      {.page = "list-type=2", .range_start = "start-after=", .metadata_read = "_etcd_backup.meta HTTP"});

  // A prune to the newest 1,000 of the 9,999 left: DeleteObjects of 1,000 keys each, first every
  // pruned backup's _etcd_backup.meta (what makes it listed), then its data file: 18 requests.
  proxy.clear_requests();
  std::vector<std::string> args = {"--log-level", "warn", "backup", "prune", "--policy", "count:1000"};
  args.insert(args.end(), via_proxy.begin(), via_proxy.end());
  auto pruned = cli(args, store_env());
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  auto reqs = proxy.requests();
  auto counted = [&](const std::string& method, const std::string& what) {
    return std::count_if(reqs.begin(), reqs.end(),
                         [&](const std::string& r) { return r.rfind(method + " ", 0) == 0 && r.find(what) != std::string::npos; });
  };
  EXPECT_EQ(counted("POST", "?delete"), 18) << ::testing::PrintToString(reqs);
  EXPECT_EQ(counted("DELETE", ""), 0);
  std::set<std::string> kept;
  auto left = store()->list("");
  for (const auto& b : left) kept.insert(b.key.substr(0, b.key.find('/')));
  EXPECT_EQ(left.size(), 2000u);
  EXPECT_EQ(kept, std::set<std::string>(names.end() - 1000, names.end()));
  // The oracle agrees: what aws lists under the prefix is those 1,000 backups' 2,000 objects.
  EXPECT_EQ(aws_json({"s3api", "list-objects-v2", "--bucket", bucket_, "--prefix", "backups/", "--query", "length(Contents)",
                      "--output", "json"}),
            2000);
}

}  // namespace
}  // namespace etcdadm::test
