// `etcdadm auto` on the object stores that decide conditional writes themselves: three controllers
// started at the same moment race to plan the cluster, and the store lets exactly one plan through
// (S3's If-None-Match on MinIO, GCS generation preconditions on fake-gcs-server, Azure's ETag
// conditions on Azurite); one cluster forms. The local store's race is in auto_test.cc.
#include <gtest/gtest.h>

#include <unistd.h>

#include "test/support/auto_fixture.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

class AutoOnObjectStores : public AutoFixture {
 protected:
  // Three fresh hosts on the store set in store_/store_flags_/store_env_, started together; one
  // plan, one cluster of three; then everything stopped for the next store.
  void race(const std::string& kind) {
    SCOPED_TRACE(kind + ": " + store_);
    for (auto& h : hosts_) {
      h.root = dir_ / (kind + "-" + h.name);
      h.client_port = free_port();
      h.peer_port = free_port();
    }
    ASSERT_NO_FATAL_FAILURE(make_ca());
    ASSERT_NO_FATAL_FAILURE(seed(3, {"--replace-after", "10m"}));
    for (const auto& h : hosts_) start_auto(h);  // no delay between them: the plan is raced for
    ASSERT_TRUE(eventually(std::chrono::seconds(90), [&] { return one_healthy_cluster(3); }, "one cluster of three"));
    int plans = 0;
    EXPECT_TRUE(eventually(std::chrono::seconds(10), [&] {
      plans = 0;
      for (const auto& e : events()) plans += e.action == "plan-cluster" && e.outcome == "done";
      return plans >= 1;
    }, "the plan's event"));
    EXPECT_EQ(plans, 1) << logs();
    nlohmann::json status;
    EXPECT_TRUE(eventually(std::chrono::seconds(20), [&] {
      status = auto_status();
      return status.value("clusterCreated", false);
    }, "the created marker"));
    EXPECT_EQ(status["plan"]["sequence"], 1) << status.dump(2);
    for (auto& [name, p] : autos_) EXPECT_EQ(p.stop(std::chrono::milliseconds(5000)), 0) << name;
    autos_.clear();
    for (const auto& h : hosts_) stop_pid_file(h.conf() + "/etcd.pid", bin_of(h) + "/etcd", std::chrono::milliseconds(3000));
  }
};

TEST_F(AutoOnObjectStores, ThreeControllersRacingToPlanMakeOneClusterOnMinioGcsAndAzure) {
  const std::string name = "auto-" + std::to_string(::getpid());
  minio_server()->create_bucket(name);
  store_ = "s3://" + name + "/cluster";
  store_flags_ = {"--s3-endpoint", minio_server()->endpoint()};
  store_env_ = minio_server()->env();
  ASSERT_NO_FATAL_FAILURE(race("minio"));

  fake_gcs_server()->create_bucket(name);
  store_ = "gs://" + name + "/cluster";
  store_flags_ = {};
  store_env_ = {{"STORAGE_EMULATOR_HOST", fake_gcs_server()->endpoint()}};
  ASSERT_NO_FATAL_FAILURE(race("fake-gcs-server"));

  azurite_server()->create_container(name);
  store_ = "azureblob://" + name + "/cluster";
  store_env_ = {{"AZURE_STORAGE_CONNECTION_STRING", azurite_server()->connection_string()}};
  ASSERT_NO_FATAL_FAILURE(race("azurite"));
}

}  // namespace
}  // namespace etcdadm::test
