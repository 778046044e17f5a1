// The Swift store on Swift's own API (swift://), against the same OpenStack Swift the S3 tests use
// (tempauth, v1 auth), with python3-swiftclient's `swift` CLI as the oracle of what the container
// holds. Keystone v3 runs through a stand-in identity service that answers as Keystone does and
// hands out a real tempauth token, so that the storage requests that follow are checked by Swift.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "store/layout.h"
#include "store/backend/swift/swift_store.h"
#include "test/support/fault_proxy.h"
#include "test/support/object_store_fixture.h"

namespace etcdadm::test {
namespace {

class SwiftNativeStoreTest : public ObjectStoreCliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    container_ = "native-" + std::to_string(++counter_) + "-" + std::to_string(::getpid());
    auto r = swift_server()->swift_cli({"post", container_});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  std::unique_ptr<SwiftStore> store(size_t segment_size = 1u << 20, const std::string& prefix = "backups") const {
    SwiftAuthConfig c;
    c.kind = SwiftAuthConfig::Kind::kV1;
    c.auth_url = swift_server()->auth_url();
    c.user = swift_server()->access_key();
    c.key = swift_server()->secret_key();
    c.description = "Swift v1 auth (test)";
    auto client = std::make_shared<SwiftClient>(std::make_shared<SwiftSession>(c, HttpOptions{}),
                                                RetryPolicy{3, std::chrono::milliseconds(20), std::chrono::milliseconds(200)});
    return std::make_unique<SwiftStore>(client, container_, prefix, segment_size, 4);
  }

  // A token from Swift's v1 auth, asked directly (a test's proxy sees only storage requests);
  // "" when auth failed (the test's ASSERT says so).
  static std::string auth_token() {
    httplib::Client auth(swift_server()->endpoint());
    auto t = auth.Get("/auth/v1.0", {{"X-Auth-User", swift_server()->access_key()}, {"X-Auth-Key", swift_server()->secret_key()}});
    return t && t->status == 200 ? t->get_header_value("X-Auth-Token") : "";
  }
  // The storage URL with `proxy` in front of Swift.
  static std::string storage_url_through(const FaultProxy& proxy) {
    return proxy.url() + swift_server()->storage_url().substr(swift_server()->endpoint().size());
  }
  // A client pre-authenticated with `token` whose storage requests go through `proxy`: a new
  // connection pool, so the proxy's next planned faults meet it.
  static std::shared_ptr<SwiftClient> client_through(const FaultProxy& proxy, const std::string& token, int attempts) {
    SwiftAuthConfig c;
    c.kind = SwiftAuthConfig::Kind::kPreauthenticated;
    c.storage_url = storage_url_through(proxy);
    c.token = token;
    c.description = "a pre-authenticated token (test)";
    return std::make_shared<SwiftClient>(std::make_shared<SwiftSession>(c, HttpOptions{}),
                                         RetryPolicy{attempts, std::chrono::milliseconds(20), std::chrono::milliseconds(200)});
  }

  std::vector<std::string> store_flags(const std::string& prefix = "backups") const override {
    return {"--store", "swift://" + container_ + "/" + prefix, "--upload-part-size", "5"};
  }
  RunOptions store_env() const override {
    RunOptions o;
    o.env = swift_server()->native_env();
    return o;
  }
  // What `swift list` shows in `container`.
  std::vector<std::string> swift_list(const std::string& container, const std::string& prefix = "") const {
    std::vector<std::string> args = {"list", container};
    if (!prefix.empty()) args.insert(args.end(), {"--prefix", prefix});
    auto r = swift_server()->swift_cli(args);
    std::vector<std::string> out;
    if (r.exit_code != 0) return out;  // e.g. no segments container yet
    size_t pos = 0;
    while (pos < r.output.size()) {
      size_t end = r.output.find('\n', pos);
      if (end == std::string::npos) end = r.output.size();
      if (end > pos) out.push_back(r.output.substr(pos, end - pos));
      pos = end + 1;
    }
    return out;
  }

  static inline int counter_ = 0;
  std::string container_;
};

}  // namespace

TEST_F(SwiftNativeStoreTest, BlobStoreContract) { check_blob_store_contract(*store()); }

TEST_F(SwiftNativeStoreTest, HasNoConditionalWritesForLeases) {
  expect_refused_for_leases(*store(), "Swift has no compare-and-swap");
}

