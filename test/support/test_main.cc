// main() of the unit and end-to-end test binaries: gtest's, after choosing the etcd under test
// (ETCDADM_TEST_ETCD; see etcd_versions.h) so that every child process finds that version on PATH.
#include <gtest/gtest.h>

#include "test/support/etcd_versions.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  etcdadm::test::use_etcd_under_test();
  return RUN_ALL_TESTS();
}
