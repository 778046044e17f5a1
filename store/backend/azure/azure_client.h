// The Azure Blob Storage REST calls the Azure store needs, on libcurl: Put Blob, Put Block, Put
// Block List, Get Blob (ranged, pinned to an ETag), Get Blob Properties, List Blobs, Delete Blob,
// and Create Container (tests and first-time setup). Authorized by Shared Key, a SAS token or
// Microsoft Entra ID tokens (store/backend/azure/azure_auth.h).
//
// Requests go through the object stores' HTTP layer (store/backend/object/object_http.h): pooled
// connections, retries (5xx, 429/ServerBusy, timeouts, broken connections), and a 401/403 with an
// Entra token drops the cached token and tries once more. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/http_client.h"
#include "store/backend/azure/azure_auth.h"
#include "store/backend/azure/azure_responses.h"
#include "store/backend/object/object_http.h"

namespace etcdadm {

// The REST API version sent as x-ms-version (bearer tokens need 2017-11-09 or later).
inline constexpr const char* kAzureApiVersion = "2021-12-02";

class AzureClient {
 public:
  explicit AzureClient(AzureConfig config);
  const AzureConfig& config() const { return config_; }
  // Drops a cached Entra token, so the next request gets a new one (the sidecar's SIGHUP).
  void reload_credentials();

  void create_container(const std::string& container);
  // Put Blob (one request). `create_only`: If-None-Match: *, so an existing blob is never replaced
  // (409/412 -> kAlreadyExists).
  void put_blob(const std::string& container, const std::string& blob, std::string_view data, bool create_only);
  // Put Blob that takes effect only if the blob's ETag is `expected_etag` (If-Match) or, for "",
  // only if there is none (If-None-Match: *). Returns the new ETag; nullopt when refused (412
  // ConditionNotMet, 409 BlobAlreadyExists).
  std::optional<std::string> put_blob_if(const std::string& container, const std::string& blob, std::string_view data,
                                         const std::string& expected_etag);
  // The whole blob in one request and its ETag; nullopt when it does not exist, kCorrupt past `limit`.
  std::optional<std::pair<std::string, std::string>> get_small_blob(const std::string& container,
                                                                    const std::string& blob, size_t limit);
  // Put Block: stages block `block_id` of the blob; invisible until put_block_list commits it.
  void put_block(const std::string& container, const std::string& blob, const std::string& block_id,
                 std::string_view data);
  // Put Block List: makes the staged blocks, in this order, the blob's content in one step.
  void put_block_list(const std::string& container, const std::string& blob, const std::vector<std::string>& block_ids,
                      bool create_only);
  std::optional<AzureBlobInfo> get_properties(const std::string& container, const std::string& blob);
  // Streams the blob from `offset` to its end; with `etag`, a changed blob fails (412 -> kCorrupt)
  // instead of splicing two versions. Not retried here (StreamingReader resumes).
  void get_blob(const std::string& container, const std::string& blob, uint64_t offset, const std::string& etag,
                const HttpBodySink& sink);
  AzureListPage list_blobs(const std::string& container, const std::string& prefix, const std::string& marker,
                           int max_results = 5000);
  void delete_blob(const std::string& container, const std::string& blob);  // missing is fine

 private:
  // The request of one attempt: dated, signed or carrying the SAS or the token.
  HttpRequest authorized(const ObjectCall& call) const;
  // The call under the retry policy; a non-2xx answer other than `allowed` is thrown.
  HttpResponse call(const ObjectCall& call, const std::string& what, long allowed = 0);
  std::string describe(const std::string& container, const std::string& blob) const;

  AzureConfig config_;
  UrlParts endpoint_;        // config_.endpoint, split once
  std::string path_prefix_;  // the endpoint's path ("/devstoreaccount1" on Azurite), "" on Azure
  ObjectHttp http_;
};

// Classifies an Azure error answer (exposed for tests). `what` names the operation.
Error azure_error(const HttpResponse& response, const std::string& what, const std::string& auth_description);

}  // namespace etcdadm
