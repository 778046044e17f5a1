#include "store/backend/azure/azure_client.h"

#include "common/error.h"
#include "common/retry.h"
#include "common/timefmt.h"

namespace etcdadm {

Error azure_error(const HttpResponse& response, const std::string& what, const std::string& auth_description) {
  AzureErrorBody body = parse_azure_error_body(response.body);
  std::string code = body.code.empty() ? response.header("x-ms-error-code") : body.code;
  long st = response.status;
  std::string text = what + ": HTTP " + std::to_string(st) + (code.empty() ? "" : " " + code) +
                     (body.message.empty() ? "" : ": " + body.message);
  if (st >= 500 || st == 429 || st == 408) return Error(ErrorKind::kUnavailable, text, "Azure is busy or failing; retried with backoff");
  if (st == 401 || st == 403) {
    if (code == "AuthenticationFailed") {
      return Error(ErrorKind::kAuth, text,
                   "the request's signature or token was refused (" + auth_description +
                       "): check the account name and key, the SAS token's expiry and permissions, or the identity");
    }
    return Error(ErrorKind::kAuth, text,
                 "not allowed with " + auth_description +
                     ": the identity needs the Storage Blob Data Contributor role (a SAS: read, add, create, write, delete, list)");
  }
  if (st == 404) {
    if (code == "ContainerNotFound") return Error(ErrorKind::kNotFound, text, "create the container first, or check the URL");
    return Error(ErrorKind::kNotFound, text);
  }
  if (st == 409 || st == 412) return Error(ErrorKind::kAlreadyExists, text);
  return Error(ErrorKind::kInvalidArgument, text);
}

AzureClient::AzureClient(AzureConfig config) : config_(std::move(config)), endpoint_(split_url(config_.endpoint)) {
  path_prefix_ = endpoint_.path == "/" ? "" : endpoint_.path;
  while (!path_prefix_.empty() && path_prefix_.back() == '/') path_prefix_.pop_back();
}

void AzureClient::reload_credentials() {
  if (config_.auth.entra) config_.auth.entra->invalidate();
}

std::string AzureClient::describe(const std::string& container, const std::string& blob) const {
  return "azureblob://" + container + (blob.empty() ? "" : "/" + blob);
}

HttpResponse AzureClient::send(const Call& c, const HttpBodySink& sink) {
  std::string path = path_prefix_ + "/" + percent_encode(c.container) + (c.blob.empty() ? "" : "/" + percent_encode(c.blob, /*keep_slash=*/true));
  for (int attempt = 0;; ++attempt) {
    HttpRequest req;
    req.method = c.method;
    req.body = c.body;
    req.headers = c.headers;
    req.headers.emplace_back("x-ms-date", format_http_date(std::chrono::system_clock::now()));
    req.headers.emplace_back("x-ms-version", kAzureApiVersion);
    std::string query;
    for (const auto& [k, v] : c.query) query += (query.empty() ? "" : "&") + percent_encode(k) + (v.empty() ? "" : "=" + percent_encode(v));
    std::string bearer;
    if (!config_.auth.sas.empty()) {
      query += (query.empty() ? "" : "&") + config_.auth.sas;
    } else if (!config_.auth.shared_key.empty()) {
      AzureSignedRequest s{c.method, path, c.query, req.headers, c.body.size()};
      req.headers.emplace_back("Authorization", azure_shared_key_authorization(config_.account, config_.auth.shared_key, s));
    } else if (config_.auth.entra) {
      bearer = config_.auth.entra->authorization();
      req.headers.emplace_back("Authorization", bearer);
    }
    req.url = endpoint_.scheme + "://" + endpoint_.authority + path + (query.empty() ? "" : "?" + query);
    HttpClient client(config_.http);
    HttpResponse resp = client.perform(req, sink);
    if ((resp.status == 401 || resp.status == 403) && attempt == 0 && !bearer.empty()) {
      config_.auth.entra->invalidate();  // expired early or revoked: one more try with a fresh token
      continue;
    }
    return resp;
  }
}

HttpResponse AzureClient::call(const Call& c, const std::string& what, long allowed) {
  HttpResponse out;
  with_retries(config_.retry, what, [&] {
    HttpResponse r = send(c);
    if (!r.ok() && r.status != allowed) throw azure_error(r, what, config_.auth.description);
    out = std::move(r);
  });
  return out;
}

void AzureClient::create_container(const std::string& container) {
  call(Call{.method = "PUT", .container = container, .query = {{"restype", "container"}}}, "creating container " + container);
}

void AzureClient::put_blob(const std::string& container, const std::string& blob, std::string_view data, bool create_only) {
  Call c{.method = "PUT", .container = container, .blob = blob};
  c.headers = {{"x-ms-blob-type", "BlockBlob"}, {"Content-Type", "application/octet-stream"}};
  if (create_only) c.headers.emplace_back("If-None-Match", "*");
  c.body = data;
  call(c, "upload of " + describe(container, blob));
}

void AzureClient::put_block(const std::string& container, const std::string& blob, const std::string& block_id,
                            std::string_view data) {
  Call c{.method = "PUT", .container = container, .blob = blob, .query = {{"comp", "block"}, {"blockid", block_id}}};
  c.headers = {{"Content-Type", "application/octet-stream"}};
  c.body = data;
  call(c, "upload of a block of " + describe(container, blob));
}

void AzureClient::put_block_list(const std::string& container, const std::string& blob,
                                 const std::vector<std::string>& block_ids, bool create_only) {
  std::string body = azure_block_list_xml(block_ids);
  Call c{.method = "PUT", .container = container, .blob = blob, .query = {{"comp", "blocklist"}}};
  c.headers = {{"Content-Type", "application/xml"}, {"x-ms-blob-content-type", "application/octet-stream"}};
  if (create_only) c.headers.emplace_back("If-None-Match", "*");
  c.body = body;
  call(c, "commit of " + describe(container, blob));
}

std::optional<AzureBlobInfo> AzureClient::get_properties(const std::string& container, const std::string& blob) {
  HttpResponse r = call(Call{.method = "HEAD", .container = container, .blob = blob}, "properties of " + describe(container, blob), 404);
  if (r.status == 404) return std::nullopt;
  HttpObjectHead head = object_head(r, "properties of " + describe(container, blob));
  return AzureBlobInfo{blob, head.size, head.modified_unix_micros, head.etag};
}

void AzureClient::get_blob(const std::string& container, const std::string& blob, uint64_t offset, const std::string& etag,
                           const HttpBodySink& sink) {
  Call c{.method = "GET", .container = container, .blob = blob};
  if (offset > 0) c.headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-");
  if (!etag.empty()) c.headers.emplace_back("If-Match", etag);
  std::string what = "download of " + describe(container, blob);
  HttpResponse r = send(c, sink);
  if (r.status == 412) throw Error(ErrorKind::kCorrupt, what + ": the blob changed while it was read", "read it again");
  if (!r.ok()) throw azure_error(r, what, config_.auth.description);
}

AzureListPage AzureClient::list_blobs(const std::string& container, const std::string& prefix, const std::string& marker,
                                      int max_results) {
  Call c{.method = "GET", .container = container,
         .query = {{"restype", "container"}, {"comp", "list"}, {"maxresults", std::to_string(max_results)}}};
  if (!prefix.empty()) c.query.emplace_back("prefix", prefix);
  if (!marker.empty()) c.query.emplace_back("marker", marker);
  std::string what = "listing " + describe(container, prefix);
  HttpResponse r = call(c, what);
  return parse_azure_list_blobs(r.body, what);
}

void AzureClient::delete_blob(const std::string& container, const std::string& blob) {
  Call c{.method = "DELETE", .container = container, .blob = blob, .headers = {{"x-ms-delete-snapshots", "include"}}};
  call(c, "delete of " + describe(container, blob), 404);
}

}  // namespace etcdadm
