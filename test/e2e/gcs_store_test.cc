// The GCS store against the firebase Storage emulator's GCS JSON API (started once for this binary
// on loopback), with the fault proxy for download resumption. The emulator finalizes a resumable
// upload on its first PUT, so chunked uploads are tested against a protocol fixture instead
// (test/unit/gcs_fixture_test.cc); here objects stay below one chunk.
#include <gtest/gtest.h>

#include "common/error.h"
#include "store/gcs_store.h"
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
    c.endpoint = endpoint.empty() ? g_gcs->endpoint() : endpoint;
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
    o.env["STORAGE_EMULATOR_HOST"] = g_gcs->endpoint();
    return o;
  }
};

TEST_F(GcsStoreTest, BlobStoreContract) { check_blob_store_contract(*store()); }

TEST_F(GcsStoreTest, ListingPaginates) {
  auto s = store("p");
  for (int i = 0; i < 5; ++i) s->write_small("k" + std::to_string(i), "v");
  GcsClient client(GcsConfig{g_gcs->endpoint(), {}, {}}, std::make_shared<GcsAuth>(nullptr));
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
  FaultProxy proxy("127.0.0.1", std::stoi(g_gcs->endpoint().substr(g_gcs->endpoint().rfind(':') + 1)));
  using F = FaultProxy::Fault;
  proxy.queue({{F::kResetAfterDownload, 2u << 20}, {F::kHttp503}, {F::kResetAfterDownload, 1u << 20}});
  auto r = store("backups", proxy.url())->open("down.bin");
  EXPECT_TRUE(read_all(*r) == data);
  EXPECT_EQ(proxy.faults_injected(), 3);
}

TEST_F(GcsStoreTest, SaveListVerifyRestoreEndToEnd) { save_list_verify_restore(); }

}  // namespace
}  // namespace etcdadm::test
