#include "store/backend/gcs/gcs_client.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {

Error gcs_error(const HttpResponse& response, const std::string& what) {
  GcsErrorBody body = parse_gcs_error_body(response.body);
  const std::string& message = body.message;
  const std::string& reason = body.reason;
  long st = response.status;
  std::string text = what + ": HTTP " + std::to_string(st) + (reason.empty() ? "" : " " + reason) +
                     (message.empty() ? "" : ": " + message);
  if (st == 501) return Error(ErrorKind::kInvalidArgument, text, "the server does not implement this request");
  if (st >= 500 || st == 429 || st == 408) {
    return Error(ErrorKind::kUnavailable, text, "GCS is overloaded or failing; retried with backoff");
  }
  if (st == 401) {
    return Error(ErrorKind::kAuth, text,
                 "the credentials were rejected; check GOOGLE_APPLICATION_CREDENTIALS or the "
                 "workload identity binding");
  }
  if (st == 403) {
    return Error(ErrorKind::kAuth, text,
                 "the service account lacks permission on this bucket; docs/operations.md "
                 "lists the role it needs");
  }
  if (st == 404) return Error(ErrorKind::kNotFound, text);
  if (st == 412) return Error(ErrorKind::kAlreadyExists, text);
  return Error(ErrorKind::kInvalidArgument, text);
}

GcsClient::GcsClient(GcsConfig config, std::shared_ptr<GcsAuth> auth)
    : config_(std::move(config)),
      auth_(std::move(auth)),
      http_(config_.http, config_.retry,
            ObjectHttp::Protocol{
                .classify = [](const HttpResponse& r, const std::string& what) { return gcs_error(r, what); },
                // GCS answers an expired or revoked token with 401.
                .refresh_credentials =
                    [this](const HttpResponse& refused) {
                      std::shared_ptr<GcsAuth> credentials = this->auth();
                      if (refused.status != 401 || credentials->anonymous()) return false;
                      credentials->invalidate();
                      return true;
                    }}) {
  while (!config_.endpoint.empty() && config_.endpoint.back() == '/') config_.endpoint.pop_back();
  split_url(config_.endpoint);  // validates
}

std::string GcsClient::object_url(const std::string& bucket, const std::string& name) const {
  return config_.endpoint + "/storage/v1/b/" + percent_encode(bucket) + "/o/" + percent_encode(name);
}

void GcsClient::set_auth(std::shared_ptr<GcsAuth> auth) {
  std::lock_guard<std::mutex> lock(auth_mu_);
  auth_ = std::move(auth);
}

std::shared_ptr<GcsAuth> GcsClient::auth() const {
  std::lock_guard<std::mutex> lock(auth_mu_);
  return auth_;
}

HttpRequest GcsClient::authorized(HttpRequest request) const {
  std::string authorization = auth()->authorization();
  if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
  return request;
}

HttpResponse GcsClient::send(const HttpRequest& request, const HttpBodySink& sink) {
  return http_.send([&] { return authorized(request); }, sink);
}

HttpResponse GcsClient::call(const HttpRequest& request, const std::string& what, long allowed) {
  return http_.call([&] { return authorized(request); }, what, {allowed});
}

std::optional<GcsObjectInfo> GcsClient::get_metadata(const std::string& bucket, const std::string& name) {
  std::string what = "metadata of gs://" + bucket + "/" + name;
  HttpRequest req;
  req.url = object_url(bucket, name);
  HttpResponse r = call(req, what, 404);
  if (r.status == 404) return std::nullopt;
  return parse_gcs_object(r.body, what);
}

std::optional<std::string> GcsClient::get_small_object(const std::string& bucket, const std::string& name, size_t limit,
                                                       std::string* generation) {
  std::optional<std::string> out;
  std::string what = "read of gs://" + bucket + "/" + name;
  http_.with_retries(what, [&] {
    HttpRequest req;
    req.url = object_url(bucket, name) + "?alt=media";
    std::string body;
    HttpResponse r = send(req, [&](const char* data, size_t size) {
      body.append(data, size);
      if (body.size() > limit)
        throw Error(ErrorKind::kCorrupt, "gs://" + bucket + "/" + name + " is larger than expected");
    });
    if (r.status == 404) {
      out.reset();
      return;
    }
    if (!r.ok()) throw gcs_error(r, what);
    if (generation != nullptr) {
      *generation = r.header("x-goog-generation");
      if (generation->empty()) throw Error(ErrorKind::kCorrupt, what + ": the server sent no x-goog-generation");
    }
    out = std::move(body);
  });
  return out;
}

