// A backup found damaged is remembered (a marker in the store, the catalog), shown in `backup list`,
// skipped by `latest` with a warning naming it, and the failure names the next intact candidate with
// the exact command for it. A verification that passes again clears the record.
#include <gtest/gtest.h>

#include "common/fs.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

class Damage : public CliTest {};

TEST_F(Damage, LatestSkipsARecordedDamagedBackupAndTheErrorNamesTheNext) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 200, 500, 3);
  std::string older = save(m)["backup"];
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // names have one-second resolution
  client.put("/registry/pods/newer", "x");
  std::string newest = save(m)["backup"];
  std::string data = store_ + "/" + newest + "/etcd.backup.gz";
  std::string good = read_file(data);
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x20;
  write_file_atomic(data, bad);

  // The failure says what to do next, as a command that works as printed.
  std::string out = dir_ / "snap.db";
  auto r = cli({"backup", "restore", "latest", "--store", store_, "--output", out});
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_FALSE(path_exists(out));
  std::string expected = "etcdadm backup restore " + older + " --store " + store_ + " --output " + out;
  EXPECT_NE(r.output.find("The next candidate is " + older), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  EXPECT_TRUE(path_exists(store_ + "/" + newest + "/etcdadm-damage.json")) << "the store records the damage";

  // Listed as damaged, in the table and in JSON.
  auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0]["backup"], newest);
  EXPECT_EQ(listed[0]["status"], "damaged");
  EXPECT_NE(listed[0]["damaged"]["reason"].get<std::string>().find("SHA-256"), std::string::npos) << listed[0];
  EXPECT_TRUE(listed[0]["damaged"]["inStore"].get<bool>());
  EXPECT_TRUE(listed[1]["damaged"].is_null());
  auto table = cli({"backup", "list", "--store", store_});
  EXPECT_NE(table.output.find("DAMAGED"), std::string::npos) << table.output;

  // Another host (a fresh catalog) sees the store's marker: `latest` is the older backup, and the
  // skip is said, never silent.
  RunOptions other_host;
  other_host.env["ETCDADM_CATALOG"] = dir_ / "other-host.db";
  auto again = run_etcdadm({"backup", "restore", "latest", "--store", store_, "--output", out}, dir_ / "other-host.db",
                           other_host);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("latest: skipping backup " + newest), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("Fetched backup " + older), std::string::npos) << again.output;
  ::unlink(out.c_str());
  // The printed command works as printed.
  auto printed = run_process({"sh", "-c", expected.replace(0, 7, ETCDADM_BIN)}, [&] {
    RunOptions ro;
    ro.env["ETCDADM_CATALOG"] = dir_ / "catalog.db";
    return ro;
  }());
  EXPECT_EQ(printed.exit_code, 0) << printed.output;
  EXPECT_TRUE(path_exists(out));

  // Repaired (say, copied back from a second store): a full verification clears the record.
  write_file_atomic(data, good);
  auto verified = cli({"backup", "verify", newest, "--store", store_});
  EXPECT_EQ(verified.exit_code, 0) << verified.output;
  EXPECT_FALSE(path_exists(store_ + "/" + newest + "/etcdadm-damage.json"));
  auto relisted = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  EXPECT_TRUE(relisted[0]["damaged"].is_null()) << relisted[0];
  auto latest = cli({"backup", "restore", "latest", "--store", store_, "--output", dir_ / "latest.db"});
  EXPECT_EQ(latest.exit_code, 0) << latest.output;
  EXPECT_NE(latest.output.find("Fetched backup " + newest), std::string::npos) << latest.output;
}

}  // namespace
}  // namespace etcdadm::test
