// render/ without the binary: `backup list -o json`, written record by record, is byte for byte
// the whole array dumped at once (what docs/json.md pins), and the attempt table keeps its columns.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "render/backup_list.h"
#include "render/backup_record.h"
#include "render/change_log.h"

namespace etcdadm {
namespace {

constexpr int64_t kTaken = 1'700'000'000'000'000;  // 2023-11-14T22:13:20Z

BackupRecord backup(int i) {
  BackupRecord r;
  r.name = "2023-11-14T22:13:2" + std::to_string(i) + "Z-000000";
  r.taken_at_micros = kTaken + i * 1'000'000;
  r.format = "etcdadm";
  r.stored_size = 768 + i;
  r.db_size = 20480;
  r.revision = 5 + i;
  r.etcd_version = "3.4.23";
  r.source = "snapshot\nwith a newline";  // escaped by dump: no line of the document breaks there
  return r;
}

TEST(Render, TheBackupListWrittenRecordByRecordIsTheWholeArrayDumped) {
  for (int n : {0, 1, 3}) {
    std::vector<BackupRecord> backups;
    for (int i = 0; i < n; ++i) backups.push_back(backup(i));
    std::map<std::string, LogWindow> windows;
    if (n > 0) windows[backups[0].name].chain.reaches = 42;
    nlohmann::json whole = nlohmann::json::array();
    for (const auto& b : backups) {
      auto j = render::backup_record_json(b);
      j["changeLog"] = render::log_window_json(windows, b.name);
      whole.push_back(j);
    }
    std::ostringstream os;
    render::write_backup_list_json(os, backups, windows);
    EXPECT_EQ(os.str(), whole.dump(2) + "\n") << n << " backups";
  }
}

TEST(Render, TheAttemptTableKeepsItsColumns) {
  AttemptRecord ok;
  ok.started_micros = kTaken;
  ok.finished_micros = kTaken + 1'500'000;
  ok.result = "success";
  ok.origin = "cron";
  ok.backup_name = "b1";
  AttemptRecord failed;
  failed.started_micros = kTaken;
  failed.finished_micros = kTaken + 250'000;
  failed.result = "failure";
  failed.reason = "unreachable";
  failed.message = "no member answered";
  EXPECT_EQ(render::attempt_list_text({ok, failed}),
            "STARTED               SECONDS   BY        RESULT    BACKUP / REASON\n"
            "2023-11-14T22:13:20Z  1.50      cron      success   b1\n"
            "2023-11-14T22:13:20Z  0.25      -         failure   unreachable: no member answered\n");
  EXPECT_EQ(render::attempt_list_text({}), "no backup attempts recorded on this host\n");
}

}  // namespace
}  // namespace etcdadm
