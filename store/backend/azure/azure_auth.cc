#include "store/backend/azure/azure_auth.h"

#include <algorithm>

#include "common/base64.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "common/text.h"

namespace etcdadm {

namespace {

constexpr const char* kStorageScope = "https://storage.azure.com/.default";
constexpr const char* kStorageResource = "https://storage.azure.com/";
// Azurite's well-known development account (UseDevelopmentStorage=true).
constexpr const char* kDevAccount = "devstoreaccount1";
constexpr const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
constexpr const char* kDevEndpoint = "http://127.0.0.1:10000/devstoreaccount1";

std::string decode_account_key(const std::string& key, const std::string& source) {
  std::string text = trim_space(key);
  while (!text.empty() && text.back() == '=') text.pop_back();
  auto raw = base64_unpadded_decode(text);
  if (!raw || raw->empty()) {
    throw Error(ErrorKind::kInvalidArgument, "the storage account key in " + source + " is not base64",
                "copy the key from the storage account's Access keys page (88 characters ending in ==)");
  }
  return *raw;
}

// Microsoft Entra ID: a service principal's secret, or a federated token (AKS workload identity),
// exchanged at the tenant's token endpoint for a token of Azure Storage.
class EntraClientSource : public OAuthTokenSource {
 public:
  EntraClientSource(std::string authority, std::string tenant, std::string client_id, std::string secret,
                    std::string token_file, HttpOptions http)
      : authority_(std::move(authority)),
        tenant_(std::move(tenant)),
        client_id_(std::move(client_id)),
        secret_(std::move(secret)),
        token_file_(std::move(token_file)),
        http_(std::move(http)) {
    if (!authority_.empty() && authority_.back() != '/') authority_ += '/';
  }
  std::string name() const override {
    return token_file_.empty()
               ? "Microsoft Entra ID (AZURE_CLIENT_SECRET of client " + client_id_ + ")"
               : "Microsoft Entra ID workload identity (client " + client_id_ + ", " + token_file_ + ")";
  }
  OAuthToken fetch() override {
    std::vector<std::pair<std::string, std::string>> form = {
        {"client_id", client_id_}, {"scope", kStorageScope}, {"grant_type", "client_credentials"}};
    if (token_file_.empty()) {
      form.emplace_back("client_secret", secret_);
    } else {
      // Read for every token: the kubelet replaces the projected token before it expires.
      form.emplace_back("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
      form.emplace_back("client_assertion", trim_space(read_file(token_file_)));
    }
    std::string body = form_encode(form);
    HttpRequest req;
    req.method = "POST";
    req.url = authority_ + tenant_ + "/oauth2/v2.0/token";
    req.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
    req.body = body;
    return request_oauth_token(
        req, http_, name(),
        "check AZURE_TENANT_ID and AZURE_CLIENT_ID, and that the identity may use this storage account");
  }

 private:
  std::string authority_, tenant_, client_id_, secret_, token_file_;
  HttpOptions http_;
};

// Managed identity through the instance metadata service (VMs, VM scale sets, AKS nodes).
class ManagedIdentitySource : public OAuthTokenSource {
 public:
  ManagedIdentitySource(std::string host, std::string client_id, HttpOptions http)
      : host_(std::move(host)), client_id_(std::move(client_id)), http_(std::move(http)) {
    if (!host_.empty() && host_.back() == '/') host_.pop_back();
    // The metadata service answers at once or not at all: no long waits when it is absent.
    http_.connect_timeout = std::chrono::milliseconds(2000);
  }
  std::string name() const override {
    return "managed identity (" + host_ + (client_id_.empty() ? "" : ", client " + client_id_) + ")";
  }
  OAuthToken fetch() override {
    HttpRequest req;
    req.url = host_ +
              "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=" + percent_encode(kStorageResource) +
              (client_id_.empty() ? "" : "&client_id=" + percent_encode(client_id_));
    req.headers = {{"Metadata", "true"}};
    return request_oauth_token(req, http_, name(),
                               "give the VM or node identity a Storage Blob Data role on the account, or set "
                               "AZURE_STORAGE_KEY / AZURE_STORAGE_SAS_TOKEN");
  }

