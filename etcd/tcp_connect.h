// Plain TCP to an etcd endpoint, below gRPC: a connect with a deadline (the TLS probe's), and
// whether anything listens at all. gRPC's own dial waits out its whole timeout on a port nothing
// listens on (wait-for-ready); a survey of members most of which are gone asks this first.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "etcd/connection.h"

namespace etcdadm {

// The host (without IPv6 brackets) and port of a TCP endpoint (2379 when it names none).
std::pair<std::string, std::string> host_and_port(const Endpoint& endpoint);

// A connected socket (blocking, with send and receive timeouts of `timeout`). Throws kUnavailable
// (cannot resolve, refused, no route) or kTimeout (no answer within `timeout`); `where` names the
// endpoint in messages.
int connect_with_timeout(const std::string& host, const std::string& port, std::chrono::milliseconds timeout,
                         const std::string& where);

// True only when the endpoint's host answered that nothing listens on its port (ECONNREFUSED):
// its etcd is down. False when something accepts, and whenever it cannot tell (a unix socket, a
// name that does not resolve, no answer within `timeout`, no route): the caller asks as usual.
bool refuses_connections(const std::string& url, std::chrono::milliseconds timeout);

}  // namespace etcdadm
