// main() of the unit and end-to-end test binaries: gtest's, after choosing the etcd under test
// (ETCDADM_TEST_ETCD; see etcd_versions.h) so that every child process finds that version on PATH,
// run under the reaper that kills and reports whatever the tests leave running (reaper.h).
#include <gtest/gtest.h>

#include "test/support/etcd_versions.h"
#include "test/support/reaper.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  etcdadm::test::use_etcd_under_test();
  return etcdadm::test::run_tests_reaping_leftovers(argc, argv, [] { return RUN_ALL_TESTS(); });
}