// A large object is a static large object: its segments go to "<container>_segments", and nothing
// is visible until the manifest is written. A writer killed before that leaves only segments, which
// the next save's clean-up deletes; the next writer of the key is not refused; `swift download`
// reads exactly what was committed, and a delete takes the segments with it.
TEST_F(SwiftNativeStoreTest, LargeObjectsAreVisibleOnlyOnceTheirManifestIsWritten) {
  auto s = store();
  std::string first = random_bytes((3u << 20) + 5, 1);
  auto dead = s->create("big.bin", /*overwrite=*/false);
  dead->write(reinterpret_cast<const uint8_t*>(first.data()), first.size());
  (void)dead.release();  // the process "dies": no commit, no abort, no destructor
  EXPECT_TRUE(swift_list(container_).empty()) << "a segment made an object visible";
  EXPECT_FALSE(s->stat("big.bin"));
  EXPECT_GE(swift_list(container_ + "_segments").size(), 3u);
  EXPECT_TRUE(s->remove_abandoned(std::chrono::seconds(3600)).empty()) << "too young to be abandoned";

  std::string second = random_bytes((2u << 20) + 77, 2);
  auto w = s->create("big.bin", /*overwrite=*/false);
  w->write(reinterpret_cast<const uint8_t*>(second.data()), second.size());
  w->commit();
  auto listed = s->list("");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].size, second.size()) << "the listing must give the large object's size, not its manifest's";
  EXPECT_TRUE(read_all(*s->open("big.bin")) == second);
  auto dl = swift_server()->swift_cli({"download", container_, "backups/big.bin", "-o", dir_ / "cli.bin"});
  ASSERT_EQ(dl.exit_code, 0) << dl.output;
  EXPECT_TRUE(read_file(dir_ / "cli.bin") == second) << "the swift CLI reads other bytes than were committed";

  // The killed writer's segments go; the committed object's stay.
  auto removed = s->remove_abandoned(std::chrono::seconds(0));
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_NE(removed[0].find("unfinished upload"), std::string::npos) << removed[0];
  EXPECT_EQ(swift_list(container_ + "_segments").size(), 3u) << "the committed object's three segments";
  EXPECT_TRUE(read_all(*s->open("big.bin")) == second);
  s->remove("big.bin");
  EXPECT_TRUE(swift_list(container_).empty());
  EXPECT_TRUE(swift_list(container_ + "_segments").empty()) << "deleting a large object deletes its segments";

  // Never over an existing object: the manifest write itself carries If-None-Match: *.
  auto racing = s->create("racing.bin", false);
  s->write_small("racing.bin", "first");
  racing->write(reinterpret_cast<const uint8_t*>(second.data()), second.size());
  try {
    racing->commit();
    ADD_FAILURE() << "the second writer replaced the object";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists) << e.what();
  }
  EXPECT_EQ(s->read_small("racing.bin"), "first");
}

// A proxy between us and Swift (a pre-authenticated storage URL through it) answers 503 and drops
// connections mid-segment and mid-download: the upload rides through, the download resumes.
TEST_F(SwiftNativeStoreTest, UploadRidesThrough503sAndResetsAndDownloadsResume) {
  const std::string token = auth_token();
  ASSERT_FALSE(token.empty());
  FaultProxy proxy("127.0.0.1", port_of(swift_server()->endpoint()));
  SwiftStore s(client_through(proxy, token, 6), container_, "backups", 1u << 20, 2);
  using F = FaultProxy::Fault;
  proxy.queue({{F::kHttp503}, {F::kResetAfterUpload, 1u << 20}, {F::kHttp503}, {F::kResetAfterUpload, 512u << 10}});
  std::string data = random_bytes((5u << 20) + 3, 41);
  auto w = s.create("faults.bin", false);
  w->write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  w->commit();
  EXPECT_EQ(proxy.faults_injected(), 4);
  EXPECT_TRUE(read_all(*store()->open("faults.bin")) == data);

  // Faults are planned per new connection: a new client (a new process, a new connection pool)
  // reads, rather than the writer's, whose pooled connections are past the plan.
  proxy.queue({{F::kResetAfterDownload, 2u << 20}, {F::kHttp503}, {F::kResetAfterDownload, 1u << 20}});
  SwiftStore reader(client_through(proxy, token, 6), container_, "backups", 1u << 20, 2);
  EXPECT_TRUE(read_all(*reader.open("faults.bin")) == data);
  EXPECT_EQ(proxy.faults_injected(), 7);
}

