// One Swift s3api server, one MinIO, one GCS emulator, one fake-gcs-server and one Azurite for the whole object-store test binary (starting
// them per test would cost seconds each); every test uses its own bucket.
#include <gtest/gtest.h>

#include "test/support/etcd_versions.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {

SwiftS3Server* g_swift = nullptr;
GcsEmulator* g_gcs = nullptr;
FakeGcsServer* g_fake_gcs = nullptr;
MinioServer* g_minio = nullptr;
AzuriteServer* g_azurite = nullptr;

namespace {

class ObjectServersEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_swift = new SwiftS3Server();
    g_gcs = new GcsEmulator();
    g_fake_gcs = new FakeGcsServer();
    g_minio = new MinioServer();
    g_azurite = new AzuriteServer();
  }
  void TearDown() override {
    delete g_azurite;
    g_azurite = nullptr;
    delete g_minio;
    g_minio = nullptr;
    delete g_fake_gcs;
    g_fake_gcs = nullptr;
    delete g_gcs;
    delete g_swift;
    g_gcs = nullptr;
    g_swift = nullptr;
  }
};

}  // namespace
}  // namespace etcdadm::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  etcdadm::test::use_etcd_under_test();
  ::testing::AddGlobalTestEnvironment(new etcdadm::test::ObjectServersEnvironment());
  return RUN_ALL_TESTS();
}
