#include "store/backend/azure/azure_client.h"

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm {

Error azure_error(const HttpResponse& response, const std::string& what, const std::string& auth_description) {
  AzureErrorBody body = parse_azure_error_body(response.body);
  std::string code = body.code.empty() ? response.header("x-ms-error-code") : body.code;
  long st = response.status;
  std::string text = what + ": HTTP " + std::to_string(st) + (code.empty() ? "" : " " + code) +
                     (body.message.empty() ? "" : ": " + body.message);
  if (st >= 500 || st == 429 || st == 408)
    return Error(ErrorKind::kUnavailable, text, "Azure is busy or failing; retried with backoff");
  if (st == 401 || st == 403) {
    if (code == "AuthenticationFailed") {
      return Error(ErrorKind::kAuth, text,
                   "the request's signature or token was refused (" + auth_description +
                       "): check the account name and key, the SAS token's expiry and permissions, or the identity");
    }
    return Error(ErrorKind::kAuth, text,
                 "not allowed with " + auth_description +
                     ": the identity needs the Storage Blob Data Contributor role (a SAS: read, add, create, write, "
                     "delete, list)");
  }
  if (st == 404) {
    if (code == "ContainerNotFound")
      return Error(ErrorKind::kNotFound, text, "create the container first, or check the URL");
    return Error(ErrorKind::kNotFound, text);
  }
  if (st == 409 || st == 412) return Error(ErrorKind::kAlreadyExists, text);
  return Error(ErrorKind::kInvalidArgument, text);
}

AzureClient::AzureClient(AzureConfig config)
    : config_(std::move(config)),
      endpoint_(split_url(config_.endpoint)),
      http_(config_.http, config_.retry,
            ObjectHttp::Protocol{
                .classify = [this](const HttpResponse& r,
                                   const std::string& what) { return azure_error(r, what, config_.auth.description); },
                // Only an Entra token can be fetched anew; a key or a SAS refused stays refused.
                .refresh_credentials =
                    [this](const HttpResponse&) {
                      if (!config_.auth.sas.empty() || !config_.auth.shared_key.empty() || !config_.auth.entra)
                        return false;
                      config_.auth.entra->invalidate();
                      return true;
                    }}) {
  path_prefix_ = endpoint_.path == "/" ? "" : endpoint_.path;
  while (!path_prefix_.empty() && path_prefix_.back() == '/') path_prefix_.pop_back();
}

void AzureClient::reload_credentials() {
  if (config_.auth.entra) config_.auth.entra->invalidate();
}

std::string AzureClient::describe(const std::string& container, const std::string& blob) const {
  return "azureblob://" + container + (blob.empty() ? "" : "/" + blob);
}

HttpRequest AzureClient::authorized(const ObjectCall& c) const {
  std::string path = path_prefix_ + object_call_path(c);
  HttpRequest req;
  req.method = c.method;
  req.body = c.body;
  req.headers = c.headers;
  req.headers.emplace_back("x-ms-date", format_http_date(std::chrono::system_clock::now()));
  req.headers.emplace_back("x-ms-version", kAzureApiVersion);
  std::string query = encode_query(c.query);
  if (!config_.auth.sas.empty()) {
    query += (query.empty() ? "" : "&") + config_.auth.sas;
  } else if (!config_.auth.shared_key.empty()) {
    AzureSignedRequest s{c.method, path, c.query, req.headers, c.body.size()};
    req.headers.emplace_back("Authorization",
                             azure_shared_key_authorization(config_.account, config_.auth.shared_key, s));
  } else if (config_.auth.entra) {
    req.headers.emplace_back("Authorization", config_.auth.entra->authorization());
  }
  req.url = endpoint_.scheme + "://" + endpoint_.authority + path + (query.empty() ? "" : "?" + query);
  return req;
}

HttpResponse AzureClient::call(const ObjectCall& c, const std::string& what, long allowed) {
  return http_.call([&] { return authorized(c); }, what, {allowed});
}

void AzureClient::create_container(const std::string& container) {
  call(ObjectCall{.method = "PUT", .container = container, .query = {{"restype", "container"}}},
       "creating container " + container);
}

void AzureClient::put_blob(const std::string& container, const std::string& blob, std::string_view data,
                           bool create_only) {
  ObjectCall c{.method = "PUT", .container = container, .object = blob};
  c.headers = {{"x-ms-blob-type", "BlockBlob"}, {"Content-Type", "application/octet-stream"}};
  if (create_only) c.headers.emplace_back("If-None-Match", "*");
  c.body = data;
  call(c, "upload of " + describe(container, blob));
}

std::optional<std::string> AzureClient::put_blob_if(const std::string& container, const std::string& blob,
                                                    std::string_view data, const std::string& expected_etag) {
  ObjectCall c{.method = "PUT", .container = container, .object = blob};
  c.headers = {{"x-ms-blob-type", "BlockBlob"}, {"Content-Type", "application/octet-stream"}};
  if (expected_etag.empty())
    c.headers.emplace_back("If-None-Match", "*");
  else
    c.headers.emplace_back("If-Match", expected_etag);
  c.body = data;
  try {
    HttpResponse r = call(c, "conditional upload of " + describe(container, blob));
    std::string etag = r.header("etag");
    if (etag.empty())
      throw Error(ErrorKind::kCorrupt,
                  "conditional upload of " + describe(container, blob) + ": no ETag in the answer");
    return etag;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kAlreadyExists) return std::nullopt;  // 409 BlobAlreadyExists, 412 ConditionNotMet
    throw;
  }
}

