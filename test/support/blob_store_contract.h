// The BlobStore contract every backend keeps (store/blob_store.h), checked on each: the object
// stores against their servers (object_store_tests), the local directory in the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "store/blob_capabilities.h"
#include "store/blob_store.h"

namespace etcdadm::test {

// The BlobStore contract every backend must keep (store/blob_store.h), on an empty store.
inline void check_blob_store_contract(BlobStore& s) {
  s.write_small("a/one.json", "{\"x\":1}");
  s.write_small("a/two words+plus.json", "{\"x\":2}");
  s.write_small("b/three", "3");
  EXPECT_EQ(s.read_small("a/one.json"), "{\"x\":1}");
  EXPECT_EQ(s.read_small("a/two words+plus.json"), "{\"x\":2}");
  auto st = s.stat("a/one.json");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->size, 7u);
  EXPECT_GT(st->modified_unix_micros, 0);
  EXPECT_FALSE(s.stat("a/missing").has_value());
  auto l = s.list("a/");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].key, "a/one.json");
  EXPECT_EQ(l[1].key, "a/two words+plus.json");
  // list_range: the keys strictly between its bounds, in order, whatever range the backend's API
  // takes (GCS's startOffset includes its bound; S3's start-after has no end).
  auto keys_of = [](const std::vector<BlobInfo>& blobs) {
    std::vector<std::string> out;
    for (const auto& b : blobs) out.push_back(b.key);
    return out;
  };
  EXPECT_EQ(keys_of(s.list_range("a/one.json", "b/three")), std::vector<std::string>{"a/two words+plus.json"});
  EXPECT_EQ(keys_of(s.list_range("0", "b")), (std::vector<std::string>{"a/one.json", "a/two words+plus.json"}));
  EXPECT_EQ(keys_of(s.list_range("a/p", "c")), (std::vector<std::string>{"a/two words+plus.json", "b/three"}));
  EXPECT_TRUE(s.list_range("b/three", "z").empty());
  EXPECT_THROW(s.write_small("a/one.json", "again"), Error);  // never a silent overwrite
  s.write_small("a/one.json", "{\"x\":3}", /*overwrite=*/true);
  EXPECT_EQ(s.read_small("a/one.json"), "{\"x\":3}");
  s.remove("a/one.json");
  s.remove("a/one.json");  // already gone: fine
  EXPECT_EQ(s.list("a/").size(), 1u);
  s.remove_many({"a/two words+plus.json", "b/three"});
  EXPECT_TRUE(s.list("").empty());
  try {
    s.open("a/one.json");
    ADD_FAILURE() << "expected kNotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  }
}

// The ConditionalWrites contract (store/blob_capabilities.h), on an empty store whose server
// enforces conditions: each precondition, the probe, and two races that a server deciding outside
// the one request would lose (one creator among eight; a counter that loses no increment).
inline void check_conditional_writes_contract(BlobStore& s) {
  ConditionalWrites& c = conditional_writes(s, "the contract test", "probe/conditional");
  EXPECT_TRUE(s.list("probe/").empty()) << "the probe removes what it wrote";
  EXPECT_FALSE(c.read_versioned("cas/one").has_value());
  auto v1 = c.write_if("cas/one", "first", "");
  ASSERT_TRUE(v1.has_value());
  EXPECT_FALSE(c.write_if("cas/one", "second", "").has_value()) << "create-if-absent over a blob";
  auto read = c.read_versioned("cas/one");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->contents, "first");
  EXPECT_EQ(read->version, *v1);
  auto v2 = c.write_if("cas/one", "third", *v1);
  ASSERT_TRUE(v2.has_value());
  EXPECT_NE(*v2, *v1);
  EXPECT_FALSE(c.write_if("cas/one", "fourth", *v1).has_value()) << "a write against a stale version";
  EXPECT_EQ(s.read_small("cas/one"), "third");

  // Eight creators, one winner.
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      if (c.write_if("cas/race", "creator " + std::to_string(i), "")) ++created;
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  EXPECT_EQ(created.load(), 1);

  // Four writers each add 5 to a counter by read, then write against what they read, retrying
  // when refused: every increment survives only if each write was decided against the version
  // the server held at that moment.
  ASSERT_TRUE(c.write_if("cas/counter", "0", "").has_value());
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int done = 0; done < 5;) {
        auto now = c.read_versioned("cas/counter");
        if (!now) continue;
        if (c.write_if("cas/counter", std::to_string(std::stoi(now->contents) + 1), now->version)) ++done;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.read_small("cas/counter"), "20");
}

// conditional_writes() refuses `s` for a lease (kInvalidArgument), saying `why`.
inline void expect_refused_for_leases(BlobStore& s, const std::string& why) {
  try {
    conditional_writes(s, "the create lease", "probe/conditional");
    ADD_FAILURE() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace etcdadm::test
