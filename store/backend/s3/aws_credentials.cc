#include "store/backend/s3/aws_credentials.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "common/retry.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "store/backend/s3/aws_responses.h"

namespace etcdadm {

namespace {

using Clock = std::chrono::system_clock;
constexpr auto kRefreshMargin = std::chrono::minutes(5);

// An AWS shared config/credentials file: section -> key -> value. Indented "sub = value" lines
// under a key with an empty value (e.g. "s3 =\n  addressing_style = path") become "key.sub".
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

IniFile parse_ini(const std::string& text) {
  IniFile out;
  std::string section, parent;
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) {
    std::string line = trim_space(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim_space(line.substr(1, line.size() - 2));
      parent.clear();
      out[section];
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    std::string key = trim_space(line.substr(0, eq));
    std::string value = trim_space(line.substr(eq + 1));
    bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
    if (indented && !parent.empty()) {
      out[section][parent + "." + key] = value;
    } else {
      out[section][key] = value;
      parent = value.empty() ? key : "";
    }
  }
  return out;
}

std::optional<IniFile> load_ini(const std::string& path) {
  if (path.empty() || !path_exists(path)) return std::nullopt;
  try {
    return parse_ini(read_file(path));
  } catch (const Error& e) {
    throw Error(ErrorKind::kAuth, "cannot read AWS file " + path + ": " + e.what());
  }
}

std::string profile_name(const Environment& env) {
  std::string p = env.value("AWS_PROFILE");
  return p.empty() ? "default" : p;
}

std::string credentials_file(const Environment& env) {
  std::string p = env.value("AWS_SHARED_CREDENTIALS_FILE");
  return p.empty() ? (env.home.empty() ? "" : env.home + "/.aws/credentials") : p;
}

std::string config_file(const Environment& env) {
  std::string p = env.value("AWS_CONFIG_FILE");
  return p.empty() ? (env.home.empty() ? "" : env.home + "/.aws/config") : p;
}

// The profile's section in ~/.aws/config: "[default]" or "[profile NAME]".
const std::map<std::string, std::string>* config_section(const IniFile& ini, const std::string& profile) {
  auto it = ini.find(profile == "default" ? "default" : "profile " + profile);
  if (it == ini.end() && profile == "default") it = ini.find("profile default");
  return it == ini.end() ? nullptr : &it->second;
}

std::string get_or_empty(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? "" : it->second;
}

class StaticSource : public AwsCredentialSource {
 public:
  explicit StaticSource(AwsCredentials c) : c_(std::move(c)) {}
  std::string name() const override { return c_.source; }
  std::optional<AwsCredentials> resolve() override { return c_; }

 private:
  AwsCredentials c_;
};

// A pair of variables holding a key; half a pair is a configuration error.
class EnvKeySource : public AwsCredentialSource {
 public:
  EnvKeySource(Environment env, std::string id_var, std::string secret_var, std::string token_var)
      : env_(std::move(env)), id_(std::move(id_var)), secret_(std::move(secret_var)), token_(std::move(token_var)) {}
  std::string name() const override { return "environment (" + id_ + ")"; }
  std::optional<AwsCredentials> resolve() override {
    std::string id = env_.value(id_), secret = env_.value(secret_);
    if (id.empty() && secret.empty()) return std::nullopt;
    if (id.empty() || secret.empty()) {
      throw Error(ErrorKind::kAuth, "only one of " + id_ + " and " + secret_ + " is set",
                  "set both, or unset both to use another credential source");
    }
    AwsCredentials c;
    c.access_key_id = id;
    c.secret_access_key = secret;
    if (!token_.empty()) c.session_token = env_.value(token_);
    c.source = name();
    return c;
  }

