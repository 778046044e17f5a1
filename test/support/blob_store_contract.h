// The BlobStore contract every backend keeps (store/blob_store.h), checked on each: the object
// stores against their servers (object_store_tests), the local directory in the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
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

}  // namespace etcdadm::test
