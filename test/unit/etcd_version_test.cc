// etcd_version.h: version parsing and the per-version rules, as known-answer tables. The rules'
// outcomes on real etcd binaries are in test/e2e/cross_version_test.cc.
#include <gtest/gtest.h>

#include "etcd/etcd_version.h"

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


// Known answers for moving one member, with real version pairs. `cluster` is what etcd's /version
// says; `members` what every member runs.
VersionStep moving(const char* member, const char* target, const char* cluster, std::vector<const char*> members,
                 const char* downgrade = nullptr) {
  VersionStepInput in;
  in.member = v(member);
  in.target = v(target);
  in.cluster = v(cluster);
  for (const char* m : members) in.members.push_back(v(m));
  if (downgrade) in.downgrade = v(downgrade);
  return check_version_step(in);
}

TEST(EtcdVersion, UpgradesGoOneMinorAtATimeFromAClusterOnTheMembersMinor) {
  auto s = moving("3.4.23", "3.5.35", "3.4.0", {"3.4.23", "3.4.23", "3.4.23"});
  EXPECT_TRUE(s.allowed) << s.reason;
  EXPECT_EQ(s.kind, VersionStepKind::kUpgrade);
  // The second and third members: the others already run 3.5, the cluster is still 3.4.
  EXPECT_TRUE(moving("3.4.23", "3.5.35", "3.4.0", {"3.5.35", "3.5.35", "3.4.23"}).allowed);
  EXPECT_TRUE(moving("3.5.35", "3.6.16", "3.5.0", {"3.5.35", "3.5.35", "3.5.35"}).allowed);
  EXPECT_TRUE(moving("3.6.16", "3.7.3", "3.6.0", {"3.6.16", "3.7.3", "3.6.16"}).allowed);

  auto skip = moving("3.4.23", "3.6.16", "3.4.0", {"3.4.23"});
  EXPECT_FALSE(skip.allowed);
  EXPECT_NE(skip.reason.find("skips a minor"), std::string::npos) << skip.reason;
  EXPECT_NE(skip.supported_path.find("3.5"), std::string::npos) << skip.supported_path;
  EXPECT_FALSE(moving("3.5.35", "3.7.3", "3.5.0", {"3.5.35"}).allowed);

  // 3.6 before the whole cluster is on 3.5: a member still on 3.4.
  auto mixed = moving("3.5.35", "3.6.16", "3.4.0", {"3.5.35", "3.4.23", "3.5.35"});
  EXPECT_FALSE(mixed.allowed);
  EXPECT_NE(mixed.reason.find("3.4.23"), std::string::npos) << mixed.reason;
  // The cluster version lags while every member already runs 3.5 (etcd moves it within seconds).
  EXPECT_FALSE(moving("3.5.35", "3.6.16", "3.4.0", {"3.5.35", "3.5.35"}).allowed);

  // etcd's guides: 3.5.32 or later before 3.6 (issue 19557 and the v2store checks), 3.6.11 before 3.7.
  auto old35 = moving("3.5.19", "3.6.16", "3.5.0", {"3.5.19", "3.5.19", "3.5.19"});
  EXPECT_FALSE(old35.allowed);
  EXPECT_NE(old35.reason.find("3.5.32"), std::string::npos) << old35.reason;
  EXPECT_FALSE(moving("3.5.31", "3.6.0", "3.5.0", {"3.5.31"}).allowed);
  EXPECT_TRUE(moving("3.5.32", "3.6.0", "3.5.0", {"3.5.32"}).allowed);
  EXPECT_FALSE(moving("3.6.10", "3.7.3", "3.6.0", {"3.6.10"}).allowed);
  EXPECT_TRUE(moving("3.6.11", "3.7.0", "3.6.0", {"3.6.11"}).allowed);
  EXPECT_TRUE(moving("3.4.1", "3.5.35", "3.4.0", {"3.4.1"}).allowed);  // no minimum named for 3.4
  // A patch step is always possible (that is the way out of the 3.5.19 refusal).
  auto patch = moving("3.5.19", "3.5.35", "3.5.0", {"3.5.19", "3.5.19"});
  EXPECT_TRUE(patch.allowed);
  EXPECT_EQ(patch.kind, VersionStepKind::kPatch);
  EXPECT_EQ(moving("3.5.35", "3.5.17", "3.5.0", {"3.5.35"}).kind, VersionStepKind::kPatch);
  EXPECT_EQ(moving("3.5.35", "3.5.35", "3.5.0", {"3.5.35"}).kind, VersionStepKind::kSame);
  EXPECT_FALSE(moving("3.6.16", "4.0.0", "3.6.0", {"3.6.16"}).allowed);
  // No upgrade while a downgrade is under way.
  EXPECT_FALSE(moving("3.5.35", "3.6.16", "3.5.0", {"3.5.35", "3.6.16"}, "3.5.0").allowed);
}