GcsObjectInfo GcsClient::upload_media(const std::string& bucket, const std::string& name, std::string_view body,
                                      bool if_absent) {
  std::string what = "upload of gs://" + bucket + "/" + name;
  HttpRequest req;
  req.method = "POST";
  req.url = config_.endpoint + "/upload/storage/v1/b/" + percent_encode(bucket) +
            "/o?uploadType=media&name=" + percent_encode(name) + (if_absent ? "&ifGenerationMatch=0" : "");
  req.headers = {{"Content-Type", "application/octet-stream"}};
  req.body = body;
  return parse_gcs_object(call(req, what).body, what);
}

std::optional<std::string> GcsClient::upload_media_if(const std::string& bucket, const std::string& name,
                                                      std::string_view body, const std::string& expected_generation) {
  std::string what = "conditional upload of gs://" + bucket + "/" + name;
  HttpRequest req;
  req.method = "POST";
  req.url = config_.endpoint + "/upload/storage/v1/b/" + percent_encode(bucket) +
            "/o?uploadType=media&name=" + percent_encode(name) +
            "&ifGenerationMatch=" + (expected_generation.empty() ? "0" : percent_encode(expected_generation));
  req.headers = {{"Content-Type", "application/octet-stream"}};
  req.body = body;
  HttpResponse r = call(req, what, 412);
  if (r.status == 412) return std::nullopt;
  GcsObjectInfo info = parse_gcs_object(r.body, what);
  if (info.generation.empty()) throw Error(ErrorKind::kCorrupt, what + ": the server answered without a generation");
  return info.generation;
}

std::string GcsClient::start_resumable(const std::string& bucket, const std::string& name, bool if_absent) {
  std::string what = "starting resumable upload of gs://" + bucket + "/" + name;
  HttpRequest req;
  req.method = "POST";
  req.url = config_.endpoint + "/upload/storage/v1/b/" + percent_encode(bucket) +
            "/o?uploadType=resumable&name=" + percent_encode(name) + (if_absent ? "&ifGenerationMatch=0" : "");
  req.headers = {{"Content-Type", "application/json; charset=UTF-8"},
                 {"X-Upload-Content-Type", "application/octet-stream"}};
  req.body = "{}";
  std::string session = call(req, what).header("location");
  if (session.empty()) throw Error(ErrorKind::kCorrupt, what + ": the server returned no session URI");
  return session;
}

std::optional<uint64_t> GcsClient::query_session(const std::string& session) {
  HttpRequest req;
  req.method = "PUT";
  req.url = session;
  req.headers = {{"Content-Range", "bytes */*"}};
  HttpResponse r = send(req);
  if (r.status == 308) return parse_persisted_range(r.header("range"), "status of resumable upload");
  if (r.ok()) return std::nullopt;
  throw gcs_error(r, "status of resumable upload");
}

