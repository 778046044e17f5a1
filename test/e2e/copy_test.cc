// `backup copy` between two local stores, end to end: every backup arrives with the same bytes (its
// data file's SHA-256 equal to the source's and to the recorded digest), a second run copies
// nothing, a copy killed (SIGKILL) at each point of its write order lists nothing half copied and
// a re-run completes it, and a damaged source backup is refused, marked, and does not stop the
// others. The cross-backend hops (local -> S3 -> GCS -> local) are in copy_store_test.cc.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fs.h"
#include "common/sha256.h"
#include "store/layout.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {

namespace {

class Copy : public CliTest {
 protected:
  // Three backups of a member with some data.
  std::vector<std::string> three_backups() {
    auto& m = start_member();
    EtcdClient client(m.connection());
    std::vector<std::string> names;
    for (int i = 0; i < 3; ++i) {
      load_keys(client, "/copy/" + std::to_string(i) + "-", 30, 300, 11 + i);
      names.push_back(save(m)["backup"]);
    }
    return names;
  }

  static std::string sha256_of_file(const std::string& path) {
    Sha256 h;
    std::string bytes = read_file(path);
    h.update(bytes.data(), bytes.size());
    return to_hex(h.finish());
  }

  // The backups `store` lists (etcdadm's view: what a reader would take as whole).
  std::vector<std::string> listed(const std::string& store) {
    std::vector<std::string> out;
    for (const auto& b : cli_json({"backup", "list", "--store", store, "-o", "json"})) out.push_back(b["backup"]);
    std::sort(out.begin(), out.end());
    return out;
  }