// The server writes the manifest that makes a large object visible, and the answer is lost on the
// way back (a reset connection). The retry meets the object it made (412): the upload is committed
// and its segments stay, rather than the writer failing and deleting the segments under a visible
// manifest, which would leave a backup that lists and cannot be read.
TEST_F(SwiftNativeStoreTest, AManifestWhoseAnswerIsLostIsCommittedWithItsSegments) {
  const std::string token = auth_token();
  ASSERT_FALSE(token.empty());
  FaultProxy proxy("127.0.0.1", port_of(swift_server()->endpoint()));
  SwiftStore s(client_through(proxy, token, 4), container_, "backups", 1u << 20, 2);
  proxy.lose_answer_to("multipart-manifest=put");
  std::string data = random_bytes((3u << 20) + 7, 43);
  auto w = s.create("lost.bin", /*overwrite=*/false);
  w->write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  w->commit();
  EXPECT_EQ(proxy.faults_injected(), 1);
  EXPECT_TRUE(read_all(*store()->open("lost.bin")) == data);
  EXPECT_EQ(swift_list(container_ + "_segments").size(), 4u);

  // Another writer's manifest under the name is not taken for ours: still refused.
  auto second = s.create("other.bin", false);
  auto racer = store()->create("other.bin", false);
  second->write(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  racer->write(reinterpret_cast<const uint8_t*>(data.data()), 5);
  racer->commit();
  try {
    second->commit();
    ADD_FAILURE() << "a commit over another writer's object succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAlreadyExists) << e.what();
  }
  EXPECT_EQ(read_all(*store()->open("other.bin")), data.substr(0, 5));
  EXPECT_TRUE(read_all(*store()->open("lost.bin")) == data);
}

// A command sends its requests over the connections it already has open (one pool per store), not
// over a new connection, and over TLS a new handshake, per request. Counted by a pass-through proxy
// in front of Swift (a pre-authenticated storage URL through it): a save in two segments uploaded
// two at a time needs at most three connections; each later command one.
TEST_F(SwiftNativeStoreTest, EachCommandReusesItsConnectionsInsteadOfOnePerRequest) {
  const std::string token = auth_token();
  ASSERT_FALSE(token.empty());
  FaultProxy proxy("127.0.0.1", port_of(swift_server()->endpoint()));
  RunOptions env;
  env.env["OS_STORAGE_URL"] = storage_url_through(proxy);
  env.env["OS_AUTH_TOKEN"] = token;
  for (const auto& traffic : round_trip_traffic(proxy, env)) {
    EXPECT_GE(traffic.requests, 2u) << traffic.command;
    EXPECT_LE(traffic.connections, traffic.command == "save" ? 3 : 1) << traffic.command << ": " << traffic.requests << " requests";
  }
}

TEST_F(SwiftNativeStoreTest, SaveListVerifyRestoreEndToEndAndTheSwiftCliReadsWhatWasStored) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/secrets/", 12000, 1000, 9);  // ~12 MiB that do not compress: a large object
  save_list_verify_restore(m);
  auto listed = cli_json(with_store({"backup", "list", "-o", "json"}), store_env());
  ASSERT_EQ(listed.size(), 1u);
  std::string name = listed[0]["backup"];
  EXPECT_GT(listed[0]["storedSize"].get<uint64_t>(), 5u << 20);
  std::string data = "backups/" + name + "/etcd.backup.gz";
  ASSERT_EQ(swift_server()->swift_cli({"download", container_, data, "-o", dir_ / "cli.gz"}).exit_code, 0);
  auto fetched = cli(with_store({"backup", "restore", name, "--output-file", dir_ / "etcdadm.db"}), store_env());
  ASSERT_EQ(fetched.exit_code, 0) << fetched.output;
  auto gunzip = run_process({"sh", "-c", "gunzip -c '" + (dir_ / "cli.gz") + "' > '" + (dir_ / "cli.db") + "'"});
  ASSERT_EQ(gunzip.exit_code, 0) << gunzip.output;
  EXPECT_TRUE(read_file(dir_ / "cli.db") == read_file(dir_ / "etcdadm.db"));

  // An etcd-manager store written with the swift CLI is listed and restored; a prune that keeps
  // only that one deletes ours, a large object, with its segments.
  EXPECT_FALSE(swift_list(container_ + "_segments").empty());
  // (Newer than ours but not in the future: a backup dated after the pruning host's clock fills no
  // quota, so count:1 would keep ours.)
  const auto now = std::chrono::system_clock::now();
  std::string theirs = make_backup_name(now);
  write_file_atomic(dir_ / "etcd.backup.gz", read_file(dir_ / "cli.gz"));
  write_file_atomic(dir_ / "_etcd_backup.meta",
                    R"({"etcdVersion":"3.5.30","timestamp":")" +
                        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()) +
                        R"("})");
  for (const char* f : {"etcd.backup.gz", "_etcd_backup.meta"}) {
    auto up = swift_server()->swift_cli({"upload", container_, dir_ / f, "--object-name", "backups/" + theirs + "/" + f});
    ASSERT_EQ(up.exit_code, 0) << up.output;
  }
  auto r = cli(with_store({"backup", "restore", theirs, "--output-file", dir_ / "theirs.db"}), store_env());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(read_file(dir_ / "theirs.db") == read_file(dir_ / "etcdadm.db"));
  auto pruned = cli(with_store({"backup", "prune", "--policy", "count:1"}), store_env());
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  EXPECT_TRUE(swift_list(container_, "backups/" + name).empty());
  EXPECT_TRUE(swift_list(container_ + "_segments").empty()) << "the pruned large object's segments are left";
  EXPECT_EQ(swift_list(container_, "backups/" + theirs).size(), 2u);

  // A wrong password: exit 7, naming v1 auth.
  RunOptions wrong = store_env();
  wrong.env["OS_PASSWORD"] = "not-the-password";
  auto bad = cli(with_store({"backup", "list"}), wrong);
  EXPECT_EQ(bad.exit_code, 7) << bad.output;
  EXPECT_NE(bad.output.find("Swift v1 auth"), std::string::npos) << bad.output;
}

