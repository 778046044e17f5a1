// The Azure Blob store against Azurite (Microsoft's emulator, which checks Shared Key signatures
// and SAS tokens), started once for this binary; Microsoft's own Azure SDK
// (test/support/azurite/azure_oracle.js) is the oracle for what the container really holds.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <map>
#include <thread>

#include "common/base64.h"
#include "common/timefmt.h"
#include "common/error.h"
#include "common/fs.h"
#include "store/backend/azure/azure_store.h"
#include "test/support/fault_proxy.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class AzureStoreTest : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    container_ = "azure-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
    azurite_server()->create_container(container_);
  }

  // `via`: a proxy's http://127.0.0.1:PORT in front of Azurite (fault tests).
  std::unique_ptr<AzureStore> store(size_t block_size = 1u << 20, const std::string& via = "") const {
    AzureConfig c;
    c.endpoint = via.empty() ? azurite_server()->endpoint() : via + "/" + AzuriteServer::kAccount;
    c.account = AzuriteServer::kAccount;
    c.auth.shared_key = *base64_unpadded_decode(std::string(AzuriteServer::kKey).substr(0, 86));
    c.auth.description = "Shared Key (test)";
    c.retry = RetryPolicy{3, std::chrono::milliseconds(20), std::chrono::milliseconds(200)};
    return std::make_unique<AzureStore>(std::make_shared<AzureClient>(c), container_, "backups", block_size, 4);
  }

  // 5 MiB blocks (--upload-part-size' smallest): the ~12 MiB backups below are staged in blocks.
  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", "azureblob://" + container_ + "/" + prefix, "--upload-part-size", "5"};
  }
  RunOptions store_env() const override {
    RunOptions o;  // run_etcdadm unsets every other cloud variable (cloud_env_vars)
    o.env["AZURE_STORAGE_CONNECTION_STRING"] = azurite_server()->connection_string();
    return o;
  }
  // What the Azure SDK lists under `prefix`: name -> size.
  std::map<std::string, uint64_t> sdk_list(const std::string& prefix = "") const {
    auto r = azurite_server()->oracle({"list", container_, prefix});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::map<std::string, uint64_t> out;
    for (const auto& b : nlohmann::json::parse(r.output)) out[b["name"]] = b["size"];
    return out;
  }

  static inline int counter_ = 0;
  std::string container_;
};

}  // namespace

TEST_F(AzureStoreTest, BlobStoreContract) { check_blob_store_contract(*store()); }

TEST_F(AzureStoreTest, ConditionalWritesContract) { check_conditional_writes_contract(*store()); }

// Staged blocks are invisible until the block list commits them; a writer that dies before that
// (never committed, never aborted: its process was killed) leaves no blob, only uncommitted blocks
// Azure discards; the next writer of the key is not refused; what it commits is exactly its bytes.
TEST_F(AzureStoreTest, StagedBlocksAreInvisibleUntilCommittedAndAKilledWriterLeavesNoBlob) {
  auto s = store();
  std::string first = random_bytes((3u << 20) + 5, 1);
  auto dead = s->create("big.bin", /*overwrite=*/false);
  dead->write(reinterpret_cast<const uint8_t*>(first.data()), first.size());
  (void)dead.release();  // the process "dies": no commit, no abort, no destructor
  auto blocks = nlohmann::json::parse(azurite_server()->oracle({"blocks", container_, "backups/big.bin"}).output);
  EXPECT_GE(blocks["uncommitted"].size(), 3u) << blocks.dump();
  EXPECT_TRUE(blocks["committed"].empty());
  EXPECT_TRUE(sdk_list().empty()) << "a staged block made a blob visible";
  EXPECT_FALSE(s->stat("big.bin"));

  std::string second = random_bytes((2u << 20) + 77, 2);
  auto w = s->create("big.bin", /*overwrite=*/false);
  w->write(reinterpret_cast<const uint8_t*>(second.data()), second.size());
  w->commit();
  EXPECT_EQ(sdk_list(), (std::map<std::string, uint64_t>{{"backups/big.bin", second.size()}}));
  EXPECT_TRUE(read_all(*s->open("big.bin")) == second);
  ASSERT_EQ(azurite_server()->oracle({"download", container_, "backups/big.bin", dir_ / "sdk.bin"}).exit_code, 0);
  EXPECT_TRUE(read_file(dir_ / "sdk.bin") == second) << "the SDK reads other bytes than were committed";
  // And never over a committed blob: the commit itself carries If-None-Match: *.
  auto racing = s->create("racing.bin", false);
  s->write_small("racing.bin", "first");
  racing->write(reinterpret_cast<const uint8_t*>(second.data()), second.size());
  try {
    racing->commit();
    ADD_FAILURE() << "the second writer replaced the blob";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists) << e.what();
  }
  EXPECT_EQ(s->read_small("racing.bin"), "first");
}

