#include "test/support/object_servers.h"

#include <nlohmann/json.hpp>

#include <thread>

#include "common/error.h"
#include "common/fs.h"

namespace etcdadm::test {

namespace {

std::string tail_of(const std::string& path) {
  try {
    std::string log = read_file(path);
    return log.size() > 4000 ? log.substr(log.size() - 4000) : log;
  } catch (const std::exception&) {
    return "";
  }
}

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
}

SwiftS3Server::~SwiftS3Server() { launcher_.stop(std::chrono::milliseconds(10000)); }

std::string SwiftS3Server::log_tail() const { return tail_of(dir_ / "launcher.log"); }

std::shared_ptr<S3Client> SwiftS3Server::client() const {
  S3Config c;
  c.endpoint = endpoint_;
  c.region = "us-east-1";
  c.path_style = true;
  AwsCredentials creds;
  creds.access_key_id = access_key_;
  creds.secret_access_key = secret_key_;
  return std::make_shared<S3Client>(c, make_static_credentials(creds));
}

void SwiftS3Server::create_bucket(const std::string& bucket) const { client()->create_bucket(bucket); }

std::map<std::string, std::string> SwiftS3Server::env() const {
  return {{"AWS_ACCESS_KEY_ID", access_key_},
          {"AWS_SECRET_ACCESS_KEY", secret_key_},
          {"AWS_REGION", "us-east-1"},
          {"AWS_EC2_METADATA_DISABLED", "true"},
          {"AWS_CONFIG_FILE", "/nonexistent/aws-config"},
          {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials"}};
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

}  // namespace etcdadm::test
