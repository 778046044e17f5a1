// Backup attestations (controller/backup_attestation.h): what an auto-restore takes without a
// person, and each way a backup is not attested.
#include "controller/backup_attestation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "etcdadm/pki.h"
#include "store/backend/local/local_store.h"
#include "test/support/test_env.h"

namespace etcdadm {
namespace {

struct Attested : ::testing::Test {
  void SetUp() override {
    ensure_ca(certs.path());
    ensure_ca(other_certs.path());
    ring = RecordKeyring::of_certs_dir(certs.path());
    backup.name = "2026-12-06T04:00:00.000000Z-000001";
    backup.cluster_id = "cdf818194e3a8c32";
    backup.revision = 4242;
    backup.db_sha256 = std::string(64, 'd');
    meta.name = backup.name;
    meta.cluster_id = backup.cluster_id;
    meta.revision = backup.revision;
    meta.db_sha256 = backup.db_sha256;
  }
  std::string refusal(bool accept_unsigned = false) {
    return backup_attestation_refusal(store, backup, RecordPolicy{&ring, accept_unsigned});
  }
  test::TempDir certs, other_certs, dir;
  LocalStore store{dir / "store"};
  RecordKeyring ring;
  BackupRecord backup;
  BackupMeta meta;
};

TEST_F(Attested, AnAttestedBackupIsTakenAndItsStatementIsSigned) {
  write_backup_attestation(store, attestation_of(meta, "h1"), ring);
  EXPECT_EQ(refusal(), "");
  const std::string key = backup.name + "/etcdadm-attestation.json";
  const auto j = nlohmann::json::parse(store.read_small(key));
  EXPECT_EQ(j["format"], "etcdadm-backup-attestation/1");
  EXPECT_EQ(j["revision"], 4242);
  EXPECT_EQ(j["attestedBy"], "h1");
  EXPECT_EQ(ring.check(key, j.dump()), RecordTrust::kAuthentic);
}

TEST_F(Attested, ABackupWithoutAnAttestationIsTakenOnlyWhereUnsignedRecordsAre) {
  const std::string why = refusal();
  EXPECT_NE(why.find("is not attested"), std::string::npos) << why;
  EXPECT_NE(why.find(backup.name), std::string::npos) << why;
  EXPECT_EQ(refusal(/*accept_unsigned=*/true), "");
}

TEST_F(Attested, EveryWayABackupIsNotAttested) {
  write_backup_attestation(store, attestation_of(meta, "h1"), ring);
  // The backup replaced after it was attested: metadata that records another db, revision or cluster.
  for (auto change : std::vector<std::function<void(BackupRecord&)>>{
           [](BackupRecord& b) { b.db_sha256 = std::string(64, 'e'); }, [](BackupRecord& b) { b.revision = 4243; },
           [](BackupRecord& b) { b.cluster_id = "cdf818194e3a8c33"; }, [](BackupRecord& b) { b.db_sha256.clear(); }}) {
    BackupRecord replaced = backup;
    change(replaced);
    const std::string why = backup_attestation_refusal(store, replaced, RecordPolicy{&ring, true});
    EXPECT_NE(why.find("names another backup"), std::string::npos) << why;
  }
  // The attestation moved to another backup's name (its statement names the first): both the key
  // and the name in it differ.
  const std::string key = backup.name + "/etcdadm-attestation.json";
  BackupRecord newer = backup;
  newer.name = "2026-12-06T05:00:00.000000Z-000001";
  store.write_small(newer.name + "/etcdadm-attestation.json", store.read_small(key));
  EXPECT_NE(backup_attestation_refusal(store, newer, RecordPolicy{&ring, false}).find("none of this host's CA keys"),
            std::string::npos);
  // Signed by another cluster's CA, or altered: refused even where unsigned records are taken.
  write_backup_attestation(store, attestation_of(meta, "h1"), RecordKeyring::of_certs_dir(other_certs.path()));
  EXPECT_NE(refusal(true).find("none of this host's CA keys"), std::string::npos);
  write_backup_attestation(store, attestation_of(meta, "h1"), ring);
  auto j = nlohmann::json::parse(store.read_small(key));
  j["revision"] = 1;
  store.write_small(key, j.dump(), /*overwrite=*/true);
  EXPECT_NE(refusal(true).find("none of this host's CA keys"), std::string::npos);
  // Unsigned but naming it, where unsigned records are taken: accepted; garbage: refused.
  j.erase("auth");
  j["revision"] = 4242;
  store.write_small(key, j.dump(), /*overwrite=*/true);
  EXPECT_EQ(refusal(true), "");
  EXPECT_NE(refusal(false).find("carries no authenticator"), std::string::npos);
  store.write_small(key, "[1]", /*overwrite=*/true);
  EXPECT_THROW(refusal(true), Error);
}

TEST_F(Attested, OnlyABackupWithItsRevisionClusterAndDigestCanBeAttested) {
  meta.revision.reset();
  EXPECT_THROW(attestation_of(meta, "h1"), Error);
}

}  // namespace
}  // namespace etcdadm
