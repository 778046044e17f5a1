// Tests of store/backend/object/object_http.{h,cc}, the object stores' HTTP layer: pooled
// connections, retries, a refused token refreshed once, against an in-process server and the
// counting proxy.
#include "store/backend/object/object_http.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
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

}  // namespace
}  // namespace etcdadm