 private:
  std::string host_, client_id_;
  HttpOptions http_;
};

}  // namespace

std::map<std::string, std::string> parse_azure_connection_string(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(';', pos);
    std::string part = trim_space(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (!part.empty()) {
      auto eq = part.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw Error(ErrorKind::kInvalidArgument,
                    "AZURE_STORAGE_CONNECTION_STRING has a part that is not key=value: '" + part.substr(0, 40) + "'",
                    "copy the connection string from the storage account's Access keys page");
      }
      out[trim_space(part.substr(0, eq))] = part.substr(eq + 1);
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

AzureConfig resolve_azure_config(const AzureSettings& settings, const Environment& env,
                                 const ObjectStoreSettings& object) {
  AzureConfig c;
  c.http.ca_file = object.ca_bundle;
  c.http.verify_tls = !object.insecure_skip_verify;
  c.http.idle_timeout = object.idle_timeout;
  std::map<std::string, std::string> cs;
  if (std::string text = env.value("AZURE_STORAGE_CONNECTION_STRING"); !text.empty()) {
    cs = parse_azure_connection_string(text);
    if (ascii_lower(cs["UseDevelopmentStorage"]) == "true") {
      cs.emplace("AccountName", kDevAccount);
      cs.emplace("AccountKey", kDevKey);
      cs.emplace("BlobEndpoint", kDevEndpoint);
    }
  }
  c.account = first_non_empty({settings.account, env.value("AZURE_STORAGE_ACCOUNT"), cs["AccountName"]});
  if (c.account.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "no Azure storage account given",
                "set AZURE_STORAGE_ACCOUNT (as kops does) or --azure-account, or AZURE_STORAGE_CONNECTION_STRING");
  }
  std::string suffix = first_non_empty({cs["EndpointSuffix"], "core.windows.net"});
  std::string protocol = first_non_empty({cs["DefaultEndpointsProtocol"], "https"});
  c.endpoint =
      first_non_empty({settings.endpoint, cs["BlobEndpoint"], protocol + "://" + c.account + ".blob." + suffix});
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  split_url(c.endpoint);  // throws for anything but http(s)

  if (!cs["AccountKey"].empty()) {
    c.auth.shared_key = decode_account_key(cs["AccountKey"], "AZURE_STORAGE_CONNECTION_STRING");
    c.auth.description = "Shared Key (AccountKey of AZURE_STORAGE_CONNECTION_STRING)";
  } else if (std::string key = env.value("AZURE_STORAGE_KEY"); !key.empty()) {
    c.auth.shared_key = decode_account_key(key, "AZURE_STORAGE_KEY");
    c.auth.description = "Shared Key (AZURE_STORAGE_KEY)";
  } else if (std::string sas = first_non_empty({cs["SharedAccessSignature"], env.value("AZURE_STORAGE_SAS_TOKEN")});
             !sas.empty()) {
    c.auth.sas = trim_space(sas);
    if (!c.auth.sas.empty() && c.auth.sas.front() == '?') c.auth.sas.erase(0, 1);
    c.auth.description = "SAS token";
  } else {
    std::string tenant = env.value("AZURE_TENANT_ID"), client = env.value("AZURE_CLIENT_ID");
    std::string authority = first_non_empty({env.value("AZURE_AUTHORITY_HOST"), "https://login.microsoftonline.com/"});
    std::unique_ptr<OAuthTokenSource> source;
    if (!tenant.empty() && !client.empty() && !env.value("AZURE_CLIENT_SECRET").empty()) {
      source = std::make_unique<EntraClientSource>(authority, tenant, client, env.value("AZURE_CLIENT_SECRET"), "",
                                                   credentials_http_options(c.http));
    } else if (!tenant.empty() && !client.empty() && !env.value("AZURE_FEDERATED_TOKEN_FILE").empty()) {
      source = std::make_unique<EntraClientSource>(
          authority, tenant, client, "", env.value("AZURE_FEDERATED_TOKEN_FILE"), credentials_http_options(c.http));
    } else {
      std::string host = first_non_empty({env.value("AZURE_POD_IDENTITY_AUTHORITY_HOST"), "http://169.254.169.254"});
      source = std::make_unique<ManagedIdentitySource>(host, client, credentials_http_options(c.http));
    }
    c.auth.description = source->name();
    c.auth.entra = std::make_shared<OAuthTokenCache>(std::move(source));
  }
  return c;
}

std::string azure_string_to_sign(const std::string& account, const AzureSignedRequest& r) {
  std::map<std::string, std::string> headers;  // lower-case names
  for (const auto& [name, value] : r.headers) headers[ascii_lower(name)] = trim_space(value);
  auto h = [&](const char* name) {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  };
  std::string s = r.method + "\n" + h("content-encoding") + "\n" + h("content-language") + "\n" +
                  (r.content_length == 0 ? "" : std::to_string(r.content_length)) + "\n" + h("content-md5") + "\n" +
                  h("content-type") + "\n" + h("date") + "\n" + h("if-modified-since") + "\n" + h("if-match") + "\n" +
                  h("if-none-match") + "\n" + h("if-unmodified-since") + "\n" + h("range") + "\n";
  for (const auto& [name, value] : headers) {  // std::map: sorted by name
    if (name.rfind("x-ms-", 0) == 0) s += name + ":" + value + "\n";
  }
  s += "/" + account + r.encoded_path;
  std::map<std::string, std::vector<std::string>> query;
  for (const auto& [name, value] : r.query) query[ascii_lower(name)].push_back(value);
  for (auto& [name, values] : query) {
    std::sort(values.begin(), values.end());
    s += "\n" + name + ":";
    for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + values[i];
  }
  return s;
}

std::string azure_shared_key_authorization(const std::string& account, const std::string& key,
                                           const AzureSignedRequest& request) {
  return "SharedKey " + account + ":" + base64(hmac_sha256(key, azure_string_to_sign(account, request)));
}

}  // namespace etcdadm
