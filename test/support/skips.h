// Skips that cannot hide (docs/testing.md, "Skips"). A test skips itself only through these two,
// never with a bare GTEST_SKIP (test/CMakeLists.txt refuses one at configure time):
//
//   ETCDADM_SKIP_OUTSIDE_CI() << "why";  for a reason the CI machine never has: a tool that
//       scripts/install-deps.sh installs, a pinned etcd that scripts/etcd-versions.sh builds, root.
//   ETCDADM_SKIP_BY_DESIGN() << "why";   for a (test, minor) pair that E2E_SKIPS_BY_DESIGN in
//       test/CMakeLists.txt declares. ctest never runs such a pair (it lists it as disabled), so a
//       run that reaches this line under CI is one where the table and the test disagree.
//
// Under CI=true (what .ci/run sets) both fail the test instead of skipping it: a green CI run is
// one in which every registered test ran. Elsewhere they skip, and ctest shows them as skipped.
#pragma once

#include <gtest/gtest.h>

namespace etcdadm::test {

// CI is set to "true" (any value but "", "0" and "false").
bool running_under_ci();

}  // namespace etcdadm::test

// Both expand to what GTEST_SKIP() and GTEST_FAIL() expand to (a `return` of gtest's assertion
// helper), with the result type chosen at run time, so that the streamed reason reaches the report
// either way.
#define ETCDADM_SKIP_UNLESS_CI_(ci_summary)                                                            \
  return ::testing::internal::AssertHelper(::etcdadm::test::running_under_ci()                          \
                                               ? ::testing::TestPartResult::kFatalFailure               \
                                               : ::testing::TestPartResult::kSkip,                      \
                                           __FILE__, __LINE__,                                          \
                                           ::etcdadm::test::running_under_ci() ? ci_summary : "") =     \
      ::testing::Message()

#define ETCDADM_SKIP_OUTSIDE_CI() \
  ETCDADM_SKIP_UNLESS_CI_("CI is set, so this skip fails: the CI machine must have what the test needs")

#define ETCDADM_SKIP_BY_DESIGN()                                                                  \
  ETCDADM_SKIP_UNLESS_CI_("CI is set, so this skip fails: test/CMakeLists.txt's E2E_SKIPS_BY_DESIGN " \
                          "does not declare it for this minor, or ctest would not have run it")
