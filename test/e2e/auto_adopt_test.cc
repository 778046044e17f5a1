// `etcdadm auto adopt` (controller/adopt.h): a cluster made by hand with etcdadm init/join is handed
// to the controllers of a store in place, refused until it can be, and left to the CLI again when
// the controllers stop.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fs.h"
#include "common/subprocess.h"
#include "test/support/auto_fixture.h"
#include "test/support/writer.h"

namespace etcdadm::test {
namespace {

using namespace std::chrono_literals;

class AutoAdopt : public AutoFixture {
 protected:
  // etcdadm `args` with the flags `etcdadm auto` runs host `h` with: the CLI's member and the
  // controller's are one.
  ProcessResult with_auto_flags(std::vector<std::string> args, const Host& h) {
    auto f = auto_flags(h);
    args.insert(args.end(), f.begin(), f.end());
    return etcdadm(args);
  }
  ProcessResult adopt(std::vector<std::string> extra = {}, const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> args = {"auto", "adopt", "--certs-dir", hosts_[0].certs()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--store", store_});
    RunOptions ro;
    ro.env = env;
    return etcdadm(args, ro);
  }
  std::string etcd_pid(const Host& h) { return read_file(h.conf() + "/etcd.pid"); }
  bool registered(std::initializer_list<const char*> names) {
    auto records = host_records();
    for (const char* n : names) {
      if (std::none_of(records.begin(), records.end(), [&](const HostRecord& r) {
            return r.name == n && (r.data != DataState::kMember || r.etcd_running);
          }))
        return false;
    }
    return true;
  }
  bool nothing_written() const {
    return !path_exists(store_ + "/" + kAutoPlanKey) && !path_exists(store_ + "/control/etcd-cluster-created");
  }
};

// Three members made by `init` and `join`, a client writing through them all the while. Refused
// while a member's host runs no controller, then while a host holds another CA (all reasons named,
// nothing written); adopted once they are dealt with, killed once between the plan and the marker
// (a controller of the adopted cluster writes the marker; adopt again says it is done). No member
// restarted, no write failed; the controllers then keep the cluster (a killed etcd started again);
// stopped, they leave every host to the CLI (a member reset and joined again by hand).
TEST_F(AutoAdopt, AHandMadeClusterIsTakenOverInPlaceOnlyWhenReadyAndLeftToTheCliWhenTheControllersStop) {
  auto made = with_auto_flags({"init"}, hosts_[0]);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  for (size_t i : {1, 2}) {
    copy_ca(hosts_[0], hosts_[i]);
    made = with_auto_flags({"join", hosts_[0].client_url()}, hosts_[i]);
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  std::vector<const Host*> members = {&hosts_[0], &hosts_[1], &hosts_[2]};
  Writer writer(connection(members));
  std::map<std::string, std::string> pids;
  for (const auto* h : members) pids[h->name] = etcd_pid(*h);

  // m3's host runs no controller yet.
  start_auto(hosts_[0]);
  start_auto(hosts_[1]);
  ASSERT_TRUE(eventually(30s, [&] { return registered({"m1", "m2"}); }, "m1 and m2 registered"));
  auto r = adopt();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot be adopted yet"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("member m3 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("has no host running etcdadm auto on this store"), std::string::npos) << r.output;
  EXPECT_TRUE(nothing_written());

  // A fourth host whose controller holds a CA of its own.
  ASSERT_NO_FATAL_FAILURE(add_host());
  std::filesystem::remove_all(hosts_[3].certs());
  made = with_auto_flags({"init", "phase", "certificates"}, hosts_[3]);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  start_auto(hosts_[2]);
  start_auto(hosts_[3]);
  ASSERT_TRUE(eventually(30s, [&] { return registered({"m1", "m2", "m3", "m4"}); }, "every host registered"));
  r = adopt();
  EXPECT_NE(r.exit_code, 0) << r.output;
  // Its record is signed with its own CA's key: not taken, and named.
  EXPECT_NE(r.output.find("etcdadm-auto/hosts/m4.json carries an authenticator that none of this host's CA keys "
                          "verifies"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("member m3 ("), std::string::npos) << r.output;
  EXPECT_TRUE(nothing_written());
  autos_["m4"].stop(5000ms);
  std::filesystem::remove(store_ + "/" + host_record_key("m4"));

  // A spec in the store that seed did not sign (etcd-manager-ctl's, or any store writer's): the
  // controllers would not obey it, so it is not adopted with the cluster.
  std::filesystem::create_directories(store_ + "/control");
  write_file_atomic(store_ + "/control/etcd-cluster-spec",
                    R"({"memberCount": 5, "etcdVersion": ")" + release_.version + R"("})", 0644);
  r = adopt();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the store's spec is not one the controllers obey: control/etcd-cluster-spec (5 members"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(nothing_written());
  std::filesystem::remove(store_ + "/control/etcd-cluster-spec");

  r = adopt({"--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Would adopt cluster"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("spec: 3 members of etcd " + release_.version + " (would be written from the running cluster)"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(nothing_written());

  // Killed between the plan and the marker: a controller of the adopted cluster writes it.
  r = adopt({}, {{"ETCDADM_FAILPOINTS", "auto/adopt/planned=kill"}});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(path_exists(store_ + "/" + kAutoPlanKey));
  ASSERT_TRUE(eventually(30s, [&] { return !done("mark-created").empty(); }, "the marker written by a controller"))
      << logs();
  r = adopt({"-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto answer = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_TRUE(answer["alreadyAdopted"].get<bool>()) << r.output;
  EXPECT_EQ(answer["members"].size(), 3u) << r.output;
  EXPECT_EQ(answer["spec"]["memberCount"], 3) << r.output;
  EXPECT_EQ(answer["spec"]["etcdVersion"], release_.version) << r.output;

  // The controllers run it: the acting one finds it as the spec says, the others leave it to it.
  ASSERT_TRUE(eventually(30s, [&] {
    auto records = host_records();
    return records.size() == 3 && std::all_of(records.begin(), records.end(), [](const HostRecord& h) {
             return h.waiting_for.find("healthy voters, as the spec asks") != std::string::npos ||
                    h.waiting_for.find("the leader's controller acts") != std::string::npos;
           });
  }, "the controllers running the adopted cluster")) << logs();
  writer.stop();
  for (const auto* h : members) EXPECT_EQ(etcd_pid(*h), pids[h->name]) << h->name << " was restarted\n" << logs();
  std::cout << "writes while adopted: " << writer.writes() << ", longest gap " << writer.longest_outage().count()
            << " ms\n";
  EXPECT_GT(writer.writes(), 20);  // adopted within a few seconds: 139 writes here
  EXPECT_EQ(writer.last_error(), "") << "a write failed";
  EXPECT_LT(writer.longest_outage(), 1000ms);

  // Kept: m3's etcd killed -9 is started again by its controller.
  ASSERT_EQ(::kill(std::stoi(pids["m3"]), SIGKILL), 0);
  ASSERT_TRUE(eventually(30s, [&] {
    const std::string now = path_exists(hosts_[2].conf() + "/etcd.pid") ? etcd_pid(hosts_[2]) : "";
    return !now.empty() && now != pids["m3"] && one_healthy_cluster(3);
  }, "m3 started again by its controller")) << logs();

  // The way back: the controllers stopped, the CLI resets m3 and joins it again.
  for (const auto* h : members) autos_[h->name].stop(5000ms);
  auto gone = reset(hosts_[2]);
  ASSERT_EQ(gone.exit_code, 0) << gone.output;
  copy_ca(hosts_[0], hosts_[2]);
  made = with_auto_flags({"join", hosts_[0].client_url()}, hosts_[2]);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  EXPECT_TRUE(eventually(30s, [&] { return one_healthy_cluster(3); }, "m3 a member again"));
}

}  // namespace
}  // namespace etcdadm::test
