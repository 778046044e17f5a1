#include "common/http_client.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <exception>
#include <mutex>

#include "common/error.h"
#include "common/interrupt.h"
#include "common/text.h"
#include "common/timefmt.h"

namespace etcdadm {

namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;
constexpr size_t kMaxBufferedBody = 64 << 20;

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct TransferState {
  const HttpRequest* request = nullptr;
  size_t sent = 0;
  HttpResponse* response = nullptr;
  const HttpBodySink* sink = nullptr;
  bool ranged = false;  // the request asked for part of the object
  std::exception_ptr sink_error;
};

size_t read_body(char* buffer, size_t size, size_t nitems, void* userdata) {
  auto* st = static_cast<TransferState*>(userdata);
  size_t room = size * nitems;
  size_t left = st->request->body.size() - st->sent;
  size_t n = std::min(room, left);
  std::memcpy(buffer, st->request->body.data() + st->sent, n);
  st->sent += n;
  return n;
}

// curl rewinds the body when it must resend it (e.g. after a redirect or an auth retry).
int seek_body(void* userdata, curl_off_t offset, int origin) {
  auto* st = static_cast<TransferState*>(userdata);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > st->request->body.size()) {
    return CURL_SEEKFUNC_FAIL;
  }
  st->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t write_body(char* data, size_t size, size_t nmemb, void* userdata) {
  auto* st = static_cast<TransferState*>(userdata);
  size_t n = size * nmemb;
  if (st->sink != nullptr && *st->sink && st->response->ok()) {
    if (st->ranged && st->response->status != 206) {
      // A server that ignores Range sends the whole object from byte 0: appending that at a resume
      // offset would splice the object. Nothing of it may reach the sink.
      st->sink_error = std::make_exception_ptr(Error(
          ErrorKind::kCorrupt, st->request->method + " " + st->request->url.substr(0, st->request->url.find('?')) +
                                   ": the server ignored the Range header (HTTP " +
                                   std::to_string(st->response->status) + " instead of 206)"));
      return CURL_WRITEFUNC_ERROR;
    }
    try {
      (*st->sink)(data, n);
    } catch (...) {
      st->sink_error = std::current_exception();
      return CURL_WRITEFUNC_ERROR;
    }
    return n;
  }
  if (st->response->ok()) {
    // A 2xx body without a sink is wanted whole: listings, metadata, tokens. None comes near the
    // bound, which keeps a broken or hostile endpoint from filling the memory.
    if (st->response->body.size() + n > kMaxBufferedBody) {
      st->sink_error = std::make_exception_ptr(Error(
          ErrorKind::kCorrupt, st->request->method + " " + st->request->url.substr(0, st->request->url.find('?')) +
                                   ": the answer is larger than " + std::to_string(kMaxBufferedBody >> 20) +
                                   " MiB, more than any listing or metadata document"));
      return CURL_WRITEFUNC_ERROR;
    }
    st->response->body.append(data, n);
  } else if (st->response->body.size() < kMaxErrorBody) {
    st->response->body.append(data, std::min(n, kMaxErrorBody - st->response->body.size()));
  }
  return n;
}

size_t on_header(char* data, size_t size, size_t nitems, void* userdata) {
  auto* st = static_cast<TransferState*>(userdata);
  size_t n = size * nitems;
  std::string line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response (after "100 Continue" or a redirect): forget the previous one's headers.
    st->response->headers.clear();
    auto sp = line.find(' ');
    st->response->status = sp == std::string::npos ? 0 : std::atol(line.c_str() + sp + 1);
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  st->response->headers[name] = trim_space(line.substr(colon + 1));
  return n;
}

Error transport_error(CURLcode code, const std::string& detail, const HttpRequest& request) {
  const std::string where = request.method + " " + url_for_messages(request.url);
  std::string reason = detail.empty() ? curl_easy_strerror(code) : detail;
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return Error(ErrorKind::kTimeout, where + ": timed out (" + reason + ")",
                   "the server did not answer in time; check the endpoint and the network");
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      return Error(ErrorKind::kTls, where + ": TLS failure (" + reason + ")",
                   "check the CA bundle (--ca-bundle / AWS_CA_BUNDLE) and that the endpoint speaks https");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return Error(ErrorKind::kUnavailable, where + ": cannot resolve host (" + reason + ")",
                   "check the endpoint URL and DNS");
    case CURLE_COULDNT_CONNECT:
      return Error(ErrorKind::kUnavailable, where + ": cannot connect (" + reason + ")",
                   "is the server running and the endpoint right?");
    default:
      return Error(ErrorKind::kUnavailable, where + ": connection failed (" + reason + ")",
                   "the connection broke; it is retried automatically up to the retry budget");
  }
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)) {
  global_init_once();
  curl_ = curl_easy_init();
  if (curl_ == nullptr) throw Error(ErrorKind::kInternal, "curl_easy_init failed");
}

HttpClient::~HttpClient() { curl_easy_cleanup(curl_); }

// curl calls this about once a second even when no byte moves: a transfer stalled on a dead
// server still ends within a second of SIGINT/SIGTERM (common/interrupt.h), not at the idle timeout.
static int abort_when_interrupted(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return interrupt_requested()->load() ? 1 : 0;
}

