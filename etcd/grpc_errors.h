// Turns a gRPC status from an etcd call into an Error that says what went wrong in operator terms:
// TLS handshake vs connection refused vs timeout vs permission, with a hint on what to do next.
#pragma once

#include <grpcpp/support/status.h>

#include <string>
#include <string_view>

#include "common/error.h"

namespace etcdadm {

struct CallSite {
  std::string operation;           // e.g. "Status"
  std::string endpoint;            // as the user wrote it
  bool tls = false;                // the channel uses TLS
  bool client_cert = false;        // a client certificate was offered
  bool channel_connected = false;  // the channel reached READY before (a deadline then is not a dial failure)
};

Error error_from_grpc(const grpc::Status& status, const CallSite& site);

// The refusals of etcd that callers act on, recognised in one place from the text etcd sends (its
// error strings, the same from 3.4 to 3.7: api/v3rpc/rpctypes/error.go; gRPC codes alone do not
// tell them apart: etcd sends several with UNKNOWN or UNAVAILABLE). Also what a member lists in
// StatusResponse.errors.
enum class EtcdRefusal {
  kNone,              // none of these
  kNoLeader,          // "etcdserver: no leader": the member sees no leader (no quorum, or an election)
  kLeaderChanged,     // "etcdserver: leader changed": the request raced an election
  kInvalidAuthToken,  // "etcdserver: invalid auth token": the token expired or the member restarted
  kUserNameEmpty,     // "etcdserver: user name is empty": auth is on and no user was given
  kPermissionDenied,  // "etcdserver: permission denied": the user lacks the role
};
EtcdRefusal etcd_refusal(std::string_view message);

}  // namespace etcdadm
