// Known-answer tests of what the native restore writes, against the bytes etcd's own tools wrote
// on this machine kind for the same inputs: `etcdctl snapshot restore` 3.4.23 (ETCDCTL_API=3) and
// `etcdutl snapshot restore` 3.5.35, 3.6.16 and 3.7.3, each with
//   --name m1 --initial-cluster-token tok --initial-advertise-peer-urls http://127.0.0.1:2380
//   --initial-cluster m1=http://127.0.0.1:2380                                   ("single")
//   --initial-cluster m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380,m3=http://127.0.0.3:2380
// The vectors are SHA-256s of the tools' .snap file and of the first 600 bytes of their WAL (the
// records end before byte 528; zeros follow). The e2e tests (NativeRestore.*) compare with the
// tools directly on every run; these pin the bytes without any tool.
#include "etcd/datadir/mvcc.h"
#include "restore/native_restore.h"
#include "restore/restore_method.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "common/sha256.h"
#include "etcd/datadir/snapshot_inspect.h"
#include "etcd/datadir/wal_writer.h"

namespace etcdadm {
namespace {

const char* const kOne = "m1=http://127.0.0.1:2380";
const char* const kThree = "m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380,m3=http://127.0.0.3:2380";

std::string sha(const std::string& bytes) { return to_hex(sha256_of(bytes.data(), bytes.size())); }

std::string wal_prefix(const NewCluster& c, const EtcdVersion& v) {
  std::string records = wal_records_for_restore(c, "m1", v);
  records.resize(600, '\0');  // the preallocated file reads as zeros after the records
  return records;
}

TEST(NewCluster, IdsAsEtcdComputesThem) {
  NewCluster one = plan_new_cluster(kOne, "tok");
  ASSERT_EQ(one.members.size(), 1u);
  EXPECT_EQ(id_hex(one.members[0].id), "71405583d3e2d5ce");
  EXPECT_EQ(id_hex(one.cluster_id), "24aa77137010d2b7");

  NewCluster three = plan_new_cluster(kThree, "tok");
  ASSERT_EQ(three.members.size(), 3u);
  EXPECT_EQ(id_hex(three.members[0].id), "2f2af311a04f72b2");  // m3: ascending IDs
  EXPECT_EQ(three.members[0].name, "m3");
  EXPECT_EQ(id_hex(three.members[1].id), "6900051e73e7c254");
  EXPECT_EQ(id_hex(three.members[2].id), "71405583d3e2d5ce");
  EXPECT_EQ(id_hex(three.cluster_id), "38f75c64647fa564");

  // Several URLs for one name: sorted, concatenated (etcdutl 3.5.35 gave this ID).
  NewCluster two_urls = plan_new_cluster("m1=https://10.0.0.1:2380,m1=http://127.0.0.1:2380", "tok");
  ASSERT_EQ(two_urls.members.size(), 1u);
  EXPECT_EQ(id_hex(two_urls.members[0].id), "81c61a744f2edc1b");
  EXPECT_EQ(two_urls.members[0].peer_urls, (std::vector<std::string>{"http://127.0.0.1:2380", "https://10.0.0.1:2380"}));
}

TEST(NewCluster, RefusesWhatEtcdRefuses) {
  for (const char* bad : {"m1=http://127.0.0.1:2380/path", "m1=ftp://127.0.0.1:2380", "m1=http://127.0.0.1",
                          "m1=http://a:1,m2=http://a:1", "=http://a:1", "m1", ""}) {
    EXPECT_THROW(plan_new_cluster(bad, "tok"), Error) << bad;
  }
  EXPECT_THROW(plan_new_cluster(kOne, "tok").member("m2"), Error);
  EXPECT_THROW(plan_new_cluster("m\b1=http://127.0.0.1:2380", "tok"), Error) << "control character in a name";
  EXPECT_THROW(plan_new_cluster("m1=http://127.0.0.1:23\n80", "tok"), Error) << "control character in a URL";
}

TEST(NewCluster, SchemesAreLowerCasedAndUnixSocketsAccepted) {
  // Go's url.URL.String() lower-cases the scheme; the ID is computed from that string.
  NewCluster upper = plan_new_cluster("m1=HTTP://127.0.0.1:2380", "tok");
  EXPECT_EQ(upper.members[0].peer_urls, std::vector<std::string>{"http://127.0.0.1:2380"});
  EXPECT_EQ(id_hex(upper.members[0].id), "71405583d3e2d5ce");
  // etcd 3.5+ take unix sockets as they are (no host:port, a path).
  EXPECT_NO_THROW(plan_new_cluster("m1=unix:///run/etcd/peer.sock", "tok"));
}

TEST(NativeRestoreBytes, MemberJsonIsGoJson) {
  NewMember m{0x71405583d3e2d5ceULL, "m1", {"http://127.0.0.1:2380"}};
  EXPECT_EQ(etcd_member_json(m), R"({"id":8160616549479273934,"peerURLs":["http://127.0.0.1:2380"],"name":"m1"})");
  // Go's encoding/json escapes HTML characters, control characters, U+2028, and invalid UTF-8.
  m.name = "a<b>&\"\\\n\x01\xe2\x80\xa8\xff\xc3\xa9";
  EXPECT_EQ(etcd_member_json(m),
            "{\"id\":8160616549479273934,\"peerURLs\":[\"http://127.0.0.1:2380\"],"
            "\"name\":\"a\\u003cb\\u003e\\u0026\\\"\\\\\\n\\u0001\\u2028\\ufffd\xc3\xa9\"}");
}

struct Vector {
  const char* version;
  const char* cluster;
  const char* snap_sha256;  // empty: the tool's member order was random (3.6+, several members)
  const char* wal_sha256;
};

TEST(NativeRestoreBytes, WalAndSnapFileAreWhatEtcdsToolsWrite) {
  const Vector vectors[] = {
      {"3.4.23", kOne, "c5f9019da67e6b54ef6c4924bbcd389e42bcb0705c1e732b94ce2551af38decb",
       "58462431e97b2ee6f3485ecb74d3c02ad191885253778835f50a9770cb264e7f"},
      {"3.4.23", kThree, "95c2f7a3c5496d416fe7f2abc31d51fd9f0b1efa20637661ffeb4b20344275e0",
       "0c2693655a34dba9dbc14c547fb6db271ebd3741d7928a5546c13d6a7513e15e"},
      {"3.5.35", kOne, "c5f9019da67e6b54ef6c4924bbcd389e42bcb0705c1e732b94ce2551af38decb",
       "168be1b31c97a452a815e0c08f7c9066b4aa210e575dcf0d782fc4d8f5bce527"},
      {"3.5.35", kThree, "95c2f7a3c5496d416fe7f2abc31d51fd9f0b1efa20637661ffeb4b20344275e0",
       "c66f1f477d30d33cf081f7f00a4d0b42c39c3441c297c0ac334bc52e0cad7711"},
      {"3.6.16", kOne, "06b099ab24a568791f5fdea400c426c38b32c0a3a83c48f6f97d582f053f4cfe",
       "168be1b31c97a452a815e0c08f7c9066b4aa210e575dcf0d782fc4d8f5bce527"},
      {"3.6.16", kThree, "", "c66f1f477d30d33cf081f7f00a4d0b42c39c3441c297c0ac334bc52e0cad7711"},
      {"3.7.3", kOne, "df1e48788761d1e52525a4661abb13f28c471cac96e5b77c3ff644eb43963be8",
       "aefe132abed0e98cf2d7b9a9d03f9726240bfc0803d07b5c3cb6e8e484d10bb6"},
      {"3.7.3", kThree, "", "246e29acc9cf86d3e3af00d55c6489cf2ce09c240c6fe1d88da48780c5d2b8bd"},
  };
  for (const Vector& v : vectors) {
    SCOPED_TRACE(std::string(v.version) + " " + v.cluster);
    EtcdVersion version = *EtcdVersion::parse(v.version);
    NewCluster c = plan_new_cluster(v.cluster, "tok");
    EXPECT_EQ(sha(wal_prefix(c, version)), v.wal_sha256);
    if (*v.snap_sha256) {
      EXPECT_EQ(sha(snap_file_for_restore(c, version)), v.snap_sha256);
    }
  }
}

TEST(NativeRestoreBytes, WalFramesPadAndChainTheirCrc) {
  uint32_t crc = 0;
  // etcd's empty crc record: 4 bytes of record, 4 of padding, length field 0x84 << 56 | 4.
  std::string f = wal_frame(WalRecordType::kCrc, "", false, crc);
  EXPECT_EQ(f, std::string("\x04\0\0\0\0\0\0\x84\x08\x04\x10\0\0\0\0\0", 16));
  EXPECT_EQ(crc, 0u);
  std::string g = wal_frame(WalRecordType::kEntry, "abc", true, crc);
  EXPECT_EQ(g.size() % 8, 0u);
  EXPECT_NE(crc, 0u);
}

TEST(NativeRestoreBytes, BumpAndMarkGoTogether) {
  EXPECT_NO_THROW(check_revision_bump(0, false));
  EXPECT_NO_THROW(check_revision_bump(1000000000, true));
  EXPECT_THROW(check_revision_bump(1000, false), Error);
  EXPECT_THROW(check_revision_bump(0, true), Error);
}

using Reason = RevisionBump::Reason;

TEST(KubernetesRevisionBump, DefaultBumpsOnlyAKubernetesKeyspaceAndFlagsWin) {
  RestoreMethod untold;
  // Nothing said: a Kubernetes keyspace moves by 10^9 and is marked compacted; any other is kept.
  RevisionBump k = decide_revision_bump(untold, true);
  EXPECT_EQ(k.by, 1000000000u);
  EXPECT_TRUE(k.mark_compacted);
  EXPECT_EQ(k.reason, Reason::kKubernetes);
  EXPECT_EQ(k.reason_name(), "kubernetes-keys");
  EXPECT_NE(k.explanation().find("/registry/"), std::string::npos) << k.explanation();
  EXPECT_NE(k.explanation().find("--keep-revision"), std::string::npos) << k.explanation();
  RevisionBump plain = decide_revision_bump(untold, false);
  EXPECT_EQ(plain.by, 0u);
  EXPECT_FALSE(plain.mark_compacted);
  EXPECT_EQ(plain.reason_name(), "none");
  EXPECT_TRUE(needs_kubernetes_check(untold));

  // --bump-revision N --mark-compacted: N for any keyspace, and the db need not be read.
  RestoreMethod asked;
  asked.bump_revision = 1000;
  asked.mark_compacted = true;
  EXPECT_FALSE(needs_kubernetes_check(asked));
  for (bool holds : {false, true}) {
    RevisionBump a = decide_revision_bump(asked, holds);
    EXPECT_EQ(a.by, 1000u);
    EXPECT_TRUE(a.mark_compacted);
    EXPECT_EQ(a.reason_name(), "asked");
  }

  // --keep-revision: a Kubernetes keyspace kept, and said so; it excludes the bump flags.
  RestoreMethod keep;
  keep.keep_revision = true;
  RevisionBump kept = decide_revision_bump(keep, true);
  EXPECT_EQ(kept.by, 0u);
  EXPECT_EQ(kept.reason, Reason::kKept);
  EXPECT_EQ(decide_revision_bump(keep, false).reason, Reason::kNone);
  EXPECT_NO_THROW(check_revision_flags(keep));
  keep.bump_revision = 5;
  keep.mark_compacted = true;
  EXPECT_THROW(check_revision_flags(keep), Error);

  // The rule off (a drill; an older controller plan): nothing read, nothing moved.
  RestoreMethod off;
  off.kubernetes_bump = 0;
  EXPECT_FALSE(needs_kubernetes_check(off));
  EXPECT_EQ(decide_revision_bump(off, true).by, 0u);
  // A plan's own amount is what every host uses.
  RestoreMethod planned;
  planned.kubernetes_bump = 4242;
  EXPECT_EQ(decide_revision_bump(planned, true).by, 4242u);
}

TEST(KubernetesRevisionBump, SizedFromTheLogsWriteRate) {
  // Ten times the rate over the unaccounted time, at least 10,000.
  EXPECT_EQ(sized_revision_bump(0, 3600), 10000u);
  EXPECT_EQ(sized_revision_bump(234.5, 10), 23450u);
  EXPECT_EQ(sized_revision_bump(1000, 3600), 36000000u);
  EXPECT_EQ(sized_revision_bump(1000, -5), 10000u) << "a clock behind: one second";
  EXPECT_EQ(sized_revision_bump(1e300, 1e9), static_cast<uint64_t>(INT64_MAX / 4)) << "capped";
  // The rate: the faster of the whole span and the last minute.
  // Snapshot at revision 1000, taken at t=0; 100 rev/s for 100 s, then 1000 rev/s in the last minute.
  std::vector<LogRateSample> ends = {{6000, 50000}, {11000, 100000}, {41000, 130000}, {71000, 160000}};
  EXPECT_DOUBLE_EQ(log_write_rate(1000, 1, ends), 1000.0);  // (71000 - 11000) / 60 s
  EXPECT_NEAR(log_write_rate(1000, 1, {{11000, 100000}}), 100.0, 0.01) << "one segment: the whole span";
  EXPECT_EQ(log_write_rate(1000, 0, {{11000, 100000}}), 0.0) << "no time for the snapshot, no older segment";
  EXPECT_EQ(log_write_rate(1000, 1, {}), 0.0);
}

TEST(KubernetesRevisionBump, KubernetesKeysAreFoundInARealSnapshot) {
  // small.db (test/data/snapshots/README.md): 100 /flat/ keys first, then /registry/ ones, and
  // /flat/key091..100 deleted.
  const std::string small = std::string(ETCDADM_SOURCE_DIR) + "/test/data/snapshots/small.db";
  const uint64_t db_bytes = 69632;  // the file less its 32-byte SHA-256 trailer
  EXPECT_TRUE(holds_kubernetes_keys(small, db_bytes));
  auto db = BoltReader::open(small, db_bytes);
  EXPECT_TRUE(holds_key_with_prefix(*db, "/registry/services/kube-system/"));
  EXPECT_TRUE(holds_key_with_prefix(*db, "/leased/key"));
  EXPECT_TRUE(holds_key_with_prefix(*db, "/flat/key100"));  // deleted, but it was there
  EXPECT_FALSE(holds_key_with_prefix(*db, "/registry/configmaps/"));
  EXPECT_FALSE(holds_key_with_prefix(*db, "/registryx"));
  EXPECT_FALSE(holds_key_with_prefix(*db, "registry/"));
  EXPECT_THROW(holds_kubernetes_keys(std::string(ETCDADM_SOURCE_DIR) + "/test/data/snapshots/README.md", 0), Error);
}

}  // namespace
}  // namespace etcdadm