bool GcsClient::upload_chunk(const std::string& session, uint64_t offset, std::string_view data,
                             std::optional<uint64_t> total) {
  if (!total && data.size() % kGcsChunkQuantum != 0) {
    throw Error(ErrorKind::kInternal,
                "GCS chunk of " + std::to_string(data.size()) + " bytes is not a multiple of 256 KiB");
  }
  uint64_t end = offset + data.size();  // exclusive
  uint64_t sent_from = offset;          // first byte the server still lacks
  bool complete = false;
  bool broken = false;
  std::string what = "upload of bytes " + std::to_string(offset) + "-" + std::to_string(end) + " of a GCS object";
  http_.with_retries(what, [&] {
    if (broken) {
      // The last attempt broke: ask the server what it has before resending.
      auto held = query_session(session);
      if (!held) {
        complete = true;
        return;
      }
      if (*held < offset || *held > end) {
        throw Error(ErrorKind::kCorrupt,
                    what + ": the server holds " + std::to_string(*held) + " bytes, outside this chunk");
      }
      sent_from = *held;
      // The whole (non-final) chunk arrived; only the 308 answer was lost.
      if (!total && sent_from == end) {
        broken = false;
        return;
      }
    }
    broken = true;
    std::string_view rest = data.substr(static_cast<size_t>(sent_from - offset));
    std::string range = rest.empty() ? "bytes */" + std::to_string(*total)
                                     : "bytes " + std::to_string(sent_from) + "-" + std::to_string(end - 1) + "/" +
                                           (total ? std::to_string(*total) : "*");
    HttpRequest req;
    req.method = "PUT";
    req.url = session;
    req.headers = {{"Content-Range", range}};
    req.body = rest;
    HttpResponse r = send(req);
    if (r.status == 308) {
      uint64_t held = parse_persisted_range(r.header("range"), what);
      if (held < sent_from || held > end) {
        throw Error(ErrorKind::kCorrupt,
                    what + ": the server reports " + std::to_string(held) + " bytes persisted, outside what was sent");
      }
      if (held < end) {
        // The server kept only part of what we sent (allowed by the protocol): send the rest.
        sent_from = held;
        broken = false;
        throw Error(ErrorKind::kUnavailable,
                    what + ": server persisted " + std::to_string(held) + " of " + std::to_string(end));
      }
      broken = false;
      return;
    }
    if (r.ok()) {
      broken = false;
      complete = true;
      if (!total) {
        throw Error(ErrorKind::kCorrupt, what + ": the server finalized the object before its last chunk",
                    "this server does not implement chunked resumable uploads (the firebase emulator does not)");
      }
      return;
    }
    if (r.status == 404 || r.status == 410) {
      throw Error(ErrorKind::kCorrupt,
                  what + ": the upload session expired or was cancelled (HTTP " + std::to_string(r.status) + ")");
    }
    throw gcs_error(r, what);
  });
  if (total && !complete) {
    throw Error(ErrorKind::kCorrupt, what + ": the server did not finalize the object after its last chunk");
  }
  return complete;
}

void GcsClient::cancel_resumable(const std::string& session) {
  try {
    HttpRequest req;
    req.method = "DELETE";
    req.url = session;
    send(req);
  } catch (const Error& e) {
    spdlog::debug("cancelling a GCS upload session failed ({}); it expires by itself", e.what());
  }
}

void GcsClient::download(const std::string& bucket, const std::string& name, const std::string& generation,
                         uint64_t offset, const HttpBodySink& sink) {
  HttpRequest req;
  // ifGenerationMatch pins the version as If-Match does elsewhere: a changed object answers 412.
  req.url = object_url(bucket, name) + "?alt=media" + (generation.empty() ? "" : "&ifGenerationMatch=" + generation);
  add_read_headers(req.headers, offset, "");
  http_.read([&] { return authorized(req); }, "download of gs://" + bucket + "/" + name, sink);
}

GcsListPage GcsClient::list(const std::string& bucket, const std::string& prefix, const std::string& page_token,
                            int max_results, bool versions, const std::string& start_offset,
                            const std::string& end_offset) {
  std::string what = "listing gs://" + bucket + "/" + prefix;
  HttpRequest req;
  req.url =
      config_.endpoint + "/storage/v1/b/" + percent_encode(bucket) + "/o?maxResults=" + std::to_string(max_results) +
      (prefix.empty() ? "" : "&prefix=" + percent_encode(prefix)) +
      (page_token.empty() ? "" : "&pageToken=" + percent_encode(page_token)) + (versions ? "&versions=true" : "") +
      (start_offset.empty() ? "" : "&startOffset=" + percent_encode(start_offset)) +
      (end_offset.empty() ? "" : "&endOffset=" + percent_encode(end_offset));
  return parse_gcs_list_page(call(req, what).body, what);
}

void GcsClient::remove(const std::string& bucket, const std::string& name) {
  HttpRequest req;
  req.method = "DELETE";
  req.url = object_url(bucket, name);
  call(req, "delete of gs://" + bucket + "/" + name, 404);
}

void GcsClient::remove_generation(const std::string& bucket, const std::string& name, const std::string& generation) {
  HttpRequest req;
  req.method = "DELETE";
  req.url = object_url(bucket, name) + "?generation=" + percent_encode(generation);
  call(req, "delete of gs://" + bucket + "/" + name + " generation " + generation, 404);
}

}  // namespace etcdadm
