// What every fuzz target of bench/fuzz/ checks: a parser either reads the input or refuses it with
// etcdadm::Error. Any other exception escapes the target (libFuzzer and the suite's smoke driver
// both report it as a crash), as do sanitizer reports.
#pragma once

#include "common/error.h"

namespace etcdadm::fuzz {

template <typename F>
void refused_or_read(F parse) {
  try {
    parse();
  } catch (const etcdadm::Error&) {
  }
}

}  // namespace etcdadm::fuzz
