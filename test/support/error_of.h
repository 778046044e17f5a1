// What an etcdadm Error thrown by a piece of code says, for tests of refusals.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/error.h"

namespace etcdadm::test {

// The kind of the Error `f` throws (a test failure when it throws none).
inline ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorKind::kInternal;
}

// The message (what()) of the Error `f` throws (a test failure when it throws none).
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace etcdadm::test
