// What the files of the Controller class (controller.cc, controller_observe.cc, act_<concern>.cc)
// share and nothing else uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/records.h"
#include "etcdadm/lifecycle/init_join.h"
#include "store/blob_store.h"

namespace etcdadm::controller_internal {

int64_t unix_now();

// Whole seconds since `t` on the steady clock, and until it.
int64_t seconds_since(std::chrono::steady_clock::time_point t);
int64_t seconds_until(std::chrono::steady_clock::time_point t);

// How long `condition` has held, by this controller's clock: `since` is set the first round it
// holds and reset the first round it does not (0 then).
int64_t held_for_seconds(std::optional<std::chrono::steady_clock::time_point>& since, bool condition);

// `text` with every count of seconds ("12 s") as "N s": a wait or an outcome that says how long
// something has lasted is the same one round after round.
std::string without_running_seconds(const std::string& text);

// init's or join's phases as the controller runs them: the etcdctl files written before etcd
// starts (they need no running member), so that a controller killed right after the start leaves
// nothing undone that a later round would not see; init's health wait left out (the controller
// goes on ticking while the other planned members start).
std::vector<std::string> controller_phases(const std::vector<Phase>& phases);

// The first of the member certificates in `certs_dir` to expire (unix seconds, its file name;
// 0 and "" when there is none) and the CA's expiry.
struct CertExpiry {
  int64_t first_unix = 0;
  std::string first;
  int64_t ca_unix = 0;
};

CertExpiry cert_expiry(const std::string& certs_dir);

// The maintenance record, or an empty one when it does not parse or `policy` refuses it (logged):
// it is rewritten whole by the next maintenance step.
MaintenanceRecord readable_maintenance(BlobStore& store, const RecordPolicy& policy);

}  // namespace etcdadm::controller_internal