// A proxy between us and Azurite answers 503 and drops connections mid-block and mid-download:
// the upload rides through within its retry budget, the download resumes from the byte reached.
TEST_F(AzureStoreTest, UploadRidesThrough503sAndResetsAndDownloadsResume) {
  int port = port_of(azurite_server()->endpoint());
  FaultProxy proxy("127.0.0.1", port);
  using F = FaultProxy::Fault;
  proxy.queue({{F::kHttp503}, {F::kResetAfterUpload, 1u << 20}, {F::kHttp503}, {F::kResetAfterUpload, 512u << 10}});
  auto s = store(1u << 20, proxy.url());
  std::string data = random_bytes((5u << 20) + 3, 31);
  auto w = s->create("faults.bin", false);
  w->write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  w->commit();
  EXPECT_EQ(proxy.faults_injected(), 4);
  EXPECT_TRUE(read_all(*store()->open("faults.bin")) == data);

  // Faults are planned per new connection: a new store (a new process, a new connection pool)
  // reads, rather than the writer's store, whose pooled connections are past the plan.
  proxy.queue({{F::kResetAfterDownload, 2u << 20}, {F::kHttp503}, {F::kResetAfterDownload, 1u << 20}});
  EXPECT_TRUE(read_all(*store(1u << 20, proxy.url())->open("faults.bin")) == data);
  EXPECT_EQ(proxy.faults_injected(), 7);
}

// A command sends its requests over the connections it already has open (one pool per store), not
// over a new connection, and over TLS a new handshake, per request. Counted by a pass-through proxy
// in front of Azurite: a save in two blocks uploaded two at a time needs at most three connections
// (two block uploads at once, and the one the other requests take turns on); each later command one.
TEST_F(AzureStoreTest, EachCommandReusesItsConnectionsInsteadOfOnePerRequest) {
  FaultProxy proxy("127.0.0.1", port_of(azurite_server()->endpoint()));
  RunOptions env;
  env.env["AZURE_STORAGE_CONNECTION_STRING"] = std::string("DefaultEndpointsProtocol=http;AccountName=") + AzuriteServer::kAccount +
                                               ";AccountKey=" + AzuriteServer::kKey + ";BlobEndpoint=" + proxy.url() + "/" +
                                               AzuriteServer::kAccount + ";";
  for (const auto& t : round_trip_traffic(proxy, env)) {
    EXPECT_GE(t.requests, 2u) << t.command;
    EXPECT_LE(t.connections, t.command == "save" ? 3 : 1) << t.command << ": " << t.requests << " requests";
  }
}

