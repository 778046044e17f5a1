// Where S3 credentials come from, in the order AWS's SDKs document, and keeping them fresh.
//
// The default chain, first match wins:
//   1. S3_ACCESS_KEY_ID + S3_SECRET_ACCESS_KEY        (etcd-manager's variables for S3-compatible stores)
//   2. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY [+ AWS_SESSION_TOKEN]
//   3. the shared files: AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and AWS_CONFIG_FILE
//      (~/.aws/config), profile AWS_PROFILE (default "default"): static keys, or
//      web_identity_token_file + role_arn
//   4. web identity: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN [+ AWS_ROLE_SESSION_NAME], exchanged
//      with STS AssumeRoleWithWebIdentity (EKS IAM roles for service accounts). STS endpoint:
//      AWS_ENDPOINT_URL_STS, else the regional one.
//   5. container credentials: AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI, with
//      AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE] (ECS tasks, EKS Pod Identity)
//   6. EC2 instance metadata (IMDSv2 session token first, IMDSv1 if the token call is refused),
//      unless AWS_EC2_METADATA_DISABLED=true; endpoint AWS_EC2_METADATA_SERVICE_ENDPOINT.
// A source that is configured but fails (STS refuses the token, a profile named in AWS_PROFILE does
// not exist, half a key pair) stops the chain with its error instead of silently falling through.
//
// Temporary credentials are refreshed from the source that produced them 5 minutes before they
// expire, so a sidecar running for months keeps working; the token file is re-read every time
// (Kubernetes rotates it).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/environment.h"
#include "common/http_client.h"
#include "store/backend/s3/aws_sigv4.h"

namespace etcdadm {

// One place credentials can come from. resolve() returns nullopt when the source is not set up
// here, throws when it is set up but fails.
class AwsCredentialSource {
 public:
  virtual ~AwsCredentialSource() = default;
  virtual std::string name() const = 0;
  virtual std::optional<AwsCredentials> resolve() = 0;
};

class AwsCredentialProvider {
 public:
  // `sources` are tried in order on first use; the winner is asked again for refreshes.
  explicit AwsCredentialProvider(std::vector<std::unique_ptr<AwsCredentialSource>> sources);
  // Current credentials (thread-safe). Throws Error(kAuth) when no source has any.
  AwsCredentials get();
  // Drops the cached credentials and the chosen source: the next get() walks the chain again.
  void invalidate();

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<AwsCredentialSource>> sources_;
  AwsCredentialSource* winner_ = nullptr;
  std::optional<AwsCredentials> cached_;
};

// Fixed credentials (tests, or keys given on the command line).
std::shared_ptr<AwsCredentialProvider> make_static_credentials(AwsCredentials credentials);

// The default chain described above. `region` picks the regional STS endpoint; `http` carries the
// CA bundle for STS.
std::shared_ptr<AwsCredentialProvider> make_default_credential_chain(const Environment& env, const std::string& region,
                                                                     const HttpOptions& http);

// The region from the shared config file's profile ("region = ..."), or "".
std::string aws_profile_region(const Environment& env);

}  // namespace etcdadm