TEST(EtcdVersion, DownGoesOnlyAsARollbackOfAMixedClusterOrThroughTheDowngradeApiFrom36) {
  // Rollbacks: the member went up, the cluster version did not.
  auto back = moving("3.5.35", "3.4.23", "3.4.0", {"3.5.35", "3.4.23", "3.4.23"});
  EXPECT_TRUE(back.allowed) << back.reason;
  EXPECT_EQ(back.kind, VersionStepKind::kRollback);
  EXPECT_TRUE(moving("3.6.16", "3.5.35", "3.5.0", {"3.6.16", "3.5.35", "3.5.35"}).allowed);
  EXPECT_EQ(moving("3.7.3", "3.6.16", "3.6.0", {"3.7.3", "3.6.16"}).kind, VersionStepKind::kRollback);
  // Every member on the new minor: the cluster version is about to move, the rollback is over.
  auto late = moving("3.5.35", "3.4.23", "3.4.0", {"3.5.35", "3.5.35", "3.5.35"});
  EXPECT_FALSE(late.allowed);
  EXPECT_NE(late.reason.find("moving the cluster version"), std::string::npos) << late.reason;

  // Downgrades: 3.6 -> 3.5 with the cluster on 3.6 goes through etcd's downgrade API.
  auto down = moving("3.6.16", "3.5.35", "3.6.0", {"3.6.16", "3.6.16", "3.6.16"});
  EXPECT_TRUE(down.allowed) << down.reason;
  EXPECT_EQ(down.kind, VersionStepKind::kDowngrade);
  EXPECT_TRUE(down.enable_downgrade);
  // Once enabled, the cluster version is 3.5 and the members follow without enabling again.
  auto next = moving("3.6.16", "3.5.35", "3.5.0", {"3.5.35", "3.6.16", "3.6.16"}, "3.5.0");
  EXPECT_TRUE(next.allowed);
  EXPECT_EQ(next.kind, VersionStepKind::kDowngrade);
  EXPECT_FALSE(next.enable_downgrade);
  EXPECT_TRUE(moving("3.7.3", "3.6.16", "3.7.0", {"3.7.3", "3.7.3"}).enable_downgrade);
  // Enabled, and the leader has not lowered the cluster version yet: nothing to enable again.
  auto enabled = moving("3.6.16", "3.5.35", "3.6.0", {"3.6.16", "3.6.16"}, "3.5.0");
  EXPECT_TRUE(enabled.allowed) << enabled.reason;
  EXPECT_EQ(enabled.kind, VersionStepKind::kDowngrade);
  EXPECT_FALSE(enabled.enable_downgrade);

  // 3.5 has no downgrade to 3.4 once the cluster is 3.5.
  auto no = moving("3.5.35", "3.4.23", "3.5.0", {"3.5.35", "3.5.35", "3.5.35"});
  EXPECT_FALSE(no.allowed);
  EXPECT_NE(no.reason.find("from 3.6 on"), std::string::npos) << no.reason;
  EXPECT_NE(no.supported_path.find("init --from-backup"), std::string::npos) << no.supported_path;
  EXPECT_FALSE(moving("3.6.16", "3.4.23", "3.6.0", {"3.6.16"}).allowed);  // two minors
  // A downgrade starts with every member on the same minor.
  EXPECT_FALSE(moving("3.6.16", "3.5.35", "3.6.0", {"3.6.16", "3.7.3"}).allowed);
  EXPECT_FALSE(supports_downgrade_api(v("3.5.35")));
  EXPECT_TRUE(supports_downgrade_api(v("3.6.0")));
}

}  // namespace etcdadm