  // Every listed backup of `target` has the source's data file, byte for byte, and its metadata.
  void expect_same_backups(const std::string& target, const std::vector<std::string>& names) {
    for (const auto& name : names) {
      auto meta = nlohmann::json::parse(read_file(store_ + "/" + name + "/" + kBackupMetaFile));
      const std::string data = "/" + name + "/" + meta["dataFile"].get<std::string>();
      EXPECT_EQ(sha256_of_file(target + data), meta["storedSha256"]) << name;
      EXPECT_EQ(sha256_of_file(target + data), sha256_of_file(store_ + data)) << name;
      EXPECT_EQ(read_file(target + "/" + name + "/" + kBackupMetaFile), read_file(store_ + "/" + name + "/" + kBackupMetaFile));
      // etcd-manager's file only where the source has one (never for 3.7: etcd-manager cannot restore it).
      const std::string em = "/" + name + "/" + kEtcdManagerMetaFile;
      EXPECT_EQ(path_exists(target + em), path_exists(store_ + em)) << name;
      if (path_exists(store_ + em)) {
        EXPECT_EQ(read_file(target + em), read_file(store_ + em));
      }
    }
  }
};

TEST_F(Copy, AllBackupsArriveIntactAndASecondRunCopiesNothing) {
  auto names = three_backups();
  std::sort(names.begin(), names.end());
  std::string target = dir_ / "second";
  auto r = cli_json({"backup", "copy", "--all", "--from", store_, "--to", target, "-o", "json"});
  ASSERT_EQ(r["backups"].size(), 3u) << r.dump(2);
  for (const auto& b : r["backups"]) EXPECT_EQ(b["copied"], true);
  EXPECT_EQ(listed(target), names);
  expect_same_backups(target, names);
  // The target got the source's marker (same settings); a restore from it works.
  EXPECT_EQ(read_file(target + "/" + kStoreMarkerFile), read_file(store_ + "/" + kStoreMarkerFile));
  auto verified = cli({"backup", "verify", "latest", "--store", target});
  EXPECT_EQ(verified.exit_code, 0) << verified.output;

  auto again = cli_json({"backup", "copy", "--all", "--from", store_, "--to", target, "-o", "json"});
  for (const auto& b : again["backups"]) EXPECT_EQ(b["copied"], false) << again.dump(2);
  EXPECT_EQ(again["bytes"], 0);
  // One backup by name, and --since.
  std::string third = dir_ / "third";
  auto one = cli_json({"backup", "copy", names[1], "--from", store_, "--to", third, "-o", "json"});
  ASSERT_EQ(one["backups"].size(), 1u);
  EXPECT_EQ(listed(third), std::vector<std::string>{names[1]});
  std::string taken_last;
  for (const auto& b : cli_json({"backup", "list", "--store", store_, "-o", "json"})) {
    if (b["backup"] == names[2]) taken_last = b["takenAt"];
  }
  std::string fourth = dir_ / "fourth";
  cli_json({"backup", "copy", "--since", taken_last, "--from", store_, "--to", fourth, "-o", "json"});
  EXPECT_EQ(listed(fourth), std::vector<std::string>{names[2]});
  auto bad = cli({"backup", "copy", "--all", "latest", "--from", store_, "--to", third});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  auto same = cli({"backup", "copy", "--all", "--from", store_, "--to", store_});
  EXPECT_EQ(same.exit_code, 2) << same.output;
}

// SIGKILL at each point of the write order: before the data file is committed, after it, and
// after our metadata (before etcd-manager's). Whatever a reader lists is whole (it verifies), what
// etcd-manager lists is whole too (its file comes last), and the next run completes the copy.
TEST_F(Copy, KilledAtEachPointListsNothingHalfCopiedAndARerunCompletes) {
  auto names = three_backups();
  std::sort(names.begin(), names.end());
  int n = 0;
  for (const char* point : {"copy/data/written", "copy/data/committed", "copy/meta/written"}) {
    std::string target = dir_ / ("killed-" + std::to_string(++n));
    RunOptions kill;
    kill.env["ETCDADM_FAILPOINTS"] = point;
    auto r = cli({"backup", "copy", "--all", "--from", store_, "--to", target}, kill);
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << point << ": " << r.output;
    // The first backup was being copied. Before our metadata nothing is listed; after it, the
    // backup is whole for etcdadm (data committed and verified first), and etcd-manager, whose
    // file is the last one written, does not see it yet.
    auto seen = listed(target);
    if (std::string(point) == "copy/meta/written") {
      EXPECT_EQ(seen, std::vector<std::string>{names[0]}) << point;
      auto verified = cli({"backup", "verify", names[0], "--store", target});
      EXPECT_EQ(verified.exit_code, 0) << point << ": " << verified.output;
    } else {
      EXPECT_TRUE(seen.empty()) << point;
    }
    EXPECT_FALSE(path_exists(target + "/" + names[0] + "/" + kEtcdManagerMetaFile)) << point;
    auto rerun = cli_json({"backup", "copy", "--all", "--from", store_, "--to", target, "-o", "json"});
    EXPECT_EQ(listed(target), names) << point;
    expect_same_backups(target, names);
    // Besides the backups' own files, at most the killed run's temp file, which no reader lists
    // and a day later the next save or copy removes.
    for (const auto& e : std::filesystem::recursive_directory_iterator(target)) {
      if (!e.is_regular_file()) continue;
      const std::string file = e.path().filename().string();
      EXPECT_TRUE(file == kStoreMarkerFile || file == kBackupMetaFile || file == kEtcdManagerMetaFile ||
                  file.rfind("etcd.backup", 0) == 0 || (file[0] == '.' && file.find(".tmp-") != std::string::npos))
          << point << ": " << e.path();
    }
  }
}

TEST_F(Copy, ADamagedSourceIsRefusedMarkedAndTheOthersAreCopied) {
  auto names = three_backups();
  std::sort(names.begin(), names.end());
  auto meta = nlohmann::json::parse(read_file(store_ + "/" + names[1] + "/" + kBackupMetaFile));
  std::string data = store_ + "/" + names[1] + "/" + meta["dataFile"].get<std::string>();
  std::string bytes = read_file(data);
  bytes[bytes.size() / 3] ^= 0x01;
  write_file_atomic(data, bytes, 0600);

  std::string target = dir_ / "second";
  auto r = cli({"backup", "copy", "--all", "--from", store_, "--to", target});
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find(names[1]), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not match its recorded SHA-256"), std::string::npos) << r.output;
  EXPECT_EQ(listed(target), (std::vector<std::string>{names[0], names[2]}));
  EXPECT_FALSE(path_exists(target + "/" + names[1]));  // not even its data file
  expect_same_backups(target, {names[0], names[2]});
  auto source = cli_json({"backup", "list", "--store", store_, "-o", "json"});
  for (const auto& b : source) EXPECT_EQ(b["status"] == "damaged", b["backup"] == names[1]) << b.dump(2);
}

}  // namespace

}  // namespace etcdadm::test
