// A file's permission bits, for the tests of what modes etcdadm gives the files it writes.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace etcdadm::test {

// The permission bits (07777) of `path` itself (a link is not followed).
inline uint32_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

}  // namespace etcdadm::test
