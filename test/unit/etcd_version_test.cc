// etcd_version.h: version parsing and the per-version rules, as known-answer tables. The rules'
// outcomes on real etcd binaries are in test/e2e/cross_version_test.cc.
#include <gtest/gtest.h>

#include "etcdadm/etcd_version.h"

namespace etcdadm {

namespace {

EtcdVersion v(const char* text) { return *EtcdVersion::parse(text); }

}  // namespace

TEST(EtcdVersion, ParsesWhatEtcdAndItsTagsPrint) {
  EXPECT_EQ(v("3.5.17"), (EtcdVersion{3, 5, 17}));
  EXPECT_EQ(v("v3.6.16"), (EtcdVersion{3, 6, 16}));
  EXPECT_EQ(v("3.6.0-rc.1"), (EtcdVersion{3, 6, 0}));
  EXPECT_EQ(v("3.7"), (EtcdVersion{3, 7, 0}));
  EXPECT_EQ(v("3.4.23").str(), "3.4.23");
  EXPECT_EQ(v("3.4.23").minor_str(), "3.4");
  for (const char* bad : {"", "3", "3.", "x.5.1", "3.5.x", "3..1", "-3.5.1", "3.5.1.2"}) {
    EXPECT_FALSE(EtcdVersion::parse(bad)) << bad;
  }
  EXPECT_LT(v("3.5.35"), v("3.6.0"));
  EXPECT_LT(v("3.9.0"), v("3.10.0"));  // numbers, not strings
}

TEST(EtcdVersion, ToolsPerVersion) {
  EXPECT_FALSE(restores_with_etcdutl(v("3.4.23")));
  EXPECT_TRUE(restores_with_etcdutl(v("3.5.0")));
  EXPECT_TRUE(restores_with_etcdutl(v("3.7.3")));
  EXPECT_TRUE(wants_etcdctl_api_variable("3.4.23"));
  EXPECT_TRUE(wants_etcdctl_api_variable(""));  // unknown: what the oldest tools need
  EXPECT_FALSE(wants_etcdctl_api_variable("3.5.35"));
  EXPECT_FALSE(wants_etcdctl_api_variable("3.6.16"));
}

TEST(EtcdVersion, CrossVersionRestoresFollowEtcdsUpgradeRules) {
  struct Row {
    const char* from;
    const char* to;
    bool allowed;
    const char* path;  // a piece of the supported path when refused
  };
  for (const Row& r : std::vector<Row>{
           {"3.4.23", "3.4.0", true, ""},
           {"3.4.23", "3.5.35", true, ""},
           {"3.5.35", "3.6.16", true, ""},
           {"3.6.16", "3.7.3", true, ""},
           {"3.4.23", "3.6.16", false, "restore with etcd 3.5"},
           {"3.4.23", "3.7.3", false, "restore with etcd 3.5"},
           {"3.5.35", "3.7.3", false, "restore with etcd 3.6"},
           {"3.5.35", "3.4.23", false, "restore with etcd 3.5 or newer"},
           {"3.6.16", "3.5.35", false, "downgrade procedure"},
           {"3.7.3", "3.6.16", false, "restore with etcd 3.7 or newer"},
       }) {
    auto got = cross_version_restore(v(r.from), v(r.to));
    EXPECT_EQ(got.allowed, r.allowed) << r.from << " -> " << r.to;
    if (r.allowed) {
      EXPECT_TRUE(got.reason.empty() && got.supported_path.empty()) << r.from << " -> " << r.to;
    } else {
      EXPECT_NE(got.supported_path.find(r.path), std::string::npos) << r.from << " -> " << r.to << ": " << got.supported_path;
      EXPECT_NE(got.reason.find(v(r.from).minor_str()), std::string::npos) << got.reason;
    }
  }
}

}  // namespace etcdadm