// Keystone v3: a password scoped to a project by name. The stand-in identity service checks the
// request as Keystone would read it and answers with a catalog; the token it hands out is a real
// tempauth token, so Swift itself checks every storage request that follows.
// docs/security.md, object keys: metadata naming a data file with ".." cannot make a restore read
// outside the store's prefix through Swift, whose paths are not signed. Before, libcurl collapsed
// "/../", and a backup whose metadata carried another store's digests restored that store's data.
TEST_F(SwiftNativeStoreTest, AForgedDataFileNeverLeavesTheStoresPrefix) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  auto save_into = [&](const std::string& prefix) {
    return cli_json(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url(), "-o", "json"}, prefix),
                    store_env())["backup"]
        .get<std::string>();
  };
  client.put("/registry/secrets/theirs", "another store's data");
  const std::string theirs = save_into("other");
  client.put("/registry/secrets/ours", "ours");
  const std::string ours = save_into("backups");

  // Our backup's metadata, forged: their digests and sizes, and a data file two levels up.
  auto their_meta = nlohmann::json::parse(store(1u << 20, "other")->read_small(theirs + "/" + kBackupMetaFile));
  their_meta["name"] = ours;
  their_meta["dataFile"] = "../../other/" + theirs + "/etcd.backup.gz";
  store()->write_small(ours + "/" + kBackupMetaFile, their_meta.dump(2), /*overwrite=*/true);

  // A host whose catalog has not indexed our backup yet reads the metadata from the store.
  const std::string out = dir_ / "fetched.db", fresh_catalog = dir_ / "other-host.db";
  auto restored = run_etcdadm(with_store({"backup", "restore", ours, "--output-file", out}), fresh_catalog, store_env());
  EXPECT_NE(restored.exit_code, 0) << restored.output;
  EXPECT_NE(restored.output.find("names the data file"), std::string::npos) << restored.output;
  EXPECT_FALSE(path_exists(out)) << "their data was restored as ours";
  auto verified = run_etcdadm(with_store({"backup", "verify", ours}), fresh_catalog, store_env());
  EXPECT_NE(verified.exit_code, 0) << verified.output;
}

