// A small blocking HTTP(S) client on libcurl, for the object stores (through their pool,
// store/backend/object/object_http.h), the credential providers, release downloads and etcd's
// HTTP endpoints. One HttpClient owns one curl handle and reuses its connections; it is not
// thread-safe: a pool lends each request in flight a client of its own.
//
// Transport failures (no HTTP response at all) are thrown as Error:
//   kUnavailable  connection refused / reset / DNS failure / empty reply  (retryable)
//   kTimeout      connect or idle timeout                                   (retryable)
//   kTls          certificate or handshake failure                          (not retryable)
// An HTTP response of any status is returned, never thrown: the caller knows what a 404 means.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

typedef void CURL;

namespace etcdadm {

struct HttpOptions {
  std::string ca_file;           // PEM bundle for server verification; empty = the system's default store
  bool verify_tls = true;        // off only when the user explicitly asks (self-signed test endpoints)
  std::string client_cert_file;  // PEM client certificate (servers that require one: etcd's HTTP endpoints)
  std::string client_key_file;   // its PEM key
  std::chrono::milliseconds connect_timeout{10000};
  // Abort a transfer when no byte has moved for this long (a stalled server or a dead link).
  std::chrono::milliseconds idle_timeout{60000};
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;  // request body (not owned); empty for none
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last value wins
  std::string body;                            // unless streamed to a sink (2xx only)
  // Returns "" when absent.
  std::string header(const std::string& lower_name) const;
  bool ok() const { return status >= 200 && status < 300; }
};

// Receives a 2xx response body piece by piece; may throw to abort the transfer (the exception
// propagates out of perform()).
using HttpBodySink = std::function<void(const char* data, size_t size)>;

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends the request. With a sink, a 2xx body goes to the sink instead of response.body;
  // non-2xx bodies are always kept (up to 64 KiB) for the error message. A request with a Range
  // header whose answer is not 206 throws Error(kCorrupt) before any byte reaches the sink.
  HttpResponse perform(const HttpRequest& request, const HttpBodySink& sink = nullptr);

  const HttpOptions& options() const { return options_; }

 private:
  HttpOptions options_;
  CURL* curl_;
};

// What a HEAD (or GET) answer says of an object: Content-Length (kCorrupt, naming `what`, when it
// is no decimal byte count), Last-Modified (an HTTP date; 0 when absent or unreadable) and ETag.
struct HttpObjectHead {
  uint64_t size = 0;
  int64_t modified_unix_micros = 0;
  std::string etag;
};
HttpObjectHead object_head(const HttpResponse& response, const std::string& what);

// RFC 3986 percent-encoding of everything but unreserved characters (A-Z a-z 0-9 - _ . ~);
// '/' is kept when keep_slash is true. This is the encoding SigV4 and GCS object names need.
std::string percent_encode(std::string_view s, bool keep_slash = false);
// The options for a store's credentials endpoint (STS, a token endpoint, Entra, Keystone), from the
// store's own: the same CA bundle and timeouts, TLS always verified. --store-insecure-skip-tls-verify
// covers the store endpoint only: a credentials endpoint impersonated would take the secrets sent
// to it (a client secret, a web identity token, a password).
HttpOptions credentials_http_options(HttpOptions store);
// `url` as messages, logs and records may show it: without its query or fragment (a SAS token, a
// signed URL's signature) and without user information before the host.
std::string url_for_messages(std::string_view url);

// application/x-www-form-urlencoded body from pairs (percent_encode of names and values).
std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields);

// Splits "http://host:port/path" into scheme, host[:port] and path ("/" when absent). Throws
// kInvalidArgument when it is not an http(s) URL.
struct UrlParts {
  std::string scheme;     // "http" or "https"
  std::string authority;  // host or host:port, as written
  std::string path;
};
UrlParts split_url(const std::string& url);

}  // namespace etcdadm