TEST_F(AzureStoreTest, SaveListVerifyRestoreEndToEndInBlocksAndTheSdkReadsWhatWasStored) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 12000, 1000, 9);  // ~12 MiB of values that do not compress
  save_list_verify_restore(m);
  auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
  ASSERT_EQ(listed.size(), 1u);
  std::string name = listed[0]["backup"];
  EXPECT_GT(listed[0]["storedSize"].get<uint64_t>(), 5u << 20) << "fits one block: not a staged upload";
  // The SDK sees the backup's files and downloads the data file byte for byte as stored.
  auto blobs = sdk_list("backups/" + name + "/");
  std::string data = "backups/" + name + "/etcd.backup.gz";
  ASSERT_TRUE(blobs.count(data)) << nlohmann::json(blobs).dump();
  EXPECT_EQ(blobs[data], listed[0]["storedSize"].get<uint64_t>());
  ASSERT_EQ(azurite_server()->oracle({"download", container_, data, dir_ / "sdk.gz"}).exit_code, 0);
  auto fetched = cli(with_store({"backup", "restore", name, "--output-file", dir_ / "etcdadm.db"}), store_env());
  ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
  auto gunzip = run_process({"sh", "-c", "gunzip -c '" + (dir_ / "sdk.gz") + "' > '" + (dir_ / "sdk.db") + "'"});
  ASSERT_EQ(gunzip.exit_code, 0) << gunzip.output;
  EXPECT_TRUE(read_file(dir_ / "sdk.db") == read_file(dir_ / "etcdadm.db"));

  // An etcd-manager store uploaded by the SDK (gzip'd snapshot + _etcd_backup.meta) is listed and
  // restored; prune keeps the newest by name.
  std::string theirs = "2020-01-01T00:00:00Z-000001";
  write_file_atomic(dir_ / "meta", R"({"etcdVersion":"3.5.30","timestamp":"1577836800"})");
  ASSERT_EQ(azurite_server()->oracle({"upload", container_, "backups/" + theirs + "/etcd.backup.gz", dir_ / "sdk.gz"}).exit_code, 0);
  ASSERT_EQ(azurite_server()->oracle({"upload", container_, "backups/" + theirs + "/_etcd_backup.meta", dir_ / "meta"}).exit_code, 0);
  EXPECT_EQ(cli_json(with_store({"backup", "list", "-o", "json"}), store_env()).size(), 2u);
  auto r = cli(with_store({"backup", "restore", theirs, "--output-file", dir_ / "theirs.db"}), store_env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(read_file(dir_ / "theirs.db") == read_file(dir_ / "etcdadm.db"));
  auto pruned = cli(with_store({"backup", "prune", "--policy", "count:1"}), store_env());
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  EXPECT_TRUE(sdk_list("backups/" + theirs + "/").empty());
  EXPECT_FALSE(sdk_list("backups/" + name + "/").empty());
}

// Killed with SIGKILL at each step of a save that stages blocks (failpoints, common/failpoint.h):
// a block staged, the data file committed, the metadata written. Before the metadata the backup is
// not listed and no partial blob is visible (a data file, if any, is whole); after it, the backup
// is listed and verifies.
TEST_F(AzureStoreTest, AKilledSaveLeavesNoCommittedBlob) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 6000, 1000, 11);  // ~6.5 MiB: two blocks of the smallest size, 5 MiB
  for (const std::string point : {"azure/block/staged", "save/data/committed", "save/meta/written"}) {
    std::string prefix = "killed-" + point.substr(point.rfind('/') + 1);
    // with_store() gives the smallest block size, 5 MiB.
    auto args = with_store({"backup", "save", "--endpoints", m.client_url(), "--compression", "none",
                            "--upload-concurrency", "1"},
                           prefix);
    std::vector<std::string> argv = {ETCDADM_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions ro = store_env();
    ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
    ro.env["ETCDADM_FAILPOINTS"] = point;
    for (const auto& v : cloud_env_vars()) {
      if (!ro.env.count(v)) ro.unset_env.push_back(v);
    }
    auto killed = run_process(argv, ro);
    ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << point << ": the kill did not land\n" << killed.output;
    auto listed = cli_json(with_store({"backup", "list", "-o", "json"}, prefix), store_env());
    auto blobs = sdk_list(prefix + "/");
    if (point != "save/meta/written") {
      EXPECT_TRUE(listed.empty()) << point << ": " << listed.dump();
      bool data_visible = false;
      // What is visible is at most the data file, and then whole (a committed block list), never
      // the blocks staged so far.
      for (const auto& [blob, size] : blobs) {
        if (blob.find("etcd.backup") == std::string::npos) continue;
        data_visible = true;
        ASSERT_EQ(azurite_server()->oracle({"download", container_, blob, dir_ / "left.db"}).exit_code, 0);
        // Whole: the snapshot's own SHA-256 trailer matches (what etcd's snapshot tool checks).
        auto status = snapshot_status(dir_ / "left.db");
        EXPECT_FALSE(status.is_null()) << "a partial data file is visible: " << blob;
      }
      EXPECT_EQ(data_visible, point == "save/data/committed") << point;
    } else {
      ASSERT_EQ(listed.size(), 1u) << point;
      auto v = cli(with_store({"backup", "verify", listed[0]["backup"]}, prefix), store_env());
      EXPECT_EQ(v.exit_code, 0) << v.output;
    }
  }
}

