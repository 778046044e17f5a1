// Tests of store/backend/swift/swift_auth.{h,cc}: the auth chain from an openrc environment. Swift
// itself checks the rest in SwiftNativeStoreTest.*.
#include "store/backend/swift/swift_auth.h"

#include <gtest/gtest.h>

#include <map>

#include "common/error.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

using test::fake_environment;

TEST(SwiftAuth, TheChainFromAnOpenrcEnvironment) {
  auto pre = resolve_swift_auth(fake_environment({{"OS_STORAGE_URL", "https://swift.example/v1/AUTH_p/"}, {"OS_AUTH_TOKEN", "t"}}));
  EXPECT_EQ(pre.kind, SwiftAuthConfig::Kind::kPreauthenticated);
  EXPECT_EQ(pre.storage_url, "https://swift.example/v1/AUTH_p");

  auto v1 = resolve_swift_auth(fake_environment({{"OS_AUTH_URL", "http://127.0.0.1:8080/auth/v1.0"}, {"OS_USERNAME", "test:tester"},
                                                 {"OS_PASSWORD", "testing"}}));
  EXPECT_EQ(v1.kind, SwiftAuthConfig::Kind::kV1);
  EXPECT_EQ(v1.user, "test:tester");

  auto v3 = resolve_swift_auth(fake_environment({{"OS_AUTH_URL", "https://keystone.example:5000"}, {"OS_USERNAME", "u"},
                                                 {"OS_PASSWORD", "p"}, {"OS_PROJECT_NAME", "kops"}, {"OS_DOMAIN_NAME", "corp"},
                                                 {"OS_REGION_NAME", "RegionOne"}, {"OS_ENDPOINT_TYPE", "internalURL"}}));
  EXPECT_EQ(v3.kind, SwiftAuthConfig::Kind::kKeystoneV3);
  EXPECT_EQ(v3.auth_url, "https://keystone.example:5000/v3");
  EXPECT_EQ(v3.keystone.user_domain_name, "corp");
  EXPECT_EQ(v3.keystone.project_domain_name, "corp");
  EXPECT_EQ(v3.interface, "internal");
  EXPECT_EQ(v3.region, "RegionOne");

  auto ac = resolve_swift_auth(fake_environment({{"OS_AUTH_URL", "https://k/v3"}, {"OS_APPLICATION_CREDENTIAL_ID", "id"},
                                                 {"OS_APPLICATION_CREDENTIAL_SECRET", "s"}}));
  EXPECT_EQ(ac.keystone.application_credential_id, "id");
  EXPECT_NE(ac.description.find("application credential"), std::string::npos);

  auto kind = [](const std::map<std::string, std::string>& env) {
    try {
      resolve_swift_auth(fake_environment(env));
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kInternal;
  };
  EXPECT_EQ(kind({}), ErrorKind::kAuth);
  EXPECT_EQ(kind({{"OS_AUTH_URL", "https://k/v2.0"}, {"OS_USERNAME", "u"}, {"OS_PASSWORD", "p"}}), ErrorKind::kInvalidArgument);
  EXPECT_EQ(kind({{"OS_AUTH_URL", "https://k/v3"}, {"OS_USERNAME", "u"}, {"OS_PASSWORD", "p"}}), ErrorKind::kAuth);  // no project
  EXPECT_EQ(kind({{"OS_AUTH_URL", "https://k/v3"}, {"OS_APPLICATION_CREDENTIAL_ID", "id"}}), ErrorKind::kAuth);
  EXPECT_EQ(kind({{"OS_AUTH_URL", "ftp://k/v3"}, {"OS_USERNAME", "u"}, {"OS_PASSWORD", "p"}, {"OS_PROJECT_ID", "x"}}),
            ErrorKind::kInvalidArgument);
}

}  // namespace
}  // namespace etcdadm