 private:
  Environment env_;
  std::string id_, secret_, token_;
};

// AssumeRoleWithWebIdentity: an unsigned STS call that trades the pod's projected service-account
// token for temporary role credentials.
class WebIdentitySource : public AwsCredentialSource {
 public:
  WebIdentitySource(std::string label, std::string token_file, std::string role_arn, std::string session_name,
                    std::string sts_endpoint, HttpOptions http)
      : label_(std::move(label)),
        token_file_(std::move(token_file)),
        role_arn_(std::move(role_arn)),
        session_name_(std::move(session_name)),
        sts_endpoint_(std::move(sts_endpoint)),
        http_(std::move(http)) {}
  std::string name() const override { return label_; }
  std::optional<AwsCredentials> resolve() override {
    std::string token;
    try {
      token = trim_space(read_file(token_file_));
    } catch (const Error& e) {
      throw Error(ErrorKind::kAuth, "web identity token file " + token_file_ + " cannot be read: " + e.what(),
                  "check AWS_WEB_IDENTITY_TOKEN_FILE and the service account token projection");
    }
    if (token.empty()) throw Error(ErrorKind::kAuth, "web identity token file " + token_file_ + " is empty");
    std::string body = form_encode({{"Action", "AssumeRoleWithWebIdentity"},
                                    {"Version", "2011-06-15"},
                                    {"RoleArn", role_arn_},
                                    {"RoleSessionName", session_name_},
                                    {"WebIdentityToken", token}});
    HttpRequest req;
    req.method = "POST";
    req.url = sts_endpoint_;
    req.headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/xml"}};
    req.body = body;
    HttpResponse resp;
    with_retries(RetryPolicy{4, std::chrono::milliseconds(200), std::chrono::milliseconds(3000)},
                 "STS AssumeRoleWithWebIdentity", [&] {
                   HttpClient client(http_);
                   resp = client.perform(req);
                   if (resp.status >= 500 || resp.status == 429) {
                     throw Error(ErrorKind::kUnavailable, "STS answered HTTP " + std::to_string(resp.status));
                   }
                 });
    if (!resp.ok()) {
      S3ErrorBody e = parse_s3_error_body(resp.body);  // STS answers the same <Error> document
      const std::string& code = e.code;
      const std::string& message = e.message;
      throw Error(ErrorKind::kAuth,
                  "STS refused AssumeRoleWithWebIdentity for role " + role_arn_ + ": HTTP " +
                      std::to_string(resp.status) + (code.empty() ? "" : " " + code) +
                      (message.empty() ? "" : ": " + message),
                  "check the role's trust policy for this cluster's OIDC provider and service account");
    }
    AwsCredentials c = parse_sts_credentials(resp.body);
    c.source = label_;
    return c;
  }

 private:
  std::string label_, token_file_, role_arn_, session_name_, sts_endpoint_;
  HttpOptions http_;
};

class ProfileSource : public AwsCredentialSource {
 public:
  ProfileSource(Environment env, std::string sts_endpoint, HttpOptions http)
      : env_(std::move(env)), sts_endpoint_(std::move(sts_endpoint)), http_(std::move(http)) {}
  std::string name() const override { return "profile " + profile_name(env_); }
  std::optional<AwsCredentials> resolve() override {
    std::string profile = profile_name(env_);
    bool explicit_profile = !env_.value("AWS_PROFILE").empty();
    auto creds = load_ini(credentials_file(env_));
    auto config = load_ini(config_file(env_));
    std::map<std::string, std::string> merged;
    bool found = false;
    if (config) {
      if (const auto* sec = config_section(*config, profile)) {
        merged = *sec;
        found = true;
      }
    }
    if (creds) {
      auto it = creds->find(profile);
      if (it != creds->end()) {
        for (const auto& [k, v] : it->second) merged[k] = v;  // the credentials file wins
        found = true;
      }
    }
    if (!found) {
      if (explicit_profile) {
        throw Error(ErrorKind::kAuth, "AWS_PROFILE=" + profile + " names a profile that is in neither " +
                                          credentials_file(env_) + " nor " + config_file(env_));
      }
      return std::nullopt;
    }
    std::string id = get_or_empty(merged, "aws_access_key_id");
    std::string secret = get_or_empty(merged, "aws_secret_access_key");
    if (!id.empty() || !secret.empty()) {
      if (id.empty() || secret.empty()) {
        throw Error(ErrorKind::kAuth,
                    "profile " + profile + " has only one of aws_access_key_id and aws_secret_access_key");
      }
      AwsCredentials c;
      c.access_key_id = id;
      c.secret_access_key = secret;
      c.session_token = get_or_empty(merged, "aws_session_token");
      c.source = name();
      return c;
    }
    std::string token_file = get_or_empty(merged, "web_identity_token_file");
    std::string role = get_or_empty(merged, "role_arn");
    if (!token_file.empty() && !role.empty()) {
      std::string session = get_or_empty(merged, "role_session_name");
      WebIdentitySource w(name() + " (web identity)", token_file, role, session.empty() ? "etcdadm" : session,
                          sts_endpoint_, http_);
      return w.resolve();
    }
    if (!role.empty() || !get_or_empty(merged, "credential_process").empty() ||
        !get_or_empty(merged, "sso_start_url").empty()) {
      throw Error(ErrorKind::kAuth,
                  "profile " + profile +
                      " uses a credential type etcdadm does not support (role chaining, "
                      "credential_process or SSO)",
                  "use static keys, web identity, or instance/container credentials for this profile");
    }
    if (explicit_profile) throw Error(ErrorKind::kAuth, "profile " + profile + " holds no credentials");
    return std::nullopt;
  }

