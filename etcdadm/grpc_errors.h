// Turns a gRPC status from an etcd call into an Error that says what went wrong in operator terms:
// TLS handshake vs connection refused vs timeout vs permission, with a hint on what to do next.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "common/error.h"

namespace etcdadm {

// `operation` is e.g. "Status", `endpoint` as the user wrote it; `channel_connected` tells whether the
// channel ever reached READY (a deadline with no connection is a dial failure, not a slow server).
Error error_from_grpc(const grpc::Status& status, const std::string& operation, const std::string& endpoint,
                      bool tls, bool channel_connected);

}  // namespace etcdadm
