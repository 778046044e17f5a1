#include "etcd/tcp_connect.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "common/unique_fd.h"

namespace etcdadm {

namespace {

// connect_with_timeout, with the errno of the last address's failure in `last_errno`.
int connect_reporting_errno(const std::string& host, const std::string& port, std::chrono::milliseconds timeout,
                            const std::string& where, int& last_errno) {
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
    UniqueFd sock(fd);
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_errno = errno;
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
        last_errno = n < 0 ? errno : err;
        last_error = std::strerror(last_errno);
        continue;
      }
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return sock.release();
  }
  throw Error(ErrorKind::kUnavailable, "cannot connect to " + where + ": " + last_error,
              "check that the member is running and the address and port are right");
}

}  // namespace

std::pair<std::string, std::string> host_and_port(const Endpoint& endpoint) {
  const size_t colon = endpoint.target.rfind(':');
  std::string host = endpoint.target.substr(0, colon);
  std::string port = colon == std::string::npos ? "2379" : endpoint.target.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return {host, port};
}

int connect_with_timeout(const std::string& host, const std::string& port, std::chrono::milliseconds timeout,
                         const std::string& where) {
  int last_errno = 0;
  return connect_reporting_errno(host, port, timeout, where, last_errno);
}

bool refuses_connections(const std::string& url, std::chrono::milliseconds timeout) {
  if (url.rfind("unix:", 0) == 0) return false;
  int last_errno = 0;
  try {
    const auto [host, port] = host_and_port(parse_endpoint(url, /*tls_configured=*/true));
    ::close(connect_reporting_errno(host, port, timeout, url, last_errno));
    return false;
  } catch (const Error&) {
    return last_errno == ECONNREFUSED;
  }
}

}  // namespace etcdadm
