#include "store/backend/object/object_http.h"

namespace etcdadm {

namespace {
// Idle connections kept per store: as many as --upload-concurrency allows at most (64), so a burst
// of parallel parts finds its connections again for the next burst.
constexpr size_t kMaxIdleConnections = 64;
}  // namespace

std::string object_call_path(const ObjectCall& call) {
  return "/" + percent_encode(call.container) +
         (call.object.empty() ? "" : "/" + percent_encode(call.object, /*keep_slash=*/true));
}

std::string encode_query(const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out;
  for (const auto& [name, value] : query)
    out += (out.empty() ? "" : "&") + percent_encode(name) + (value.empty() ? "" : "=" + percent_encode(value));
  return out;
}

void add_read_headers(std::vector<std::pair<std::string, std::string>>& headers, uint64_t offset,
                      const std::string& etag) {
  if (offset > 0) headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-");
  if (!etag.empty()) headers.emplace_back("If-Match", etag);
}

ObjectHttp::ObjectHttp(HttpOptions options, RetryPolicy retry, Protocol protocol)
    : options_(std::move(options)), retry_(retry), protocol_(std::move(protocol)) {}

std::unique_ptr<HttpClient> ObjectHttp::borrow() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      auto client = std::move(idle_.back());
      idle_.pop_back();
      return client;
    }
  }
  return std::make_unique<HttpClient>(options_);
}

void ObjectHttp::give_back(std::unique_ptr<HttpClient> client) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(client));
}

HttpResponse ObjectHttp::perform(const HttpRequest& request, const HttpBodySink& sink) {
  auto client = borrow();
  HttpResponse answer = client->perform(request, sink);  // an exception drops the handle
  give_back(std::move(client));
  return answer;
}

HttpResponse ObjectHttp::send(const BuildRequest& build, const HttpBodySink& sink) {
  HttpResponse answer = perform(build(), sink);
  if ((answer.status == 401 || answer.status == 403) && protocol_.refresh_credentials &&
      protocol_.refresh_credentials(answer)) {
    answer = perform(build(), sink);  // the token expired early or was revoked: once more, with a new one
  }
  return answer;
}

HttpResponse ObjectHttp::call(const BuildRequest& build, const std::string& what, std::initializer_list<long> allowed) {
  HttpResponse out;
  with_retries(what, [&] {
    HttpResponse answer = send(build);
    bool accepted = answer.ok();
    for (long status : allowed) accepted = accepted || answer.status == status;
    if (!accepted) throw protocol_.classify(answer, what);
    out = std::move(answer);
  });
  return out;
}

void ObjectHttp::read(const BuildRequest& build, const std::string& what, const HttpBodySink& sink) {
  HttpResponse answer = send(build, sink);
  if (answer.status == 412)
    throw Error(ErrorKind::kCorrupt, what + ": the object changed while it was read", "read it again");
  if (!answer.ok()) throw protocol_.classify(answer, what);
}

void ObjectHttp::with_retries(const std::string& what, const std::function<void()>& attempt) const {
  etcdadm::with_retries(retry_, what, attempt);
}

}  // namespace etcdadm
