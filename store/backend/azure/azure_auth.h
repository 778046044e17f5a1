// Where an Azure Blob store is and how its requests are authorized, resolved as Azure's own tools
// do, first match wins:
//   account   --azure-account, AZURE_STORAGE_ACCOUNT (kops, etcd-manager), AccountName of
//             AZURE_STORAGE_CONNECTION_STRING
//   endpoint  --azure-endpoint, BlobEndpoint of the connection string, else
//             https://<account>.blob.<EndpointSuffix or core.windows.net>
//   authorization
//     1. Shared Key: AccountKey of the connection string, AZURE_STORAGE_KEY
//     2. a SAS token: SharedAccessSignature of the connection string, AZURE_STORAGE_SAS_TOKEN
//     3. Microsoft Entra ID, as DefaultAzureCredential (which kops uses) tries it:
//        a. a service principal: AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_CLIENT_SECRET
//        b. workload identity (AKS): AZURE_TENANT_ID + AZURE_CLIENT_ID + AZURE_FEDERATED_TOKEN_FILE
//           (the file is read again for every token: the kubelet rotates it), at
//           AZURE_AUTHORITY_HOST (default https://login.microsoftonline.com/)
//        c. managed identity: the instance metadata service (AZURE_CLIENT_ID picks a
//           user-assigned identity; AZURE_POD_IDENTITY_AUTHORITY_HOST replaces its address)
// `UseDevelopmentStorage=true` in the connection string means Azurite's well-known account.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/http_client.h"
#include "common/retry.h"
#include "store/backend/object/oauth_token.h"
#include "store/store_options.h"

namespace etcdadm {

// How requests are authorized: exactly one of the three.
struct AzureAuthorization {
  std::string shared_key;                  // the account key, decoded (raw bytes)
  std::string sas;                         // a SAS token's query string, without '?'
  std::shared_ptr<OAuthTokenCache> entra;  // Microsoft Entra ID bearer tokens
  std::string description;                 // for messages: "Shared Key (AZURE_STORAGE_KEY)"
};

struct AzureConfig {
  std::string
      endpoint;  // no trailing '/': "https://acct.blob.core.windows.net", "http://127.0.0.1:10000/devstoreaccount1"
  std::string account;
  HttpOptions http;
  RetryPolicy retry;
  AzureAuthorization auth;
};

// "k1=v1;k2=v2" (values may contain '='; empty parts skipped). Throws kInvalidArgument naming the
// variable for a part without '='. Keys are kept as written (Azure's are case-sensitive in practice).
std::map<std::string, std::string> parse_azure_connection_string(const std::string& text);

// The chain above. Throws kAuth when nothing authorizes requests (naming what it looked for), and
// kInvalidArgument for unusable settings (no account, a key that is not base64).
AzureConfig resolve_azure_config(const AzureSettings& settings, const Environment& env,
                                 const ObjectStoreSettings& object = {});

// Shared Key (Azure Storage "SharedKey" scheme, version 2009-09-19 and later): the string to sign
// for one request, and its Authorization header. `headers` are the request's (any case);
// `query` its parameters, decoded; `encoded_path` the URL's path as sent.
struct AzureSignedRequest {
  std::string method;
  std::string encoded_path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  uint64_t content_length = 0;
};
std::string azure_string_to_sign(const std::string& account, const AzureSignedRequest& request);
std::string azure_shared_key_authorization(const std::string& account, const std::string& key,
                                           const AzureSignedRequest& request);

}  // namespace etcdadm