HttpResponse HttpClient::perform(const HttpRequest& request, const HttpBodySink& sink) {
  HttpResponse response;
  TransferState st;
  st.request = &request;
  st.response = &response;
  st.sink = &sink;
  for (const auto& [name, value] : request.headers) {
    st.ranged = st.ranged || strcasecmp(name.c_str(), "Range") == 0;
  }

  curl_easy_reset(curl_);  // keeps the connection cache
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl_, CURLOPT_URL, request.url.c_str());
  // The path as given: libcurl would otherwise collapse "/../" and send a request outside the
  // store's prefix (store keys are checked too: store/blob_store.h check_store_key).
  curl_easy_setopt(curl_, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  long idle_s = std::max<long>(1, static_cast<long>((options_.idle_timeout.count() + 999) / 1000));
  curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_TIME, idle_s);
  curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
  curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
  if (!options_.ca_file.empty()) curl_easy_setopt(curl_, CURLOPT_CAINFO, options_.ca_file.c_str());
  if (!options_.client_cert_file.empty()) curl_easy_setopt(curl_, CURLOPT_SSLCERT, options_.client_cert_file.c_str());
  if (!options_.client_key_file.empty()) curl_easy_setopt(curl_, CURLOPT_SSLKEY, options_.client_key_file.c_str());
  curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl_, CURLOPT_HEADERDATA, &st);
  curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, abort_when_interrupted);
  curl_easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);

  const std::string& m = request.method;
  bool has_body = !request.body.empty() || m == "PUT" || m == "POST";
  if (m == "HEAD") {
    curl_easy_setopt(curl_, CURLOPT_NOBODY, 1L);
  } else if (has_body) {
    curl_easy_setopt(curl_, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl_, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl_, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl_, CURLOPT_READDATA, &st);
    curl_easy_setopt(curl_, CURLOPT_SEEKFUNCTION, seek_body);
    curl_easy_setopt(curl_, CURLOPT_SEEKDATA, &st);
    if (m != "PUT") curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, m.c_str());
  } else if (m != "GET") {
    curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, m.c_str());
  }

  curl_slist* headers = nullptr;
  // No "Expect: 100-continue": it costs a round trip (or a 1 s wait) per upload and S3-compatible
  // servers answer errors on the final response anyway.
  headers = curl_slist_append(headers, "Expect:");
  for (const auto& [name, value] : request.headers) {
    std::string line = value.empty() ? name + ";" : name + ": " + value;
    headers = curl_slist_append(headers, line.c_str());
  }
  curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);

  // One trace line per request, without its query (a SAS token or a signature may be in it): how
  // many requests a command makes can be counted from its log (bench/catalog_scale_bench.sh).
  if (spdlog::should_log(spdlog::level::trace)) {
    spdlog::trace("HTTP request {} {}", m, url_for_messages(request.url));
  }
  CURLcode rc = curl_easy_perform(curl_);
  // The handle outlives this call (a pool keeps it, with its connection): it must not keep
  // pointers to this frame's error buffer or to the header list freed here, which libcurl may
  // still touch when it later closes the connection.
  curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  if (st.sink_error) std::rethrow_exception(st.sink_error);
  if (rc == CURLE_ABORTED_BY_CALLBACK) throw_if_interrupted(request.method + " " + url_for_messages(request.url));
  if (rc != CURLE_OK) throw transport_error(rc, errbuf, request);
  long status = 0;
  curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
  response.status = status;
  return response;
}

HttpOptions credentials_http_options(HttpOptions store) {
  store.verify_tls = true;
  return store;
}

std::string url_for_messages(std::string_view url) {
  std::string out(url.substr(0, url.find_first_of("?#")));
  // scheme://user:password@host/... : the user information goes too.
  auto scheme_end = out.find("://");
  size_t authority = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  auto authority_end = out.find('/', authority);
  auto at = out.rfind('@', authority_end == std::string::npos ? std::string::npos : authority_end);
  if (at != std::string::npos && at >= authority) out.erase(authority, at + 1 - authority);
  return out;
}

std::string percent_encode(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += '&';
    out += percent_encode(k) + "=" + percent_encode(v);
  }
  return out;
}

HttpObjectHead object_head(const HttpResponse& r, const std::string& what) {
  HttpObjectHead h;
  std::string length = r.header("content-length");
  if (!length.empty()) {
    auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), h.size);
    if (ec != std::errc() || end != length.data() + length.size()) {
      throw Error(ErrorKind::kCorrupt, what + ": Content-Length is not a byte count: '" + length.substr(0, 40) + "'");
    }
  }
  auto t = parse_http_date(r.header("last-modified"));
  h.modified_unix_micros = t ? to_unix_micros(*t) : 0;
  h.etag = r.header("etag");
  return h;
}

UrlParts split_url(const std::string& url) {
  UrlParts p;
  auto sep = url.find("://");
  if (sep == std::string::npos) throw Error(ErrorKind::kInvalidArgument, "not a URL: " + url, "e.g. https://host:port");
  p.scheme = url.substr(0, sep);
  std::transform(p.scheme.begin(), p.scheme.end(), p.scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (p.scheme != "http" && p.scheme != "https") {
    throw Error(ErrorKind::kInvalidArgument, "unsupported URL scheme in " + url, "use http:// or https://");
  }
  std::string rest = url.substr(sep + 3);
  auto slash = rest.find('/');
  p.authority = rest.substr(0, slash);
  p.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (p.authority.empty()) throw Error(ErrorKind::kInvalidArgument, "URL " + url + " has no host");
  return p;
}

}  // namespace etcdadm
