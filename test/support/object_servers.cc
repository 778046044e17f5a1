#include "test/support/object_servers.h"

#include <nlohmann/json.hpp>

#include <thread>

#include "common/error.h"
#include "common/fs.h"

namespace etcdadm::test {

SwiftS3Server::SwiftS3Server() {
  std::string ready = dir_ / "ready.json";
  launcher_ = ChildProcess::start({"python3", std::string(ETCDADM_SOURCE_DIR) + "/test/support/swift_s3_server.py",
                                   "--dir", dir_ / "swift", "--ready-file", ready},
                                  dir_ / "launcher.log");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!path_exists(ready)) {
    if (!launcher_.running() || std::chrono::steady_clock::now() > deadline) {
      std::string tail = log_tail();
      launcher_.stop();
      throw std::runtime_error("Swift s3api server did not start:\n" + tail);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto j = nlohmann::json::parse(read_file(ready));
  endpoint_ = j.at("endpoint");
  access_key_ = j.at("access_key");
  secret_key_ = j.at("secret_key");
  access_key2_ = j.at("access_key2");
  secret_key2_ = j.at("secret_key2");
}

SwiftS3Server::~SwiftS3Server() { launcher_.stop(std::chrono::milliseconds(10000)); }

std::string SwiftS3Server::log_tail() const {
  try {
    std::string log = read_file(dir_ / "launcher.log");
    return log.size() > 4000 ? log.substr(log.size() - 4000) : log;
  } catch (const std::exception&) {
    return "";
  }
}

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

}  // namespace etcdadm::test
