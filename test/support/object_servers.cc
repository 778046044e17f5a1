#include "test/support/object_servers.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <thread>

#include "common/error.h"
#include "common/fs.h"

namespace etcdadm::test {

std::string tail_of(const std::string& path) {
  try {
    std::string log = read_file(path);
    return log.size() > 4000 ? log.substr(log.size() - 4000) : log;
  } catch (const std::exception&) {
    return "";
  }
}

namespace {

// Starts a server that writes `ready_file` (JSON) once it serves, waits for it, returns its JSON.
nlohmann::json start_server(ChildProcess& process, const std::vector<std::string>& argv, const std::string& log,
                            const std::string& ready_file, const std::string& what) {
  process = ChildProcess::start(argv, log);
  // Longer than the servers' own start-up limit (the Swift launcher gives up after 60 s, over up to
  // 3 attempts), so that a failure arrives with the server's own explanation.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!path_exists(ready_file)) {
    if (!process.running() || std::chrono::steady_clock::now() > deadline) {
      process.stop();
      throw std::runtime_error(what + " did not start:\n" + tail_of(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return nlohmann::json::parse(read_file(ready_file));
}

// Starts a server that cannot report a port it picked itself on a free one (argv_for(port) is its
// command line), retried on another port up to three times if it does not answer 200 to
// GET health_path within `limit` (the port may have been taken meanwhile). Returns the port.
int start_on_free_port(ChildProcess& process, const std::function<std::vector<std::string>(int)>& argv_for,
                       const std::string& health_path, const std::string& log, const RunOptions& options,
                       std::chrono::seconds limit, const std::string& what) {
  for (int attempt = 1;; ++attempt) {
    int port = free_port();
    process = ChildProcess::start(argv_for(port), log, options);
    httplib::Client probe("127.0.0.1", port);
    probe.set_connection_timeout(std::chrono::milliseconds(200));
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (process.running() && std::chrono::steady_clock::now() < deadline) {
      auto res = probe.Get(health_path);
      if (res && res->status == 200) return port;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    process.stop();
    if (attempt == 3) throw std::runtime_error(what + " did not start:\n" + tail_of(log));
  }
}

// A path-style client of a loopback S3 server with static keys.
std::shared_ptr<S3Client> loopback_s3_client(const std::string& endpoint, const std::string& key,
                                             const std::string& secret) {
  S3Config c;
  c.endpoint = endpoint;
  c.region = "us-east-1";
  c.path_style = true;
  AwsCredentials creds;
  creds.access_key_id = key;
  creds.secret_access_key = secret;
  return std::make_shared<S3Client>(c, make_static_credentials(creds));
}

// Environment that gives etcdadm / aws these keys and nothing from the machine's AWS setup.
std::map<std::string, std::string> only_these_aws_keys(const std::string& key, const std::string& secret) {
  return {{"AWS_ACCESS_KEY_ID", key},
          {"AWS_SECRET_ACCESS_KEY", secret},
          {"AWS_REGION", "us-east-1"},
          {"AWS_EC2_METADATA_DISABLED", "true"},
          {"AWS_CONFIG_FILE", "/nonexistent/aws-config"},
          {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials"}};
}

}  // namespace

SwiftS3Server::SwiftS3Server() {
  auto j = start_server(launcher_,
                        {"python3", std::string(ETCDADM_SOURCE_DIR) + "/test/support/swift_s3_server.py", "--dir",
                         dir_ / "swift", "--ready-file", dir_ / "ready.json"},
                        dir_ / "launcher.log", dir_ / "ready.json", "Swift s3api server");
  endpoint_ = j.at("endpoint");
  access_key_ = j.at("access_key");
  secret_key_ = j.at("secret_key");
  access_key2_ = j.at("access_key2");
  secret_key2_ = j.at("secret_key2");
  auth_url_ = j.at("auth_url");
}

SwiftS3Server::~SwiftS3Server() { launcher_.stop(std::chrono::milliseconds(10000)); }

std::string SwiftS3Server::log_tail() const { return tail_of(dir_ / "launcher.log"); }

std::shared_ptr<S3Client> SwiftS3Server::client() const { return loopback_s3_client(endpoint_, access_key_, secret_key_); }

void SwiftS3Server::create_bucket(const std::string& bucket) const { client()->create_bucket(bucket); }

std::map<std::string, std::string> SwiftS3Server::env() const { return only_these_aws_keys(access_key_, secret_key_); }

std::string SwiftS3Server::storage_url() const {
  return endpoint_ + "/v1/AUTH_" + access_key_.substr(0, access_key_.find(':'));
}

std::map<std::string, std::string> SwiftS3Server::native_env() const {
  return {{"OS_AUTH_URL", auth_url_}, {"OS_USERNAME", access_key_}, {"OS_PASSWORD", secret_key_}};
}

ProcessResult SwiftS3Server::swift_cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"swift", "-A", auth_url_, "-U", access_key_, "-K", secret_key_};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.timeout = std::chrono::milliseconds(120000);
  for (const char* v : {"OS_AUTH_URL", "OS_USERNAME", "OS_PASSWORD", "OS_STORAGE_URL", "OS_AUTH_TOKEN", "ST_AUTH", "ST_USER",
                        "ST_KEY", "OS_PROJECT_NAME", "OS_TENANT_NAME", "OS_IDENTITY_API_VERSION", "OS_AUTH_VERSION"}) {
    o.unset_env.push_back(v);
  }
  return run_process(argv, o);
}

GcsEmulator::GcsEmulator() {
  auto j = start_server(process_,
                        {"node", std::string(ETCDADM_SOURCE_DIR) + "/test/support/gcs_emulator/gcs_emulator.js", "--port",
                         "0", "--dir", dir_ / "gcs", "--ready-file", dir_ / "ready.json"},
                        dir_ / "emulator.log", dir_ / "ready.json",
                        "GCS emulator (did scripts/install-deps.sh run npm ci in test/support/gcs_emulator?)");
  endpoint_ = j.at("endpoint");
}

GcsEmulator::~GcsEmulator() { process_.stop(std::chrono::milliseconds(10000)); }

std::string GcsEmulator::log_tail() const { return tail_of(dir_ / "emulator.log"); }

std::string go_test_tool(const std::string& name, const std::string& binary) {
  auto r = run_process({"bash", std::string(ETCDADM_SOURCE_DIR) + "/scripts/go-test-tools.sh", "--where", name,
                        binary.empty() ? name : binary});
  std::string path = r.output.substr(0, r.output.find('\n'));
  if (r.exit_code != 0 || !path_exists(path)) {
    throw std::runtime_error("the test tool " + name + " is not built (" + r.output +
                             "): run `bash scripts/go-test-tools.sh " + name + "`");
  }
  return path;
}

FakeGcsServer::FakeGcsServer() {
  port_ = start_on_free_port(
      process_,
      [&](int port) {
        return std::vector<std::string>{go_test_tool("fake-gcs-server"), "-scheme", "http", "-host", "127.0.0.1", "-port",
                                        std::to_string(port), "-backend", "memory", "-log-level", "warn"};
      },
      "/storage/v1/b", dir_ / "fake-gcs-server.log", {}, std::chrono::seconds(30), "fake-gcs-server");
  endpoint_ = "http://127.0.0.1:" + std::to_string(port_);
}

FakeGcsServer::~FakeGcsServer() { process_.stop(std::chrono::milliseconds(10000)); }

void FakeGcsServer::create_bucket(const std::string& name, bool versioning) const {
  httplib::Client c("127.0.0.1", port_);
  nlohmann::json bucket{{"name", name}};
  if (versioning) bucket["versioning"] = {{"enabled", true}};
  auto res = c.Post("/storage/v1/b?project=test", bucket.dump(), "application/json");
  if (!res || res->status != 200) {
    throw std::runtime_error("fake-gcs-server: cannot create bucket " + name + ": " +
                             (res ? std::to_string(res->status) + " " + res->body : "no answer"));
  }
}

std::string FakeGcsServer::log_tail() const { return tail_of(dir_ / "fake-gcs-server.log"); }

namespace {
constexpr const char* kMinioUser = "etcdadm-test";
constexpr const char* kMinioPassword = "etcdadm-test-secret";
}  // namespace

MinioServer::MinioServer() {
  RunOptions o;
  o.env = {{"MINIO_ROOT_USER", kMinioUser},
           {"MINIO_ROOT_PASSWORD", kMinioPassword},
           {"MINIO_BROWSER", "off"},
           {"MINIO_UPDATE", "off"},
           {"MINIO_CONFIG_DIR", dir_ / "config"},
           {"HOME", dir_.path()}};
  int port = start_on_free_port(
      process_,
      [&](int port) {
        int console = free_port();
        while (console == port) console = free_port();
        return std::vector<std::string>{go_test_tool("minio"), "server", dir_ / "data", "--address",
                                        "127.0.0.1:" + std::to_string(port), "--console-address",
                                        "127.0.0.1:" + std::to_string(console), "--quiet"};
      },
      "/minio/health/live", dir_ / "minio.log", o, std::chrono::seconds(60), "MinIO");
  endpoint_ = "http://127.0.0.1:" + std::to_string(port);
}

MinioServer::~MinioServer() { process_.stop(std::chrono::milliseconds(10000)); }

std::shared_ptr<S3Client> MinioServer::client() const { return loopback_s3_client(endpoint_, kMinioUser, kMinioPassword); }

void MinioServer::create_bucket(const std::string& bucket) const { client()->create_bucket(bucket); }

std::map<std::string, std::string> MinioServer::env() const { return only_these_aws_keys(kMinioUser, kMinioPassword); }

std::string MinioServer::log_tail() const { return tail_of(dir_ / "minio.log"); }

AzuriteServer::AzuriteServer(std::optional<Tls> tls) : tls_(std::move(tls)) {
  std::string dir = std::string(ETCDADM_SOURCE_DIR) + "/test/support/azurite";
  std::string log = dir_ / "azurite.log";
  // Azurite says when it listens (a probe cannot speak TLS here); a port taken meanwhile makes it
  // exit, and another is tried.
  for (int attempt = 1;; ++attempt) {
    int port = free_port();
    std::vector<std::string> argv = {"node", dir + "/node_modules/azurite/dist/src/blob/main.js", "--blobHost", "127.0.0.1",
                                     "--blobPort", std::to_string(port), "--location", dir_ / ("data-" + std::to_string(attempt)),
                                     "--skipApiVersionCheck", "--disableTelemetry"};
    if (tls_) argv.insert(argv.end(), {"--cert", tls_->cert, "--key", tls_->key, "--oauth", "basic"});
    process_ = ChildProcess::start(argv, log);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    bool up = false;
    while (process_.running() && std::chrono::steady_clock::now() < deadline) {
      if (path_exists(log) && read_file(log).find("successfully listens on") != std::string::npos) {
        up = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (up) {
      endpoint_ = std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port) + "/" + kAccount;
      return;
    }
    process_.stop();
    if (attempt == 3) {
      throw std::runtime_error("Azurite (did scripts/install-deps.sh --with-test-servers run npm ci in test/support/azurite?) "
                               "did not start:\n" + tail_of(log));
    }
  }
}

AzuriteServer::~AzuriteServer() { process_.stop(std::chrono::milliseconds(10000)); }

std::string AzuriteServer::connection_string() const {
  return std::string("DefaultEndpointsProtocol=") + (tls_ ? "https" : "http") + ";AccountName=" + kAccount + ";AccountKey=" + kKey +
         ";BlobEndpoint=" + endpoint_ + ";";
}

ProcessResult AzuriteServer::oracle(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"node", std::string(ETCDADM_SOURCE_DIR) + "/test/support/azurite/azure_oracle.js"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.env["AZURE_STORAGE_CONNECTION_STRING"] = connection_string();
  if (tls_) o.env["NODE_EXTRA_CA_CERTS"] = tls_->ca;
  o.timeout = std::chrono::milliseconds(120000);
  return run_process(argv, o);
}

void AzuriteServer::create_container(const std::string& name) const {
  auto r = oracle({"create-container", name});
  if (r.exit_code != 0) throw std::runtime_error("Azurite: cannot create container " + name + ": " + r.output);
}

std::string AzuriteServer::log_tail() const { return tail_of(dir_ / "azurite.log"); }

}  // namespace etcdadm::test
