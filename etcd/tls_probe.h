// A TLS handshake with one etcd endpoint, done with OpenSSL directly, to tell the operator exactly
// what is wrong before joining: endpoint unreachable, not speaking TLS, or (the classic etcdadm
// complaint) a server certificate that was not issued by the CA in our certs dir.
#pragma once

#include <chrono>
#include <string>

namespace etcdadm {

struct TlsProbeResult {
  std::string server_subject;  // of the certificate the server presented
  std::string server_issuer;
};

// Connects to host:port (from an https:// URL or host:port), handshakes with SNI and, when given,
// the client certificate, and verifies the server certificate against ca_file. Throws:
//   kUnavailable  nothing listens there / no route / the handshake could not complete
//   kTimeout      no answer within `timeout`
//   kTls          the server certificate does not chain to ca_file (message names both CAs)
TlsProbeResult probe_tls_endpoint(const std::string& endpoint, const std::string& ca_file,
                                  const std::string& client_cert, const std::string& client_key,
                                  std::chrono::milliseconds timeout);

}  // namespace etcdadm
