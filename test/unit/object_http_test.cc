// The object stores' shared pieces, on their own: the HTTP layer (store/backend/object/object_http.h:
// pooled connections, retries, a refused token refreshed once) against an in-process server and the
// counting proxy, and the parted writer (store/backend/object/parted_writer.h) against a recording
// upload.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
#include "store/backend/object/object_http.h"
#include "store/backend/object/parted_writer.h"
#include "test/support/fault_proxy.h"
#include "test/support/fixture_server.h"

namespace etcdadm {
namespace {

using test::FaultProxy;
using test::FixtureServer;

RetryPolicy quick_retries() { return RetryPolicy{4, std::chrono::milliseconds(1), std::chrono::milliseconds(5)}; }

Error classify(const HttpResponse& r, const std::string& what) {
  ErrorKind kind = r.status >= 500 ? ErrorKind::kUnavailable : r.status == 401 ? ErrorKind::kAuth : ErrorKind::kInvalidArgument;
  return Error(kind, what + ": HTTP " + std::to_string(r.status));
}

HttpRequest get(const std::string& url) {
  HttpRequest r;
  r.url = url;
  return r;
}

// A token server's view: "Bearer old" has expired, "Bearer new" is good.
struct TokenServer {
  FixtureServer fixture;
  std::atomic<int> requests{0};
  TokenServer() {
    fixture.server.Get("/object", [this](const httplib::Request& req, httplib::Response& res) {
      ++requests;
      res.status = req.get_header_value("Authorization") == "Bearer new" ? 200 : 401;
      res.set_content(res.status == 200 ? "data" : "expired", "text/plain");
    });
    fixture.start();
  }
};

TEST(ObjectHttp, ARefusedTokenIsRefreshedOnceAndTheRequestBuiltAndSentAgain) {
  TokenServer server;
  std::string token = "Bearer old";
  int refreshes = 0;
  ObjectHttp http(HttpOptions{}, quick_retries(),
                  ObjectHttp::Protocol{.classify = classify, .refresh_credentials = [&](const HttpResponse& refused) {
                                         EXPECT_EQ(refused.status, 401);
                                         ++refreshes;
                                         token = "Bearer new";
                                         return true;
                                       }});
  auto build = [&] {
    HttpRequest r = get(server.fixture.url() + "/object");
    r.headers.emplace_back("Authorization", token);
    return r;
  };
  EXPECT_EQ(http.call(build, "read").body, "data");
  EXPECT_EQ(refreshes, 1);
  EXPECT_EQ(server.requests.load(), 2);
}

TEST(ObjectHttp, FixedCredentialsThatAreRefusedFailAtOnceWithTheBackendsError) {
  TokenServer server;
  int refreshes = 0;
  ObjectHttp http(HttpOptions{}, quick_retries(), ObjectHttp::Protocol{.classify = classify, .refresh_credentials = [&](const HttpResponse&) {
                                                                         ++refreshes;
                                                                         return false;  // a key: nothing to fetch anew
                                                                       }});
  try {
    http.call([&] { return get(server.fixture.url() + "/object"); }, "read of the object");
    ADD_FAILURE() << "a refused request succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAuth);
    EXPECT_STREQ(e.what(), "read of the object: HTTP 401");
  }
  EXPECT_EQ(refreshes, 1);
  EXPECT_EQ(server.requests.load(), 1) << "a refusal that no new token can mend was sent again";
}

TEST(ObjectHttp, BusyAnswersAreRetriedAndAllowedStatusesReturned) {
  FixtureServer server;
  std::atomic<int> busy{2};
  std::atomic<int> requests{0};
  server.server.Get("/busy", [&](const httplib::Request&, httplib::Response& res) {
    ++requests;
    res.status = busy-- > 0 ? 503 : 200;
  });
  server.server.Get("/missing", [&](const httplib::Request&, httplib::Response& res) { res.status = 404; });
  server.start();
  ObjectHttp http(HttpOptions{}, quick_retries(), ObjectHttp::Protocol{.classify = classify});
  EXPECT_EQ(http.call([&] { return get(server.url() + "/busy"); }, "read").status, 200);
  EXPECT_EQ(requests.load(), 3);
  EXPECT_EQ(http.call([&] { return get(server.url() + "/missing"); }, "stat", {404}).status, 404);
  EXPECT_THROW(http.call([&] { return get(server.url() + "/missing"); }, "read"), Error);
}

// Sequential requests take turns on one connection; parallel ones get one each, kept for later; a
// transfer that ended in an exception does not give its connection back.
TEST(ObjectHttp, RequestsReuseThePoolsConnections) {
  FixtureServer server;
  server.server.Get("/object", [](const httplib::Request&, httplib::Response& res) { res.set_content(std::string(1000, 'x'), "text/plain"); });
  // Answers once three requests are in (or after 10 s): the three are in flight at once, however
  // late a thread starts.
  std::atomic<int> arrived{0};
  server.server.Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    int mine = ++arrived;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < (mine + 2) / 3 * 3 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    res.set_content("slow", "text/plain");
  });
  server.server.set_keep_alive_max_count(1000);  // httplib closes a connection after 5 requests by default
  server.start();
  FaultProxy proxy("127.0.0.1", std::stoi(server.url().substr(server.url().rfind(':') + 1)));
  ObjectHttp http(HttpOptions{}, quick_retries(), ObjectHttp::Protocol{.classify = classify});
  for (int i = 0; i < 5; ++i) http.call([&] { return get(proxy.url() + "/object"); }, "read");
  EXPECT_EQ(proxy.connections(), 1);