TEST_F(AzureStoreTest, SasTokensAndWrongKeysAreClearAndWriteNothing) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 100, 300);
  // A container SAS with every permission a store needs, from the SDK: no account key at all.
  std::string sas = azurite_server()->oracle({"sas", container_, "racwdl"}).output;
  sas = sas.substr(0, sas.find('\n'));
  RunOptions with_sas = store_env();
  with_sas.env.erase("AZURE_STORAGE_CONNECTION_STRING");
  with_sas.env["AZURE_STORAGE_ACCOUNT"] = AzuriteServer::kAccount;
  with_sas.env["AZURE_STORAGE_SAS_TOKEN"] = "?" + sas;
  auto endpoint = std::vector<std::string>{"--azure-endpoint", azurite_server()->endpoint()};
  auto plus = [&](std::vector<std::string> a) {
    a = with_store(std::move(a));
    a.insert(a.end(), endpoint.begin(), endpoint.end());
    return a;
  };
  auto saved = cli(plus({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url()}), with_sas);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_EQ(cli_json(plus({"backup", "list", "-o", "json"}), with_sas).size(), 1u);

  // Read-only SAS: the save fails naming what is missing, and leaves nothing.
  std::string read_only = azurite_server()->oracle({"sas", container_, "rl"}).output;
  with_sas.env["AZURE_STORAGE_SAS_TOKEN"] = read_only.substr(0, read_only.find('\n'));
  auto before = sdk_list();
  auto refused = cli(plus({"--log-level", "trace", "backup", "save", "--endpoints", m.client_url()}), with_sas);
  EXPECT_EQ(refused.exit_code, 7) << refused.output;
  EXPECT_NE(refused.output.find("SAS"), std::string::npos) << refused.output;
  EXPECT_EQ(sdk_list(), before);
  EXPECT_EQ(cli_json(plus({"backup", "list", "-o", "json"}), with_sas).size(), 1u) << "reading still works";
  // The SAS is a credential: its signature is in no message, log line (trace level included) or
  // the catalog's record of the failed attempt (docs/security.md, "Secrets").
  const std::string token = with_sas.env["AZURE_STORAGE_SAS_TOKEN"];
  const size_t sig_at = token.find("sig=");
  ASSERT_NE(sig_at, std::string::npos) << token;
  const std::string signature = token.substr(sig_at + 4, token.find('&', sig_at) - sig_at - 4);
  ASSERT_GE(signature.size(), 10u) << token;
  EXPECT_EQ(refused.output.find(signature), std::string::npos) << refused.output;
  auto history = cli(plus({"backup", "list", "--history", "-o", "json"}), with_sas);
  ASSERT_EQ(history.exit_code, 0) << history.output;
  EXPECT_NE(history.output.find("failure"), std::string::npos) << history.output;
  EXPECT_EQ(history.output.find(signature), std::string::npos) << history.output;

  // A wrong account key: Azurite refuses the signature; the message names Shared Key.
  RunOptions wrong = store_env();
  wrong.env["AZURE_STORAGE_CONNECTION_STRING"] =
      "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + base64(std::string(64, 'x')) +
      ";BlobEndpoint=" + azurite_server()->endpoint() + ";";
  auto bad = cli(with_store({"backup", "list"}), wrong);
  EXPECT_EQ(bad.exit_code, 7) << bad.output;
  EXPECT_NE(bad.output.find("Shared Key"), std::string::npos) << bad.output;
  // No account at all: said so, with what to set.
  RunOptions none = store_env();
  none.env.clear();
  auto missing = cli(with_store({"backup", "list"}), none);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("AZURE_STORAGE_ACCOUNT"), std::string::npos) << missing.output;
}

