#include "etcd/tls_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/openssl_ptr.h"
#include "common/unique_fd.h"
#include "etcd/connection.h"
#include "etcd/tcp_connect.h"

namespace etcdadm {

namespace {

std::string openssl_errors() {
  std::string out;
  unsigned long e;
  char buf[256];
  while ((e = ERR_get_error()) != 0) {
    ERR_error_string_n(e, buf, sizeof(buf));
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out;
}

std::string name_of(X509_NAME* name) {
  if (name == nullptr) return "?";
  char buf[512];
  X509_NAME_oneline(name, buf, sizeof(buf));
  return buf;
}

std::string first_cert_subject(const std::string& pem_file) {
  FILE* f = std::fopen(pem_file.c_str(), "r");
  if (f == nullptr) return "?";
  X509Ptr cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  return cert ? name_of(X509_get_subject_name(cert.get())) : "?";
}

}  // namespace

TlsProbeResult probe_tls_endpoint(const std::string& endpoint, const std::string& ca_file,
                                  const std::string& client_cert, const std::string& client_key,
                                  std::chrono::milliseconds timeout) {
  Endpoint ep = parse_endpoint(endpoint, /*tls_configured=*/true);
  if (!ep.tls) {
    throw Error(ErrorKind::kInvalidArgument, endpoint + " is not a TLS endpoint", "etcdadm members serve https://");
  }
  const auto [host, port] = host_and_port(ep);

  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) throw Error(ErrorKind::kInternal, "SSL_CTX_new failed: " + openssl_errors());
  if (SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1) {
    throw Error(ErrorKind::kTls, "cannot load CA " + ca_file + ": " + openssl_errors());
  }
  if (!client_cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), client_cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx.get(), client_key.c_str(), SSL_FILETYPE_PEM) != 1) {
      throw Error(ErrorKind::kTls, "cannot load client certificate " + client_cert + ": " + openssl_errors());
    }
  }
  // Verification runs during the handshake and its result is read afterwards, so that a mismatch
  // can name the certificate the server actually presented.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);

  UniqueFd sock(connect_with_timeout(host, port, timeout, endpoint));
  SslPtr ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), sock.get());
  in6_addr scratch{};
  bool is_ip = ::inet_pton(AF_INET, host.c_str(), &scratch) == 1 || ::inet_pton(AF_INET6, host.c_str(), &scratch) == 1;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), host.c_str());
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  }
  const bool handshake_ok = SSL_connect(ssl.get()) == 1;
  TlsProbeResult result;
  X509Ptr peer(SSL_get1_peer_certificate(ssl.get()));
  if (peer) {
    result.server_subject = name_of(X509_get_subject_name(peer.get()));
    result.server_issuer = name_of(X509_get_issuer_name(peer.get()));
  }
  // The verdict on the server certificate exists as soon as the server sent it, even when the
  // handshake failed later (a server that wants a client certificate we did not offer).
  long verify = peer ? SSL_get_verify_result(ssl.get()) : X509_V_OK;
  if (handshake_ok) SSL_shutdown(ssl.get());
  // A server that requires a client certificate may abort a TLS 1.2 handshake we started without
  // one, after its own certificate arrived: a verified certificate is all this probe asks for.
  if (!handshake_ok && !peer) {
    std::string detail = openssl_errors();
    if (detail.empty()) detail = errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : std::strerror(errno);
    throw Error(ErrorKind::kUnavailable, "TLS handshake with " + endpoint + " failed: " + detail,
                "is this an etcd client URL served with TLS (https://)?");
  }
  if (verify != X509_V_OK) {
    std::string why = X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      throw Error(
          ErrorKind::kTls,
          "the certificate of " + endpoint + " (" + result.server_subject + ") is not valid for " + host + ": " + why,
          "use the address the member advertises, or add it to the member's --server-cert-extra-sans");
    }
    throw Error(ErrorKind::kTls,
                "the certificate of " + endpoint + " (subject " + result.server_subject + ", issuer " +
                    result.server_issuer + ") was not issued by the CA in " + ca_file + " (" +
                    first_cert_subject(ca_file) + "): " + why,
                "copy ca.crt and ca.key from an existing member of this cluster into the certs dir");
  }
  return result;
}

}  // namespace etcdadm