  std::vector<std::thread> parallel;
  for (int i = 0; i < 3; ++i) parallel.emplace_back([&] { http.call([&] { return get(proxy.url() + "/slow"); }, "read"); });
  for (auto& t : parallel) t.join();
  EXPECT_EQ(proxy.connections(), 3) << "three at once: the pooled one and two new";
  for (int i = 0; i < 3; ++i) http.call([&] { return get(proxy.url() + "/object"); }, "read");
  EXPECT_EQ(proxy.connections(), 3);

  EXPECT_THROW(http.send([&] { return get(proxy.url() + "/object"); },
                         [](const char*, size_t) { throw Error(ErrorKind::kCorrupt, "the sink refuses"); }),
               Error);
  int before = proxy.connections();
  std::vector<std::thread> again;
  for (int i = 0; i < 3; ++i) again.emplace_back([&] { http.call([&] { return get(proxy.url() + "/slow"); }, "read"); });
  for (auto& t : again) t.join();
  EXPECT_EQ(proxy.connections(), before + 1) << "the connection of the refused transfer was kept";
}

// What the parted writer asked of its upload.
struct Recorded {
  std::mutex mu;
  std::string whole;
  bool whole_sent = false;
  int begun = 0;
  std::map<int, std::string> parts;
  std::vector<std::string> completed;
  std::vector<uint64_t> completed_sizes;
  int abandoned = -1;
  int fail_part = 0;  // this part's upload throws
};

class RecordingUpload : public PartedUpload {
 public:
  explicit RecordingUpload(Recorded& r) : r_(r) {}
  std::string where() const override { return "test://object"; }
  size_t part_size(int number) const override { return number <= 2 ? 4 : 8; }  // later parts grow
  int max_parts() const override { return 4; }
  void put_whole(std::string_view data) override {
    r_.whole = std::string(data);
    r_.whole_sent = true;
  }
  void begin() override { ++r_.begun; }
  std::string put_part(int number, const std::string& data) override {
    if (number == r_.fail_part) throw Error(ErrorKind::kUnavailable, "part " + std::to_string(number) + " failed");
    std::lock_guard<std::mutex> lock(r_.mu);
    r_.parts[number] = data;
    return "etag" + std::to_string(number);
  }
  void complete(const std::vector<std::string>& results, const std::vector<uint64_t>& sizes) override {
    r_.completed = results;
    r_.completed_sizes = sizes;
  }
  void abandon(int parts) override { r_.abandoned = parts; }

 private:
  Recorded& r_;
};

void write(BlobWriter& w, const std::string& s) { w.write(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

TEST(PartedWriter, AnObjectThatFitsItsFirstPartIsOneRequest) {
  Recorded r;
  PartedWriter w(std::make_unique<RecordingUpload>(r), 2);
  write(w, "abc");
  w.commit();
  EXPECT_TRUE(r.whole_sent);
  EXPECT_EQ(r.whole, "abc");
  EXPECT_EQ(r.begun, 0);
  EXPECT_EQ(w.bytes_written(), 3u);
}

TEST(PartedWriter, PartsOfGrowingSizeAreCompletedInOrderWithTheirSizes) {
  Recorded r;
  {
    PartedWriter w(std::make_unique<RecordingUpload>(r), 2);
    write(w, "0123456789");  // parts of 4, 4, then 8
    write(w, "abcdefghij");
    w.commit();
    EXPECT_EQ(w.bytes_written(), 20u);
  }
  EXPECT_FALSE(r.whole_sent);
  EXPECT_EQ(r.begun, 1);
  EXPECT_EQ(r.parts, (std::map<int, std::string>{{1, "0123"}, {2, "4567"}, {3, "89abcdef"}, {4, "ghij"}}));
  EXPECT_EQ(r.completed, (std::vector<std::string>{"etag1", "etag2", "etag3", "etag4"}));
  EXPECT_EQ(r.completed_sizes, (std::vector<uint64_t>{4, 4, 8, 4}));
  EXPECT_EQ(r.abandoned, -1) << "a committed upload was abandoned";
}

TEST(PartedWriter, AFailedPartFailsTheCommitAndTheUploadIsAbandoned) {
  Recorded r;
  r.fail_part = 2;
  {
    PartedWriter w(std::make_unique<RecordingUpload>(r), 1);
    try {
      write(w, std::string(16, 'x'));
      w.commit();
      ADD_FAILURE() << "the commit succeeded without part 2";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "part 2 failed");
    }
  }
  EXPECT_TRUE(r.completed.empty());
  EXPECT_GE(r.abandoned, 2);
}

TEST(PartedWriter, MorePartsThanTheBackendTakesIsRefusedWithTheFlagToRaise) {
  Recorded r;
  PartedWriter w(std::make_unique<RecordingUpload>(r), 2);
  try {
    write(w, std::string(4 + 4 + 8 + 8 + 8, 'x'));  // a fifth part
    ADD_FAILURE() << "a fifth part was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(), "test://object would need more than 4 parts");
    EXPECT_EQ(e.hint(), "raise --upload-part-size");
  }
  w.abort();
  EXPECT_EQ(r.abandoned, 4);
  EXPECT_THROW(write(w, "x"), Error);
}

}  // namespace
}  // namespace etcdadm
