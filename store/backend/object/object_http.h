// The HTTP layer every object-store backend sends its requests through: a pool of connections, the
// retry policy, and the credentials hooks. It is the one place where a backend's requests are
// retried and where a request refused for stale credentials is sent once more with fresh ones.
//
// Connections: each request borrows an idle libcurl handle (with its open connection, and over
// TLS its session) and gives it back when the answer is read, so a command's requests take turns
// on one connection, and parallel part uploads on one each. A transfer that ended in an exception
// (a broken connection, a sink that refused the bytes) drops its handle instead.
//
// Thread-safe: the parts of an upload are sent from worker threads through one ObjectHttp.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/http_client.h"
#include "common/retry.h"

namespace etcdadm {

// A request of the container/object REST APIs (Azure Blob, Swift) before the backend addresses
// and authorizes it: the container, the object ("" for container-level calls), the query's
// unencoded pairs, the headers and the body (not owned).
struct ObjectCall {
  std::string method = "GET";
  std::string container = {};
  std::string object = {};
  std::vector<std::pair<std::string, std::string>> query = {};
  std::vector<std::pair<std::string, std::string>> headers = {};
  std::string_view body = {};
};

// "/<container>[/<object>]", percent-encoded (the object's slashes kept).
std::string object_call_path(const ObjectCall& call);
// "k=v&k2" (a pair with an empty value is the bare name), percent-encoded; "" for none.
std::string encode_query(const std::vector<std::pair<std::string, std::string>>& query);
// The headers of a read from `offset` to the end (Range), pinned to the version `etag` names
// (If-Match) when one is given.
void add_read_headers(std::vector<std::pair<std::string, std::string>>& headers, uint64_t offset,
                      const std::string& etag);

class ObjectHttp {
 public:
  // What a backend tells the layer about its answers and its credentials.
  struct Protocol {
    // Turns an answer that is no success into an Error naming `what`. Its kind decides whether the
    // retry policy tries again (kUnavailable, kTimeout) or gives up at once. Needed by call() and
    // read() (S3 uses neither: it classifies in its own attempt, which also follows region
    // redirects).
    std::function<Error(const HttpResponse& answer, const std::string& what)> classify;
    // Called with a 401 or 403 answer: drops cached credentials that can be fetched anew (an OAuth
    // or Keystone token) and returns true when it did, so the request is sent once more with fresh
    // ones. Fixed credentials (a key, a SAS, a token given by the user) return false. May be empty.
    std::function<bool(const HttpResponse& refused)> refresh_credentials;
  };

  // Makes the request of one attempt, authorized: called anew for each attempt, since a signature
  // carries the time and a refreshed token differs.
  using BuildRequest = std::function<HttpRequest()>;

  ObjectHttp(HttpOptions options, RetryPolicy retry, Protocol protocol);
  ObjectHttp(const ObjectHttp&) = delete;
  ObjectHttp& operator=(const ObjectHttp&) = delete;

  // One attempt on a pooled connection; a 401/403 after which refresh_credentials() dropped stale
  // credentials is built and sent once more. Any answer is returned, none thrown.
  HttpResponse send(const BuildRequest& build, const HttpBodySink& sink = nullptr);
  // send() under the retry policy: an answer that is neither 2xx nor one of `allowed` is thrown as
  // classify() makes it, and tried again where that error can heal.
  HttpResponse call(const BuildRequest& build, const std::string& what, std::initializer_list<long> allowed = {});
  // One attempt at a read pinned by add_read_headers: a 412 answer means the object changed since
  // it was opened (kCorrupt, naming `what`); other failures are classified. Not retried here: the
  // streaming reader resumes from the byte it reached (store/backend/object/streaming_reader.h).
  void read(const BuildRequest& build, const std::string& what, const HttpBodySink& sink);
  // Runs `attempt` under the retry policy: for the calls whose attempt is more than one request
  // (a resumable upload asking the server what it holds, S3 following a region redirect).
  void with_retries(const std::string& what, const std::function<void()>& attempt) const;
  // The request as given, on a pooled connection: no credentials hooks, no retries.
  HttpResponse perform(const HttpRequest& request, const HttpBodySink& sink = nullptr);

  const HttpOptions& options() const { return options_; }
  const RetryPolicy& retry() const { return retry_; }

 private:
  std::unique_ptr<HttpClient> borrow();
  void give_back(std::unique_ptr<HttpClient> client);

  HttpOptions options_;
  RetryPolicy retry_;
  Protocol protocol_;
  std::mutex mu_;
  std::vector<std::unique_ptr<HttpClient>> idle_;
};

}  // namespace etcdadm
