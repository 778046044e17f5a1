// The robustness harness's linearizability checker (test/go-tools/lincheck, porcupine's algorithm
// over a key-value model) on histories whose verdict is known by hand: a checker that called
// everything linearizable would make every schedule of the harness pass.
#include <gtest/gtest.h>

#include <string>

#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/object_servers.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

struct Verdict {
  int exit_code;
  std::string output;
};

Verdict check(const std::string& history) {
  test::TempDir dir;
  write_file_atomic(dir / "history.jsonl", history);
  auto r = run_process({test::go_test_tool("lincheck"), dir / "history.jsonl"});
  return {r.exit_code, r.output};
}

std::string op(int client, const std::string& kind, const std::string& key, const std::string& value, int64_t call,
               int64_t ret, const std::string& outcome = "ok", bool found = true, const std::string& extra = "") {
  return "{\"client\":" + std::to_string(client) + ",\"op\":\"" + kind + "\",\"key\":\"" + key + "\",\"value\":\"" +
         value + "\",\"call\":" + std::to_string(call) + ",\"return\":" + std::to_string(ret) + ",\"outcome\":\"" +
         outcome + "\",\"found\":" + (found ? "true" : "false") + extra + "}\n";
}

TEST(LinCheck, KnownHistoriesGetTheirKnownVerdicts) {
  const std::string written = op(1, "put", "k", "v1", 0, 10) + op(1, "put", "k", "v2", 20, 30);
  // Read after both writes returned: only v2 explains it.
  Verdict v = check(written + op(2, "get", "k", "v2", 40, 50));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("linearizable (3 operations)"), std::string::npos) << v.output;
  v = check(written + op(2, "get", "k", "v1", 40, 50));
  EXPECT_EQ(v.exit_code, 1) << "a stale read: " << v.output;
  EXPECT_NE(v.output.find("not linearizable"), std::string::npos) << v.output;
  // A read overlapping the second write may see either.
  EXPECT_EQ(check(op(1, "put", "k", "v1", 0, 10) + op(1, "put", "k", "v2", 20, 60) + op(2, "get", "k", "v1", 30, 40))
                .exit_code,
            0);
  // A write whose answer was lost may have happened, or not, but not before its call.
  const std::string lost = written + op(3, "put", "k", "v3", 70, 0, "unknown");
  EXPECT_EQ(check(lost + op(2, "get", "k", "v3", 100, 110)).exit_code, 0);
  EXPECT_EQ(check(lost + op(2, "get", "k", "v2", 100, 110)).exit_code, 0);
  EXPECT_EQ(check(op(3, "put", "k", "v3", 70, 0, "unknown") + op(2, "get", "k", "v3", 10, 20)).exit_code, 1)
      << "seen before it was sent";
  // A key never written reads absent; a deleted one too.
  EXPECT_EQ(check(op(1, "get", "x", "", 0, 5, "ok", false)).exit_code, 0);
  EXPECT_EQ(check(op(1, "get", "x", "v", 0, 5)).exit_code, 1);
  EXPECT_EQ(check(written + op(1, "delete", "k", "", 35, 38) + op(2, "get", "k", "", 40, 50, "ok", false)).exit_code, 0);
  // A transaction: compare-and-set succeeds only on the value compared.
  EXPECT_EQ(check(written + op(2, "cas", "k", "v3", 40, 50, "ok", true, ",\"expect\":\"v2\"") +
                  op(1, "get", "k", "v3", 60, 70))
                .exit_code,
            0);
  EXPECT_EQ(check(written + op(2, "cas", "k", "v3", 40, 50, "ok", true, ",\"expect\":\"v1\"")).exit_code, 1);
  EXPECT_EQ(check(written + op(2, "cas", "k", "v3", 40, 50, "failed", true, ",\"expect\":\"v2\"")).exit_code, 1);
  // An unknown write a failed transaction after it may need stays in: the compare failed because
  // v3 took effect.
  EXPECT_EQ(check(written + op(3, "put", "k", "v3", 40, 0, "unknown") +
                  op(2, "cas", "k", "v4", 60, 70, "failed", true, ",\"expect\":\"v2\""))
                .exit_code,
            0);
  // Keys are independent: a stale read of one is found among writes of others.
  EXPECT_EQ(check(written + op(3, "put", "j", "w", 0, 100) + op(2, "get", "k", "v1", 40, 50)).exit_code, 1);
  // Bad input: exit 2, never a verdict.
  v = check("{\"client\":1,\"op\":\"scan\",\"key\":\"k\",\"call\":0,\"return\":1,\"outcome\":\"ok\"}\n");
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_EQ(check("not json\n").exit_code, 2);
  EXPECT_EQ(check(op(1, "put", "k", "v", 10, 5)).exit_code, 2) << "returns before its call";
}

// What a cluster without quorum leaves: hundreds of writes that timed out, by many clients, none
// of them ever read. They are left out (they may never have happened), so the verdict comes at
// once instead of porcupine's search exploding; one that was read stays and still decides.
TEST(LinCheck, UnknownWritesNobodySawAreLeftOutAndTheVerdictComesAtOnce) {
  std::string history = op(1, "put", "k", "v0", 0, 10);
  for (int i = 0; i < 400; ++i) {
    history += op(2 + i % 16, i % 5 == 0 ? "cas" : "put", "k", "lost" + std::to_string(i), 20 + i, 0, "unknown", true,
                  i % 5 == 0 ? ",\"expect\":\"v0\"" : "");
  }
  Verdict v = check(history + op(1, "get", "k", "v0", 1000, 1010));
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("linearizable (2 operations)"), std::string::npos) << v.output;
  v = check(history + op(1, "get", "k", "lost7", 1000, 1010) + op(1, "get", "k", "v0", 1020, 1030));
  EXPECT_EQ(v.exit_code, 1) << "lost7 was read, then the value before it: " << v.output;
}

}  // namespace
}  // namespace etcdadm
