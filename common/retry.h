// Retrying calls to remote services: exponential backoff with full jitter (each wait is uniform in
// [0, min(max_delay, base_delay * 2^attempt)]), so that many sidecars hitting the same throttled
// bucket spread out instead of retrying in lock step.
//
// Only errors that can heal by themselves are retried: ErrorKind::kUnavailable (connection refused
// or reset, HTTP 5xx, 429 throttling) and kTimeout. Credentials, permissions, TLS and bad requests
// fail at once.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "common/error.h"

namespace etcdadm {

struct RetryPolicy {
  int max_attempts = 6;  // total tries, including the first
  std::chrono::milliseconds base_delay{250};
  std::chrono::milliseconds max_delay{15000};
  // Retries go on past max_attempts until this long has passed since the first try: full jitter
  // may draw waits of a few milliseconds, and some refusals last a known time (etcd refuses a
  // membership change until every member has been connected for 5 s). 0: attempts alone count.
  std::chrono::milliseconds min_elapsed{0};
};

bool is_retryable(const Error& e);

// The wait before retry number `attempt` (1 for the first retry).
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt);

// Runs `fn` until it succeeds, throws a non-retryable error, or the policy's attempts are spent.
// `what` names the operation in log lines and in the final error ("... failed after 6 attempts").
void with_retries(const RetryPolicy& policy, const std::string& what, const std::function<void()>& fn);

}  // namespace etcdadm
