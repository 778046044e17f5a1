#include "etcd/grpc_errors.h"

#include <algorithm>
#include <cctype>

namespace etcdadm {

static bool contains(const std::string& haystack, const char* needle) {
  std::string h = haystack, n = needle;
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  return h.find(n) != std::string::npos;
}

EtcdRefusal etcd_refusal(std::string_view message) {
  const std::string msg(message);
  if (contains(msg, "no leader")) return EtcdRefusal::kNoLeader;
  if (contains(msg, "leader changed")) return EtcdRefusal::kLeaderChanged;
  if (contains(msg, "invalid auth token")) return EtcdRefusal::kInvalidAuthToken;
  if (contains(msg, "user name is empty")) return EtcdRefusal::kUserNameEmpty;
  if (contains(msg, "permission denied")) return EtcdRefusal::kPermissionDenied;
  return EtcdRefusal::kNone;
}

Error error_from_grpc(const grpc::Status& status, const CallSite& site) {
  const std::string& operation = site.operation;
  const std::string& endpoint = site.endpoint;
  const std::string msg = status.error_message();
  const std::string where = operation + " on " + endpoint;
  const EtcdRefusal refusal = etcd_refusal(msg);
  // etcd reports some auth failures with code UNKNOWN; the text is what is reliable.
  if (refusal == EtcdRefusal::kUserNameEmpty) {
    return Error(ErrorKind::kAuth, where + ": this cluster has auth enabled and no user was given (" + msg + ")",
                 "pass --user (with --password-file, ETCDCTL_PASSWORD or the prompt), or client certificates of a user "
                 "with the root role");
  }
  if (refusal == EtcdRefusal::kPermissionDenied) {
    return Error(ErrorKind::kAuth, where + ": permission denied: " + msg,
                 "snapshots, HashKV and membership changes need the root role when auth is enabled");
  }
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE: {
      if (contains(msg, "ssl") || contains(msg, "handshake") || contains(msg, "certificate") || contains(msg, "tls")) {
        std::string hint = "check --cacert (must be the CA that signed the server certificate)";
        if (contains(msg, "wrong version number") || contains(msg, "record layer")) {
          hint = "the server does not speak TLS: use an http:// endpoint or drop --cacert/--cert";
        } else if (contains(msg, "certificate verify failed") || contains(msg, "certificate_verify_failed")) {
          hint = "the server certificate is not signed by --cacert: pass the cluster's CA";
        } else if (contains(msg, "certificate required") || contains(msg, "alert")) {
          hint = "the server requires a client certificate signed by its CA: pass --cert and --key";
        }
        return Error(ErrorKind::kTls, "TLS handshake with " + endpoint + " failed (" + operation + "): " + msg, hint);
      }
      if (contains(msg, "connection refused")) {
        return Error(ErrorKind::kUnavailable, "connection refused by " + endpoint + " (" + operation + ")",
                     "is etcd running and listening on that address? check --endpoints");
      }
      if (contains(msg, "name resolution") || contains(msg, "dns") || contains(msg, "resolve")) {
        return Error(ErrorKind::kUnavailable, "cannot resolve " + endpoint + " (" + operation + "): " + msg,
                     "check the host name in --endpoints");
      }
      if (contains(msg, "socket closed") || contains(msg, "connection reset") || contains(msg, "end of tcp stream") ||
          contains(msg, "broken pipe") || contains(msg, "endpoint read failed")) {
        if (site.tls) {
          // The peer hung up during our TLS handshake: it rejected (or wanted) a client certificate,
          // or it does not speak TLS at all.
          std::string hint =
              site.client_cert
                  ? "the server rejected the client certificate: check that --cert/--key are signed by the cluster's CA"
                  : "the server requires a client certificate signed by its CA: pass --cert and --key "
                    "(or, if it serves plain HTTP, use an http:// endpoint without TLS flags)";
          return Error(ErrorKind::kTls,
                       "TLS handshake with " + endpoint + " failed (" + operation +
                           "): the server closed the connection (" + msg + ")",
                       hint);
        }
        return Error(ErrorKind::kUnavailable, "connection to " + endpoint + " closed during " + operation + ": " + msg,
                     "if the server serves TLS, use an https:// endpoint and --cacert");
      }
      if (refusal == EtcdRefusal::kNoLeader || refusal == EtcdRefusal::kLeaderChanged) {
        return Error(ErrorKind::kUnavailable, where + ": etcd has no leader (" + msg + ")",
                     "the cluster may have lost quorum; check the other members");
      }
      return Error(ErrorKind::kUnavailable, where + " failed: " + msg, "check that the endpoint is reachable");
    }
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      if (!site.channel_connected) {
        return Error(ErrorKind::kTimeout,
                     "could not connect to " + endpoint + " within the dial timeout (" + operation + ")",
                     "check the address and firewalls, or raise --dial-timeout");
      }
      return Error(ErrorKind::kTimeout, where + " timed out",
                   "the member is slow or overloaded; raise --command-timeout");
    case grpc::StatusCode::UNAUTHENTICATED:
      return Error(ErrorKind::kAuth, where + ": authentication failed: " + msg, "check --user/--password");
    case grpc::StatusCode::PERMISSION_DENIED:
      return Error(ErrorKind::kAuth, where + ": permission denied: " + msg,
                   "snapshots and HashKV need the root role when auth is enabled");
    case grpc::StatusCode::INVALID_ARGUMENT:
      if (contains(msg, "authentication failed") || contains(msg, "user name") || contains(msg, "password")) {
        return Error(ErrorKind::kAuth, where + ": " + msg, "check --user/--password");
      }
      if (contains(msg, "user name is empty") || contains(msg, "auth")) {
        return Error(ErrorKind::kAuth, where + ": " + msg, "this cluster has auth enabled: pass --user and --password");
      }
      return Error(ErrorKind::kInvalidArgument, where + ": " + msg);
    case grpc::StatusCode::FAILED_PRECONDITION:
      if (contains(msg, "user name is empty") || contains(msg, "token")) {
        return Error(ErrorKind::kAuth, where + ": " + msg, "this cluster has auth enabled: pass --user and --password");
      }
      return Error(ErrorKind::kUnavailable, where + ": " + msg);
    case grpc::StatusCode::OUT_OF_RANGE:
      return Error(ErrorKind::kInvalidArgument, where + ": revision out of range (" + msg + ")",
                   "the revision was compacted or is in the future");
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Error(ErrorKind::kUnavailable, where + ": " + msg,
                   "etcd is out of space (NOSPACE alarm?) or the message is too large");
    case grpc::StatusCode::CANCELLED:
      return Error(ErrorKind::kUnavailable, where + " was cancelled: " + msg);
    default:
      return Error(ErrorKind::kUnavailable, where + " failed (" + std::to_string(status.error_code()) + "): " + msg);
  }
}

}  // namespace etcdadm
