// Tests of common/http_client.{h,cc}: URLs in messages never carry credentials.
#include "common/http_client.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace etcdadm {
namespace {

TEST(UrlForMessages, KnownAnswers) {
  EXPECT_EQ(url_for_messages("https://acct.blob.core.windows.net/c/k?sv=1&sig=abc"), "https://acct.blob.core.windows.net/c/k");
  EXPECT_EQ(url_for_messages("https://user:pass@host:8080/p/a@b?x#frag"), "https://host:8080/p/a@b");
  EXPECT_EQ(url_for_messages("http://host/p#frag"), "http://host/p");
  EXPECT_EQ(url_for_messages("https://host"), "https://host");
  // A refused connection names the URL without its query.
  HttpClient client;
  HttpRequest req;
  req.url = "http://127.0.0.1:1/k?sig=SECRETSIGNATURE";
  try {
    client.perform(req);
    ADD_FAILURE() << "port 1 answered";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("SECRETSIGNATURE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("http://127.0.0.1:1/k"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace etcdadm
