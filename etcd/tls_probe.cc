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
#include "etcd/connection.h"

namespace etcdadm {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

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

// TCP connect with a deadline; the socket is left blocking with send/receive timeouts set.
int connect_with_timeout(const std::string& host, const std::string& port, std::chrono::milliseconds timeout,
                         const std::string& where) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) throw Error(ErrorKind::kUnavailable, "cannot resolve " + where + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    Fd sock{fd};
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = std::strerror(errno);
        continue;
      }
      pollfd p{fd, POLLOUT, 0};
      int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (n == 0)
        throw Error(ErrorKind::kTimeout,
                    "no answer from " + where + " within " + std::to_string(timeout.count()) + " ms");
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (n < 0 || err != 0) {
        last_error = std::strerror(n < 0 ? errno : err);
        continue;
      }
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sock.fd = -1;
    return fd;
  }
  throw Error(ErrorKind::kUnavailable, "cannot connect to " + where + ": " + last_error,
              "check that the member is running and the address and port are right");
}

}  // namespace

TlsProbeResult probe_tls_endpoint(const std::string& endpoint, const std::string& ca_file,
                                  const std::string& client_cert, const std::string& client_key,
                                  std::chrono::milliseconds timeout) {
  Endpoint ep = parse_endpoint(endpoint, /*tls_configured=*/true);
  if (!ep.tls) {
    throw Error(ErrorKind::kInvalidArgument, endpoint + " is not a TLS endpoint", "etcdadm members serve https://");
  }
  size_t colon = ep.target.rfind(':');
  std::string host = ep.target.substr(0, colon);
  std::string port = colon == std::string::npos ? "2379" : ep.target.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);

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

  Fd sock{connect_with_timeout(host, port, timeout, endpoint)};
  SslPtr ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), sock.fd);
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