TEST_F(SwiftNativeStoreTest, KeystoneV3PasswordAuthAndTheCatalogsEndpoint) {
  std::atomic<int> tokens{0};
  std::string last_body;
  std::mutex mu;
  httplib::Server keystone;
  keystone.Post("/v3/auth/tokens", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu);
      last_body = req.body;
    }
    auto j = nlohmann::json::parse(req.body, nullptr, false);
    const auto& user = j["auth"]["identity"]["password"]["user"];
    bool ok = j["auth"]["identity"]["methods"] == nlohmann::json::array({"password"}) && user["name"] == "etcd-backup" &&
              user["domain"]["name"] == "Default" && user["password"] == "s3cr3t" &&
              j["auth"]["scope"]["project"]["name"] == "kops" && j["auth"]["scope"]["project"]["domain"]["name"] == "Default";
    if (!ok) {
      res.status = 401;
      res.set_content(R"({"error":{"code":401,"message":"The request you have made requires authentication."}})", "application/json");
      return;
    }
    // A real token from tempauth: Swift checks what the client does with it.
    httplib::Client swift(swift_server()->endpoint());
    auto t = swift.Get("/auth/v1.0", {{"X-Auth-User", swift_server()->access_key()}, {"X-Auth-Key", swift_server()->secret_key()}});
    ++tokens;
    res.status = 201;
    res.set_header("X-Subject-Token", t ? t->get_header_value("X-Auth-Token") : "");
    nlohmann::json catalog = nlohmann::json::array(
        {{{"type", "identity"}, {"endpoints", {{{"interface", "public"}, {"region_id", "RegionOne"}, {"url", "http://x/v3"}}}}},
         {{"type", "object-store"},
          {"endpoints",
           {{{"interface", "internal"}, {"region_id", "RegionOne"}, {"url", "http://127.0.0.1:1/v1/AUTH_wrong"}},
            {{"interface", "public"}, {"region_id", "RegionTwo"}, {"url", "http://127.0.0.1:1/v1/AUTH_wrong"}},
            {{"interface", "public"}, {"region_id", "RegionOne"}, {"url", swift_server()->storage_url()}}}}}});
    res.set_content(nlohmann::json{{"token", {{"expires_at", "2099-01-01T00:00:00.000000Z"}, {"catalog", catalog}}}}.dump(),
                    "application/json");
  });
  int port = keystone.bind_to_any_port("127.0.0.1");
  std::thread server([&] { keystone.listen_after_bind(); });
  struct Stop {
    httplib::Server& s;
    std::thread& t;
    ~Stop() {
      s.stop();
      t.join();
    }
  } stop{keystone, server};

  RunOptions v3;
  v3.env = {{"OS_AUTH_URL", "http://127.0.0.1:" + std::to_string(port) + "/v3"},
            {"OS_USERNAME", "etcd-backup"},
            {"OS_PASSWORD", "s3cr3t"},
            {"OS_PROJECT_NAME", "kops"},
            {"OS_USER_DOMAIN_NAME", "Default"},
            {"OS_PROJECT_DOMAIN_NAME", "Default"},
            {"OS_REGION_NAME", "RegionOne"}};
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 100, 300);
  auto saved = cli(with_store({"--log-level", "warn", "backup", "save", "--endpoints", m.client_url()}), v3);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_EQ(cli_json(with_store({"backup", "list", "-o", "json"}), v3).size(), 1u);
  EXPECT_GE(tokens.load(), 2);
  EXPECT_GE(swift_list(container_, "backups/").size(), 2u) << "the data file and the metadata, seen by the swift CLI";

  // The wrong password: Keystone's 401 is exit 7, naming Keystone and the user.
  RunOptions wrong = v3;
  wrong.env["OS_PASSWORD"] = "guess";
  auto refused = cli(with_store({"backup", "list"}), wrong);
  EXPECT_EQ(refused.exit_code, 7) << refused.output;
  EXPECT_NE(refused.output.find("Keystone v3 user etcd-backup in project kops"), std::string::npos) << refused.output;
  // A region without object storage: exit 7, with the endpoints there are.
  RunOptions region = v3;
  region.env["OS_REGION_NAME"] = "RegionThree";
  auto none = cli(with_store({"backup", "list"}), region);
  EXPECT_EQ(none.exit_code, 7) << none.output;
  EXPECT_NE(none.output.find("public@RegionOne"), std::string::npos) << none.output;
  // Keystone v2 is refused up front.
  RunOptions v2 = v3;
  v2.env["OS_AUTH_URL"] = "http://127.0.0.1:" + std::to_string(port) + "/v2.0";
  auto old = cli(with_store({"backup", "list"}), v2);
  EXPECT_EQ(old.exit_code, 2) << old.output;
}

}  // namespace etcdadm::test
