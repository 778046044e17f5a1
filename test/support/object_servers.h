// Real object-store servers for the S3 and GCS tests, started on loopback by the test and stopped
// by PID: OpenStack Swift with its s3api middleware (verifies SigV4; test/support/swift_s3_server.py),
// the firebase Storage emulator's GCS JSON API (test/support/gcs_emulator/) and fake-gcs-server.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/subprocess.h"
#include "store/backend/s3/s3_client.h"
#include "test/support/test_env.h"

namespace etcdadm::test {

class SwiftS3Server {
 public:
  SwiftS3Server();  // starts and waits until S3 requests work (throws after 60 s)
  ~SwiftS3Server();
  SwiftS3Server(const SwiftS3Server&) = delete;
  SwiftS3Server& operator=(const SwiftS3Server&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  const std::string& access_key2() const { return access_key2_; }
  const std::string& secret_key2() const { return secret_key2_; }
  std::string log_tail() const;

  // A client with the first user's credentials, path style, no retries worth waiting for.
  std::shared_ptr<S3Client> client() const;
  void create_bucket(const std::string& bucket) const;

  // Environment for running etcdadm / aws against this server with the first user's keys.
  std::map<std::string, std::string> env() const;

  // Swift's own API: tempauth (v1) at auth_url() as user access_key() ("account:user") with
  // password secret_key(); the account's storage URL is storage_url().
  const std::string& auth_url() const { return auth_url_; }
  std::string storage_url() const;
  // OS_AUTH_URL / OS_USERNAME / OS_PASSWORD for etcdadm with the first user.
  std::map<std::string, std::string> native_env() const;
  // python3-swiftclient's `swift` CLI (the oracle of the native API) as the first user.
  ProcessResult swift_cli(const std::vector<std::string>& args) const;

 private:
  TempDir dir_;
  ChildProcess launcher_;
  std::string endpoint_, access_key_, secret_key_, access_key2_, secret_key2_, auth_url_;
};

// The firebase Storage emulator (GCS JSON API, no auth, buckets appear on first use). Limits: no
// chunked resumable uploads (the first PUT finalizes), bodies over 130 MiB refused.
class GcsEmulator {
 public:
  GcsEmulator();  // starts and waits until it answers (throws after 60 s)
  ~GcsEmulator();
  GcsEmulator(const GcsEmulator&) = delete;
  GcsEmulator& operator=(const GcsEmulator&) = delete;
  const std::string& endpoint() const { return endpoint_; }
  std::string log_tail() const;

 private:
  TempDir dir_;
  ChildProcess process_;
  std::string endpoint_;
};

// fake-gcs-server (github.com/fsouza/fake-gcs-server, built from Go modules by
// scripts/go-test-tools.sh), in memory on loopback: the GCS JSON API with chunked resumable uploads
// (308 with a Range header until the last chunk) and ifGenerationMatch preconditions (412), which
// the firebase emulator lacks. Buckets must be created first. Known differences from GCS: it does
// not check a chunk's start offset, and a status query (`Content-Range: bytes */N`, empty body)
// commits the upload instead of answering 308.
class FakeGcsServer {
 public:
  FakeGcsServer();  // starts and waits until it answers (throws after 30 s)
  ~FakeGcsServer();
  FakeGcsServer(const FakeGcsServer&) = delete;
  FakeGcsServer& operator=(const FakeGcsServer&) = delete;
  const std::string& endpoint() const { return endpoint_; }
  // `versioning`: the bucket keeps deleted and replaced objects as noncurrent generations.
  void create_bucket(const std::string& name, bool versioning = false) const;
  std::string log_tail() const;

 private:
  TempDir dir_;
  ChildProcess process_;
  std::string endpoint_;
  int port_ = 0;
};

// MinIO (github.com/minio/minio, built from Go modules by scripts/go-test-tools.sh) in single-drive
// mode on loopback: an S3 server with SigV4, versioned buckets and conditional writes
// (If-None-Match: * -> 412), which Swift's s3api lacks.
class MinioServer {
 public:
  MinioServer();  // starts and waits until it is live (throws after 60 s)
  ~MinioServer();
  MinioServer(const MinioServer&) = delete;
  MinioServer& operator=(const MinioServer&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  std::shared_ptr<S3Client> client() const;
  void create_bucket(const std::string& bucket) const;
  // Environment for running etcdadm / aws against this server with its root credentials.
  std::map<std::string, std::string> env() const;
  std::string log_tail() const;

 private:
  TempDir dir_;
  ChildProcess process_;
  std::string endpoint_;
};

// Azurite (npm `azurite`, Microsoft's Azure Storage emulator), blob service only, on loopback in
// strict mode: it checks Shared Key signatures and SAS tokens. Path-style URLs:
// http://127.0.0.1:PORT/devstoreaccount1/CONTAINER/BLOB, with the well-known development account.
class AzuriteServer {
 public:
  // `tls`: serve HTTPS with this certificate and key (PEM files), which Azurite requires before it
  // accepts Microsoft Entra ID bearer tokens (`--oauth basic`: it checks their audience, issuer and
  // lifetime, not their signature).
  struct Tls {
    std::string cert, key, ca;
  };
  explicit AzuriteServer(std::optional<Tls> tls = std::nullopt);  // starts and waits until it listens (throws after 60 s)
  ~AzuriteServer();
  AzuriteServer(const AzuriteServer&) = delete;
  AzuriteServer& operator=(const AzuriteServer&) = delete;

  // http(s)://127.0.0.1:PORT/devstoreaccount1
  const std::string& endpoint() const { return endpoint_; }
  // AZURE_STORAGE_CONNECTION_STRING for the development account at this endpoint.
  std::string connection_string() const;
  static constexpr const char* kAccount = "devstoreaccount1";
  static constexpr const char* kKey =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
  // Runs test/support/azurite/azure_oracle.js (Microsoft's Azure SDK) against this server.
  ProcessResult oracle(const std::vector<std::string>& args) const;
  void create_container(const std::string& name) const;
  std::string log_tail() const;

 private:
  TempDir dir_;
  ChildProcess process_;
  std::string endpoint_;
  std::optional<Tls> tls_;
};

// The binary of a Go test tool pinned in test/go-tools/tools (`binary`: one of the programs of a
// tool that builds several, such as kubernetes's kube-apiserver; default: the tool's name);
// throws, naming the command that builds it, when it is missing.
std::string go_test_tool(const std::string& name, const std::string& binary = "");

// The last 4000 bytes of a log file ("" when it cannot be read): for failure messages.
std::string tail_of(const std::string& path);

}  // namespace etcdadm::test
