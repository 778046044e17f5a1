// Turns a gRPC status from an etcd call into an Error that says what went wrong in operator terms:
// TLS handshake vs connection refused vs timeout vs permission, with a hint on what to do next.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "common/error.h"

namespace etcdadm {

struct CallSite {
  std::string operation;       // e.g. "Status"
  std::string endpoint;        // as the user wrote it
  bool tls = false;            // the channel uses TLS
  bool client_cert = false;    // a client certificate was offered
  bool channel_connected = false;  // the channel reached READY before (a deadline then is not a dial failure)
};

Error error_from_grpc(const grpc::Status& status, const CallSite& site);

}  // namespace etcdadm
