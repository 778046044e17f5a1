// Sample bytes for the tests of byte streams (codecs, sinks).
#pragma once

#include <random>
#include <string>

namespace etcdadm::test {

// `size` bytes that compress well (repeated field names) with some noise, like Kubernetes objects;
// the same on every call.
inline std::string sample(size_t size) {
  std::mt19937 rng(7);
  std::string s;
  while (s.size() < size) s += "{\"kind\":\"Pod\",\"metadata\":{\"uid\":\"" + std::to_string(rng()) + "\"}}";
  s.resize(size);
  return s;
}

}  // namespace etcdadm::test
