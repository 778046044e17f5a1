// The GCS store against two GCS JSON API servers started once for this binary on loopback: the
// firebase Storage emulator (with the fault proxy for download resumption; it finalizes a
// resumable upload on its first PUT, so objects stay below one chunk there) and fake-gcs-server,
// which implements chunked resumable uploads (308 until the last chunk) and ifGenerationMatch, for
// the chunked path that otherwise only our protocol fixture (test/unit/gcs_fixture_test.cc) checks.
#include <gtest/gtest.h>

#include "common/error.h"
#include "store/backend/gcs/gcs_store.h"
#include "test/support/fault_proxy.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

class GcsStoreTest : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    bucket_ = "gcs-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
  }

  std::unique_ptr<GcsStore> store(const std::string& prefix = "backups", const std::string& endpoint = "") {
    GcsConfig c;
    c.endpoint = endpoint.empty() ? gcs_emulator()->endpoint() : endpoint;
    c.retry = RetryPolicy{5, std::chrono::milliseconds(20), std::chrono::milliseconds(200)};
    c.http.idle_timeout = std::chrono::milliseconds(3000);
    auto client = std::make_shared<GcsClient>(c, std::make_shared<GcsAuth>(nullptr));
    return std::make_unique<GcsStore>(client, bucket_, prefix);
  }

  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", "gs://" + bucket_ + "/" + prefix};
  }
  RunOptions store_env() const override {
    RunOptions o;
    o.env["STORAGE_EMULATOR_HOST"] = gcs_emulator()->endpoint();
    return o;
  }
};

TEST_F(GcsStoreTest, BlobStoreContract) { check_blob_store_contract(*store()); }

// The Firebase emulator takes ifGenerationMatch and ignores it: the probe finds out, so a lease is
// never built on a condition nobody checks.
TEST_F(GcsStoreTest, AServerThatIgnoresPreconditionsIsRefusedForLeases) {
  auto s = store();
  expect_refused_for_leases(*s, "the create lease needs a store that enforces conditional writes; ");
  expect_refused_for_leases(*s, "replaced the first");
  EXPECT_TRUE(s->list("probe/").empty());
}

TEST_F(GcsStoreTest, ListingPaginates) {
  auto s = store("p");
  for (int i = 0; i < 5; ++i) s->write_small("k" + std::to_string(i), "v");
  GcsClient client(GcsConfig{gcs_emulator()->endpoint(), {}, {}}, std::make_shared<GcsAuth>(nullptr));
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    GcsListPage page = client.list(bucket_, "p/", token, 2);
    for (auto& o : page.objects) names.push_back(o.name);
    token = page.next_page_token;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"p/k0", "p/k1", "p/k2", "p/k3", "p/k4"}));
  EXPECT_EQ(s->list("").size(), 5u);
}

TEST_F(GcsStoreTest, DownloadResumesAfterDroppedConnections) {
  std::string data = random_bytes(6u << 20, 21);
  store()->write_small("down.bin", data);
  FaultProxy proxy("127.0.0.1", port_of(gcs_emulator()->endpoint()));
  using F = FaultProxy::Fault;
  proxy.queue({{F::kResetAfterDownload, 2u << 20}, {F::kHttp503}, {F::kResetAfterDownload, 1u << 20}});
  auto r = store("backups", proxy.url())->open("down.bin");
  EXPECT_TRUE(read_all(*r) == data);
  EXPECT_EQ(proxy.faults_injected(), 3);
}

TEST_F(GcsStoreTest, SaveListVerifyRestoreEndToEnd) { save_list_verify_restore(); }

TEST_F(GcsStoreTest, EncryptedContinuousBackupRestoresToAnyPointInTime) {
  AgeFlags age = age_flags();
  continuous_backup_and_point_in_time_restore(age.save, age.read);
}

