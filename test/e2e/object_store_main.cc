// The object-store test binary's servers (Swift s3api, MinIO, the firebase GCS emulator,
// fake-gcs-server, Azurite): each started when a test first asks for it, at most once per process
// (starting them per test would cost seconds each), and stopped after the last test. ctest runs
// this binary once per backend (test/CMakeLists.txt), so each entry starts only what it uses.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "test/support/etcd_versions.h"
#include "test/support/object_store_fixture.h"
#include "test/support/reaper.h"

namespace etcdadm::test {

namespace {

// One lazily started server of type T; stop() deletes it (its destructor stops the processes).
template <typename T>
class LazyServer {
 public:
  T* get() {
    std::call_once(once_, [this] { server_ = std::make_unique<T>(); });
    return server_.get();
  }
  void stop() { server_.reset(); }

 private:
  std::once_flag once_;
  std::unique_ptr<T> server_;
};

LazyServer<SwiftS3Server> g_swift;
LazyServer<GcsEmulator> g_gcs;
LazyServer<FakeGcsServer> g_fake_gcs;
LazyServer<MinioServer> g_minio;
LazyServer<AzuriteServer> g_azurite;

class ObjectServersEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    g_azurite.stop();
    g_minio.stop();
    g_fake_gcs.stop();
    g_gcs.stop();
    g_swift.stop();
  }
};

}  // namespace

SwiftS3Server* swift_server() { return g_swift.get(); }
GcsEmulator* gcs_emulator() { return g_gcs.get(); }
FakeGcsServer* fake_gcs_server() { return g_fake_gcs.get(); }
MinioServer* minio_server() { return g_minio.get(); }
AzuriteServer* azurite_server() { return g_azurite.get(); }

}  // namespace etcdadm::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  etcdadm::test::use_etcd_under_test();
  ::testing::AddGlobalTestEnvironment(new etcdadm::test::ObjectServersEnvironment());
  return etcdadm::test::run_tests_reaping_leftovers(argc, argv, [] {
    int code = RUN_ALL_TESTS();
    // A filter that matches nothing (a renamed suite) would otherwise pass having run nothing.
    if (code == 0 && ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
      std::fprintf(stderr, "object_store_tests: the filter matched no test\n");
      return 1;
    }
    return code;
  });
}