 private:
  Environment env_;
  std::string sts_endpoint_;
  HttpOptions http_;
};

// Short timeouts: off EC2/ECS these endpoints do not exist, and the chain must not hang there.
HttpOptions metadata_http() {
  HttpOptions o;
  o.connect_timeout = std::chrono::milliseconds(1000);
  o.idle_timeout = std::chrono::milliseconds(3000);
  return o;
}

class ContainerSource : public AwsCredentialSource {
 public:
  explicit ContainerSource(Environment env) : env_(std::move(env)) {}
  std::string name() const override { return "container credentials endpoint"; }
  std::optional<AwsCredentials> resolve() override {
    std::string full = env_.value("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    std::string rel = env_.value("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    if (full.empty() && rel.empty()) return std::nullopt;
    HttpRequest req;
    req.url = !rel.empty() ? "http://169.254.170.2" + rel : full;
    std::string token = env_.value("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    std::string token_file = env_.value("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (!token_file.empty()) token = trim_space(read_file(token_file));
    if (!token.empty()) req.headers.emplace_back("Authorization", token);
    HttpResponse resp;
    with_retries(RetryPolicy{3, std::chrono::milliseconds(100), std::chrono::milliseconds(1000)}, name(), [&] {
      HttpClient client(metadata_http());
      resp = client.perform(req);
      if (resp.status >= 500) throw Error(ErrorKind::kUnavailable, "HTTP " + std::to_string(resp.status));
    });
    if (!resp.ok()) throw Error(ErrorKind::kAuth, name() + " answered HTTP " + std::to_string(resp.status));
    return parse_credentials_json(resp.body, name());
  }

 private:
  Environment env_;
};

class InstanceMetadataSource : public AwsCredentialSource {
 public:
  explicit InstanceMetadataSource(Environment env) : env_(std::move(env)) {}
  std::string name() const override { return "EC2 instance metadata"; }
  std::optional<AwsCredentials> resolve() override {
    std::string disabled = env_.value("AWS_EC2_METADATA_DISABLED");
    if (disabled == "true" || disabled == "TRUE" || disabled == "1") return std::nullopt;
    std::string base = env_.value("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if (base.empty()) base = "http://169.254.169.254";
    while (!base.empty() && base.back() == '/') base.pop_back();
    HttpClient client(metadata_http());

    // IMDSv2: a session token first. Instances that only allow v1 refuse the PUT (403/404/405);
    // a network failure means we are not on EC2 at all.
    std::string token;
    HttpRequest put;
    put.method = "PUT";
    put.url = base + "/latest/api/token";
    put.headers = {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}};
    try {
      HttpResponse r = client.perform(put);
      if (r.ok()) token = r.body;
    } catch (const Error& e) {
      spdlog::debug("instance metadata not reachable at {}: {}", base, e.what());
      return std::nullopt;
    }
    auto get = [&](const std::string& path) {
      HttpRequest req;
      req.url = base + path;
      if (!token.empty()) req.headers.emplace_back("X-aws-ec2-metadata-token", token);
      return client.perform(req);
    };
    HttpResponse roles = get("/latest/meta-data/iam/security-credentials/");
    if (roles.status == 404) {
      throw Error(ErrorKind::kAuth, "this instance has no IAM role (instance metadata lists none)",
                  "attach an instance profile, or give credentials another way");
    }
    if (!roles.ok()) throw Error(ErrorKind::kAuth, name() + " answered HTTP " + std::to_string(roles.status));
    std::string role = trim_space(roles.body.substr(0, roles.body.find('\n')));
    HttpResponse creds = get("/latest/meta-data/iam/security-credentials/" + role);
    if (!creds.ok())
      throw Error(ErrorKind::kAuth, name() + " answered HTTP " + std::to_string(creds.status) + " for role " + role);
    return parse_credentials_json(creds.body, name() + " (role " + role + ")");
  }

 private:
  Environment env_;
};

std::string sts_endpoint_for(const Environment& env, const std::string& region) {
  std::string e = env.value("AWS_ENDPOINT_URL_STS");
  if (!e.empty()) return e;
  if (region.empty()) return "https://sts.amazonaws.com/";
  std::string suffix = region.rfind("cn-", 0) == 0 ? "amazonaws.com.cn" : "amazonaws.com";
  return "https://sts." + region + "." + suffix + "/";
}

}  // namespace

AwsCredentialProvider::AwsCredentialProvider(std::vector<std::unique_ptr<AwsCredentialSource>> sources)
    : sources_(std::move(sources)) {}

AwsCredentials AwsCredentialProvider::get() {
  std::lock_guard<std::mutex> lock(mu_);
  auto fresh_enough = [](const AwsCredentials& c) {
    return !c.expiration || Clock::now() + kRefreshMargin < *c.expiration;
  };
  if (cached_ && fresh_enough(*cached_)) return *cached_;
  if (winner_ != nullptr) {
    try {
      auto c = winner_->resolve();
      if (c) {
        spdlog::debug("refreshed AWS credentials from {}", winner_->name());
        cached_ = *c;
        return *cached_;
      }
    } catch (const Error& e) {
      // Keep using the old credentials while they are still valid; the next call tries again.
      if (cached_ && cached_->expiration && Clock::now() < *cached_->expiration) {
        spdlog::warn("refreshing AWS credentials from {} failed ({}); the current ones expire at {}", winner_->name(),
                     e.what(), format_rfc3339_seconds(*cached_->expiration));
        return *cached_;
      }
      throw;
    }
  }
  std::string tried;
  for (auto& s : sources_) {
    auto c = s->resolve();
    if (c) {
      winner_ = s.get();
      cached_ = *c;
      spdlog::debug("using AWS credentials from {}", s->name());
      return *cached_;
    }
    tried += (tried.empty() ? "" : ", ") + s->name();
  }
  throw Error(ErrorKind::kAuth, "no AWS credentials found (looked at: " + tried + ")",
              "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run with an IAM role "
              "(docs/operations.md lists every source)");
}

void AwsCredentialProvider::invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  cached_.reset();
  winner_ = nullptr;
}

std::shared_ptr<AwsCredentialProvider> make_static_credentials(AwsCredentials credentials) {
  std::vector<std::unique_ptr<AwsCredentialSource>> s;
  if (credentials.source.empty()) credentials.source = "static credentials";
  s.push_back(std::make_unique<StaticSource>(std::move(credentials)));
  return std::make_shared<AwsCredentialProvider>(std::move(s));
}

std::shared_ptr<AwsCredentialProvider> make_default_credential_chain(const Environment& env, const std::string& region,
                                                                     const HttpOptions& http) {
  std::string sts = sts_endpoint_for(env, region);
  std::vector<std::unique_ptr<AwsCredentialSource>> s;
  s.push_back(std::make_unique<EnvKeySource>(env, "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY", ""));
  s.push_back(std::make_unique<EnvKeySource>(env, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"));
  s.push_back(std::make_unique<ProfileSource>(env, sts, http));
  std::string token_file = env.value("AWS_WEB_IDENTITY_TOKEN_FILE");
  std::string role = env.value("AWS_ROLE_ARN");
  if (!token_file.empty() || !role.empty()) {
    if (token_file.empty() || role.empty()) {
      throw Error(ErrorKind::kAuth, "web identity needs both AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN");
    }
    std::string session = env.value("AWS_ROLE_SESSION_NAME");
    s.push_back(std::make_unique<WebIdentitySource>("web identity (AWS_ROLE_ARN)", token_file, role,
                                                    session.empty() ? "etcdadm" : session, sts, http));
  }
  s.push_back(std::make_unique<ContainerSource>(env));
  s.push_back(std::make_unique<InstanceMetadataSource>(env));
  return std::make_shared<AwsCredentialProvider>(std::move(s));
}

std::string aws_profile_region(const Environment& env) {
  auto config = load_ini(config_file(env));
  if (!config) return "";
  const auto* sec = config_section(*config, profile_name(env));
  return sec == nullptr ? "" : get_or_empty(*sec, "region");
}

}  // namespace etcdadm