TEST_F(GcsStoreTest, EncryptedSaveListVerifyRestoreEndToEnd) {
  auto [age, backup] = encrypted_save_list_verify_restore("/registry/pods/", 300, 700);
  // Without the identity: refused naming the recipient, nothing written.
  auto refused = cli(with_store({"backup", "restore", "latest", "--output-file", dir_ / "x.db"}), store_env());
  EXPECT_EQ(refused.exit_code, 7) << refused.output;
  EXPECT_NE(refused.output.find(age.recipient), std::string::npos) << refused.output;
  EXPECT_FALSE(path_exists(dir_ / "x.db"));
}

class FakeGcsServerTest : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    bucket_ = "fake-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
    fake_gcs_server()->create_bucket(bucket_);
  }

  std::unique_ptr<GcsStore> store(size_t chunk_size) {
    GcsConfig c;
    c.endpoint = fake_gcs_server()->endpoint();
    c.retry = RetryPolicy{3, std::chrono::milliseconds(20), std::chrono::milliseconds(200)};
    return std::make_unique<GcsStore>(std::make_shared<GcsClient>(c, std::make_shared<GcsAuth>(nullptr)), bucket_,
                                      "backups", chunk_size);
  }

  // 5 MiB chunks (--upload-part-size' smallest): the ~9 MiB backup below goes up in two.
  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", "gs://" + bucket_ + "/" + prefix, "--upload-part-size", "5"};
  }
  RunOptions store_env() const override {
    RunOptions o;
    o.env["STORAGE_EMULATOR_HOST"] = fake_gcs_server()->endpoint();
    return o;
  }
};

TEST_F(FakeGcsServerTest, BlobStoreContract) { check_blob_store_contract(*store(256u << 10)); }

TEST_F(FakeGcsServerTest, ConditionalWritesContract) { check_conditional_writes_contract(*store(256u << 10)); }

TEST_F(FakeGcsServerTest, ChunkedResumableUploadIsAtomicAndNeverOverwrites) {
  auto s = store(256u << 10);  // GCS's chunk quantum
  std::string data = random_bytes((5u << 20) + 123, 5);
  {
    auto w = s->create("big.bin", /*overwrite=*/false);
    // Odd-sized writes: the writer must cut whole 256 KiB chunks whatever the callers hand it.
    for (size_t off = 0; off < data.size(); off += 100003) {
      size_t n = std::min<size_t>(100003, data.size() - off);
      w->write(reinterpret_cast<const uint8_t*>(data.data() + off), n);
      if (off == 0) {
        EXPECT_FALSE(s->stat("big.bin").has_value()) << "visible before the last chunk";
      }
    }
    EXPECT_FALSE(s->stat("big.bin").has_value()) << "visible before commit";
    w->commit();
  }
  auto st = s->stat("big.bin");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->size, data.size());
  EXPECT_TRUE(read_all(*s->open("big.bin")) == data);

  // ifGenerationMatch=0 on the session: the server refuses to replace what is there.
  try {
    auto again = s->create("big.bin", /*overwrite=*/false);
    std::string other = random_bytes(1u << 20, 6);
    again->write(reinterpret_cast<const uint8_t*>(other.data()), other.size());
    again->commit();
    ADD_FAILURE() << "a second upload replaced the object";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists) << e.what();
  }
  EXPECT_TRUE(read_all(*s->open("big.bin")) == data);

  // An upload abandoned after some chunks never becomes an object.
  {
    auto w = s->create("abandoned.bin", /*overwrite=*/false);
    w->write(reinterpret_cast<const uint8_t*>(data.data()), 3u << 20);
    w->abort();
  }
  EXPECT_FALSE(s->stat("abandoned.bin").has_value());
}

TEST_F(FakeGcsServerTest, EncryptedSaveListVerifyRestoreEndToEndInChunks) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 12000, 1000, 9);  // ~12 MiB of values that do not compress
  // Encrypted: age's 64 KiB chunks cross the upload's 5 MiB chunks.
  AgeFlags age = age_flags();
  save_list_verify_restore(m, age.save, age.read);
  auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["encryption"], "age");
  EXPECT_GT(listed[0]["storedSize"].get<uint64_t>(), 5u << 20) << "fits one 5 MiB chunk: not a chunked upload";
}