// Microsoft Entra ID: Azurite over HTTPS with --oauth basic accepts bearer tokens whose audience
// is Azure Storage, whose issuer is Entra's and which have not expired (it does not check their
// signature). A stand-in for the instance metadata service and for the tenant's token endpoint
// hands out such tokens to whoever asks the way Azure's own services require: the managed
// identity (IMDS) and AKS workload identity (a federated token exchanged for one) both save and
// list; a token for another audience is refused, naming the identity.
TEST_F(AzureStoreTest, EntraIdTokensFromTheManagedIdentityAndFromAWorkloadIdentity) {
  TlsFiles tls = make_tls_files(dir_ / "tls");
  AzuriteServer azurite(AzuriteServer::Tls{tls.server_cert, tls.server_key, tls.ca_cert});
  azurite.create_container("entra");

  auto jwt = [](const std::string& audience) {
    int64_t now = to_unix_micros(std::chrono::system_clock::now()) / 1000000;
    nlohmann::json claims = {{"aud", audience},
                             {"iss", "https://sts.windows.net/ab1f708d-50f6-404c-a006-d71b2ac7a606/"},
                             {"iat", now - 60}, {"nbf", now - 60}, {"exp", now + 3600}};
    return base64url(R"({"alg":"RS256","typ":"JWT"})") + "." + base64url(claims.dump()) + "." + base64url("not checked");
  };
  std::atomic<int> imds_calls{0}, entra_calls{0};
  std::atomic<bool> wrong_audience{false};
  auto audience = [&] { return std::string(wrong_audience ? "https://vault.azure.net" : "https://storage.azure.com"); };
  httplib::Server identity;
  identity.Get("/metadata/identity/oauth2/token", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Metadata") != "true" || req.get_param_value("resource") != "https://storage.azure.com/" ||
        req.get_param_value("api-version").empty()) {
      res.status = 400;
      return;
    }
    ++imds_calls;
    res.set_content(nlohmann::json{{"access_token", jwt(audience())}, {"expires_in", "3599"}, {"token_type", "Bearer"}}.dump(),
                    "application/json");
  });
  identity.Post("/tenant-1/oauth2/v2.0/token", [&](const httplib::Request& req, httplib::Response& res) {
    bool ok = req.get_param_value("grant_type") == "client_credentials" && req.get_param_value("client_id") == "client-1" &&
              req.get_param_value("scope") == "https://storage.azure.com/.default" &&
              req.get_param_value("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
              req.get_param_value("client_assertion") == "federated-token-from-the-kubelet";
    if (!ok) {
      res.status = 401;
      res.set_content(R"({"error":"invalid_client","error_description":"AADSTS700016: bad assertion"})", "application/json");
      return;
    }
    ++entra_calls;
    res.set_content(nlohmann::json{{"access_token", jwt(audience())}, {"expires_in", 3599}, {"token_type", "Bearer"}}.dump(),
                    "application/json");
  });
  int port = identity.bind_to_any_port("127.0.0.1");
  std::thread server([&] { identity.listen_after_bind(); });
  struct Stop {
    httplib::Server& s;
    std::thread& t;
    ~Stop() {
      s.stop();
      t.join();
    }
  } stop{identity, server};
  std::string identity_url = "http://127.0.0.1:" + std::to_string(port);

  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 100, 300);
  std::vector<std::string> flags = {"--store", "azureblob://entra/backups", "--azure-endpoint", azurite.endpoint(), "--ca-bundle",
                                    tls.ca_cert};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  };
  RunOptions managed;
  managed.env = {{"AZURE_STORAGE_ACCOUNT", AzuriteServer::kAccount}, {"AZURE_POD_IDENTITY_AUTHORITY_HOST", identity_url}};
  auto saved = cli(with({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url()}), managed);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_GE(imds_calls.load(), 1);

  std::string token_file = dir_ / "federated-token";
  write_file_atomic(token_file, "federated-token-from-the-kubelet\n");
  RunOptions workload;
  workload.env = {{"AZURE_STORAGE_ACCOUNT", AzuriteServer::kAccount}, {"AZURE_TENANT_ID", "tenant-1"},
                  {"AZURE_CLIENT_ID", "client-1"}, {"AZURE_FEDERATED_TOKEN_FILE", token_file},
                  {"AZURE_AUTHORITY_HOST", identity_url + "/"}};
  auto again = cli(with({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url()}), workload);
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_GE(entra_calls.load(), 1);
  EXPECT_EQ(cli_json(with({"backup", "list", "-o", "json"}), workload).size(), 2u);
  auto restored = cli(with({"backup", "restore", "latest", "--output-file", dir_ / "entra.db"}), managed);
  EXPECT_EQ(restored.exit_code, 0) << restored.output;

  // A rejected assertion: the token endpoint's error, exit 7.
  write_file_atomic(token_file, "stale\n");
  auto stale = cli(with({"backup", "list"}), workload);
  EXPECT_EQ(stale.exit_code, 7) << stale.output;
  EXPECT_NE(stale.output.find("AADSTS700016"), std::string::npos) << stale.output;
  // A token for another audience: Azurite refuses it, and the message names the identity.
  wrong_audience = true;
  auto wrong = cli(with({"backup", "list"}), managed);
  EXPECT_EQ(wrong.exit_code, 7) << wrong.output;
  EXPECT_NE(wrong.output.find("managed identity"), std::string::npos) << wrong.output;
}

}  // namespace etcdadm::test