std::optional<std::pair<std::string, std::string>> AzureClient::get_small_blob(const std::string& container,
                                                                               const std::string& blob, size_t limit) {
  const std::string what = "read of " + describe(container, blob);
  HttpResponse r = call(ObjectCall{.method = "GET", .container = container, .object = blob}, what, 404);
  if (r.status == 404) return std::nullopt;
  if (r.body.size() > limit) throw Error(ErrorKind::kCorrupt, what + ": larger than expected");
  std::string etag = r.header("etag");
  if (etag.empty()) throw Error(ErrorKind::kCorrupt, what + ": no ETag in the answer");
  return std::make_pair(std::move(r.body), std::move(etag));
}

void AzureClient::put_block(const std::string& container, const std::string& blob, const std::string& block_id,
                            std::string_view data) {
  ObjectCall c{
      .method = "PUT", .container = container, .object = blob, .query = {{"comp", "block"}, {"blockid", block_id}}};
  c.headers = {{"Content-Type", "application/octet-stream"}};
  c.body = data;
  call(c, "upload of a block of " + describe(container, blob));
}

void AzureClient::put_block_list(const std::string& container, const std::string& blob,
                                 const std::vector<std::string>& block_ids, bool create_only) {
  std::string body = azure_block_list_xml(block_ids);
  ObjectCall c{.method = "PUT", .container = container, .object = blob, .query = {{"comp", "blocklist"}}};
  c.headers = {{"Content-Type", "application/xml"}, {"x-ms-blob-content-type", "application/octet-stream"}};
  if (create_only) c.headers.emplace_back("If-None-Match", "*");
  c.body = body;
  call(c, "commit of " + describe(container, blob));
}

std::optional<AzureBlobInfo> AzureClient::get_properties(const std::string& container, const std::string& blob) {
  HttpResponse r = call(ObjectCall{.method = "HEAD", .container = container, .object = blob},
                        "properties of " + describe(container, blob), 404);
  if (r.status == 404) return std::nullopt;
  HttpObjectHead head = object_head(r, "properties of " + describe(container, blob));
  return AzureBlobInfo{blob, head.size, head.modified_unix_micros, head.etag};
}

void AzureClient::get_blob(const std::string& container, const std::string& blob, uint64_t offset,
                           const std::string& etag, const HttpBodySink& sink) {
  ObjectCall c{.method = "GET", .container = container, .object = blob};
  add_read_headers(c.headers, offset, etag);
  http_.read([&] { return authorized(c); }, "download of " + describe(container, blob), sink);
}

AzureListPage AzureClient::list_blobs(const std::string& container, const std::string& prefix,
                                      const std::string& marker, int max_results) {
  ObjectCall c{.method = "GET",
               .container = container,
               .query = {{"restype", "container"}, {"comp", "list"}, {"maxresults", std::to_string(max_results)}}};
  if (!prefix.empty()) c.query.emplace_back("prefix", prefix);
  if (!marker.empty()) c.query.emplace_back("marker", marker);
  std::string what = "listing " + describe(container, prefix);
  HttpResponse r = call(c, what);
  return parse_azure_list_blobs(r.body, what);
}

void AzureClient::delete_blob(const std::string& container, const std::string& blob) {
  ObjectCall c{
      .method = "DELETE", .container = container, .object = blob, .headers = {{"x-ms-delete-snapshots", "include"}}};
  call(c, "delete of " + describe(container, blob), 404);
}

}  // namespace etcdadm