// A bucket with object versioning keeps each deleted object as a noncurrent generation. A prune
// with --keep-noncurrent-versions leaves them (for the bucket's lifecycle rule); a default prune
// deletes those generations too, and the earlier prune's with them.
// Stores at scale (issue 15) on fake-gcs-server, which implements startOffset and endOffset (the
// firebase emulator ignores them and answers a range listing with every page). 2,000 backups, not
// the 10,000 of the S3 servers: this server's time grows with the square of the objects it holds
// (1,000: 4 s, 2,000: 14 s, 10,000: 293 s here), and the request counts do not depend on the number
// beyond the pages of a full listing (the catalog syncs incrementally from 1,000 backups on).
// A scale case: a benchmark with a correctness check, in the full tier only (test/CMakeLists.txt
// runs *Scale.* once, on the newest minor; docs/testing.md).
class FakeGcsServerScale : public FakeGcsServerTest {};

TEST_F(FakeGcsServerScale, TwoThousandBackupsListWarmInTwoRequestsAndAResyncSeesADeletion) {
  constexpr int kBackups = 2000;
  FaultProxy proxy("127.0.0.1", port_of(fake_gcs_server()->endpoint()));
  RunOptions via_proxy = store_env();
  via_proxy.env["STORAGE_EMULATOR_HOST"] = proxy.url();
  list_many_backups_through_proxy(kBackups, [&] { return store(256u << 10); }, proxy, store_flags(), via_proxy,
                                  {.page = "/o?maxResults=", .range_start = "startOffset=", .metadata_read = "_etcd_backup.meta?alt=media"});
}

TEST_F(FakeGcsServerTest, PruneOnAVersionedBucketDeletesEveryGenerationOfWhatItDeletes) {
  bucket_ += "-versioned";
  fake_gcs_server()->create_bucket(bucket_, /*versioning=*/true);
  auto& m = start_member();
  EtcdClient client(m.connection());
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    load_keys(client, "/registry/pods/round" + std::to_string(i) + "/", 50, 300);
    names.push_back(cli_json(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}),
                             store_env())["backup"]);
  }
  GcsConfig c;
  c.endpoint = fake_gcs_server()->endpoint();
  GcsClient gcs(c, std::make_shared<GcsAuth>(nullptr));
  auto generations = [&](const std::string& name, bool noncurrent) {
    int n = 0;
    for (const auto& o : gcs.list(bucket_, "backups/" + name + "/", "", 1000, /*versions=*/true).objects) n += o.noncurrent == noncurrent;
    return n;
  };
  auto kept = cli(with_store({"backup", "prune", "--policy", "count:2", "--keep-noncurrent-versions"}), store_env());
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_EQ(generations(names[0], false), 0);
  EXPECT_GE(generations(names[0], true), 2) << "the bucket keeps what the prune deleted";

  auto pruned = cli_json(with_store({"backup", "prune", "--policy", "count:1", "-o", "json"}), store_env());
  EXPECT_EQ(pruned["deleted"], nlohmann::json::array({names[1]}));
  EXPECT_GE(pruned["noncurrentVersionsRemoved"].get<int>(), 4) << pruned.dump();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(generations(names[i], true) + generations(names[i], false), 0) << names[i];
  }
  EXPECT_GE(generations(names[2], false), 2) << "the kept backup is untouched";
  EXPECT_EQ(generations(names[2], true), 0);
  auto restored = cli(with_store({"backup", "restore", "latest", "--output-file", dir_ / "latest.db"}), store_env());
  EXPECT_EQ(restored.exit_code, 0) << restored.output;
}

}  // namespace
}  // namespace etcdadm::test
