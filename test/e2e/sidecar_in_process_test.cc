// The sidecar built from its library, in the test's own process (no binary, no flags): the loop of
// sidecar/sidecar.h with the checks `etcdadm backup sidecar` wires into it (sidecar/checks.h),
// against a real member. What the binary's tests (sidecar_test.cc) see from outside, these see from
// the stores: the schedule's first tick, verify, retention, the second store and the drills.
#include <gtest/gtest.h>

#include <thread>

#include "backup/retention.h"
#include "common/environment.h"
#include "common/timefmt.h"
#include "etcd/client.h"
#include "sidecar/checks.h"
#include "sidecar/sidecar.h"
#include "store/catalog.h"
#include "store/layout.h"
#include "store/store_url.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class SidecarInProcess : public CliTest {
 protected:
  // The sidecar's loop on a thread of its own, stopped and joined when the test ends.
  class Running {
   public:
    Running(EtcdClient& client, BlobStore& store, Catalog& catalog, SidecarOptions options)
        : sidecar(client, store, &catalog, std::move(options)), loop_([this] { sidecar.run(); }) {}
    ~Running() {
      sidecar.stop();
      loop_.join();
    }
    // The value of one line of the metrics ("etcdadm_backup_attempts_total{result=\"success\"}").
    double metric(const std::string& series) {
      std::string text = sidecar.metrics_text();
      size_t at = text.find("\n" + series + " ");
      return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
    }
    // Waits until `series` reaches `value`; false after `timeout`.
    bool wait_for(const std::string& series, double value, std::chrono::seconds timeout = 60s) {
      auto until = std::chrono::steady_clock::now() + timeout;
      while (metric(series) < value) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(50ms);
      }
      return true;
    }
    Sidecar sidecar;

   private:
    std::thread loop_;
  };

  SidecarOptions options_for(const EtcdMember& m, const std::string& schedule) {
    SidecarOptions o;
    o.schedule = Schedule::parse(schedule);
    o.member_endpoint = m.client_url();
    o.shutdown_grace = 60s;
    return o;
  }

  static std::vector<std::string> names_in(BlobStore& store) {
    std::vector<std::string> out;
    for (const auto& b : scan_backups(store)) out.push_back(b.name);
    return out;
  }

  static constexpr const char* kSuccesses = "etcdadm_backup_attempts_total{result=\"success\"}";
};

// Each backup is read back (verify_after_backup), this store keeps its newest two (--retention),
// and the second store gets every new backup and keeps its newest one (--copy-to,
// --copy-retention): after three triggered backups, exactly those are left where they belong.
TEST_F(SidecarInProcess, EachBackupIsVerifiedRetainedAndCopiedToTheSecondStoreUnderItsOwnRetention) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 200, 300);
  auto store = open_store(dir_ / "primary");
  auto second = open_store(dir_ / "second");
  Catalog catalog(dir_ / "catalog.db");
  SidecarOptions o = options_for(m, "@every 1h");  // no backup yet: the first tick is at once
  Environment env = Environment::from_process();
  o.retention = parse_retention_policy("count:2", env);
  std::vector<std::string> verified;
  auto verify = verify_after_backup(BackupStore(*store), catalog);
  o.verify = [&](const std::string& name) {
    verify(name);
    verified.push_back(name);
  };
  o.copy_to = second->url();
  o.copy_store = second.get();
  o.copy = copy_new_backups_to(BackupStore(*store), catalog, *second);
  o.copy_retention = parse_retention_policy("count:1", env);
  {
    Running running(client, *store, catalog, o);
    ASSERT_TRUE(running.wait_for(kSuccesses, 1));
    for (int n = 2; n <= 3; ++n) {
      running.sidecar.trigger("test");
      ASSERT_TRUE(running.wait_for(kSuccesses, n));
    }
  }  // stop() lets the last tick's copy and retention finish
  ASSERT_EQ(verified.size(), 3u);
  EXPECT_EQ(names_in(*store), (std::vector<std::string>{verified[1], verified[2]}));
  EXPECT_EQ(names_in(*second), (std::vector<std::string>{verified[2]}));
  // A damaged backup would have failed verify: these are all intact and unmarked.
  for (const auto& b : scan_backups(*store)) EXPECT_FALSE(b.has_damage_marker) << b.name;
}

// The next tick comes from the newest backup in the store, not from the sidecar's start: a sidecar
// started just after a backup takes its first one a whole period after that backup.
TEST_F(SidecarInProcess, TheFirstScheduledBackupComesAPeriodAfterTheNewestInTheStore) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 20, 100);
  auto store = open_store(dir_ / "primary");
  Catalog catalog(dir_ / "catalog.db");
  auto saved = cli({"backup", "save", "--endpoints", m.client_url(), "--store", dir_ / "primary"});
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  std::vector<std::string> before = names_in(*store);
  ASSERT_EQ(before.size(), 1u);
  {
    Running running(client, *store, catalog, options_for(m, "@every 3s"));
    ASSERT_TRUE(running.wait_for(kSuccesses, 1, 30s));
  }
  std::vector<std::string> after = names_in(*store);
  ASSERT_EQ(after.size(), 2u);
  auto first = parse_backup_name(after[0]), next = parse_backup_name(after[1]);
  ASSERT_TRUE(first && next);
  EXPECT_GE(next->time - first->time, 2900ms) << after[0] << " then " << after[1] << ": a tick at start";
}

// --drill-schedule: the sidecar drills the newest intact backup with restore/drill.h (a private
// etcd on a restored data dir) and records the result in the store, where `backup list` shows it.
TEST_F(SidecarInProcess, ADrillOnScheduleRestoresTheNewestBackupAndRecordsItInTheStore) {
  auto& m = start_member();
  EtcdClient client(m.connection());
  load_keys(client, "/registry/pods/", 50, 200);
  auto store = open_store(dir_ / "primary");
  Catalog catalog(dir_ / "catalog.db");
  SidecarOptions o = options_for(m, "@every 1h");
  o.drill_schedule = Schedule::parse("@every 1s");
  DrillOptions drill;
  drill.scratch_parent = dir_ / "scratch";
  make_dirs(drill.scratch_parent);
  o.drill = drill_backup(BackupStore(*store), catalog, drill);
  {
    Running running(client, *store, catalog, o);
    ASSERT_TRUE(running.wait_for(kSuccesses, 1));
    ASSERT_TRUE(running.wait_for("etcdadm_drill_attempts_total{result=\"success\"}", 1, 180s))
        << running.sidecar.metrics_text();
    EXPECT_EQ(running.metric("etcdadm_drill_last_success"), 1);
  }
  auto listed = scan_backups(*store);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_GT(listed[0].drill_modified_micros, 0) << "no drill result in the store";
  auto list = cli_json({"backup", "list", "-o", "json", "--store", dir_ / "primary"});
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["lastDrill"]["result"], "passed") << list[0].dump(2);
}

}  // namespace
}  // namespace etcdadm::test
