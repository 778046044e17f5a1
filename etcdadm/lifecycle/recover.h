// etcdadm recover: the day most of the cluster is gone for good and this host's member survived
// with its data. The member becomes a new one-member cluster through etcd's own way of doing it
// (`--force-new-cluster` for one start: its WAL is replayed, so every write it had committed is
// kept, and the lost members are removed by configuration changes it commits itself); its member
// ID, cluster ID and revisions continue, so a Kubernetes API server's watch caches stay valid.
// The lost hosts then join it again. Its data dir is copied aside first and never deleted.
//
// Refused while a quorum of the voters answers with a leader (nothing is lost: replace the lost
// members instead), and while another member that answers has a higher revision than this one
// (recover there: it holds more), unless forced; the result names what a force overrode.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "etcdadm/member_config.h"

namespace etcdadm {

struct RecoverOptions {
  MemberConfig member;  // from the state file
  // Recover here even though another member that answers has a higher revision (it is about to be
  // lost too, or its data is known bad). Never overrides a quorum that answers.
  bool force = false;
  std::chrono::seconds timeout{120};
};

struct RecoverResult {
  uint64_t member_id = 0;
  uint64_t cluster_id = 0;
  int64_t revision_before = 0;  // what the member served before (its Status)
  int64_t revision = 0;         // what the one-member cluster serves
  std::string set_aside;        // the copy of the data dir taken first
  struct Lost {
    std::string name;
    uint64_t id = 0;
    std::vector<std::string> peer_urls;
  };
  std::vector<Lost> removed;            // the members the new cluster no longer has
  std::vector<std::string> overridden;  // what --force overrode (empty without it)
  std::string client_url;               // where the others join
};

RecoverResult run_recover(const RecoverOptions& options);

}  // namespace etcdadm
