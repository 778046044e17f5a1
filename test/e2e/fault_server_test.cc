// A member that misbehaves mid-snapshot, played by an in-process gRPC server speaking etcd's
// Maintenance API: it stalls, breaks the stream, or sends a snapshot whose digest is wrong.
// In every case the save fails with a clear error and no backup appears in the store.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/sha256.h"
#include "test/support/cli_fixture.h"

namespace etcdadm::test {

namespace {

enum class Fault { kStall, kBreak, kBadDigest, kNone };

class FaultyMaintenance final : public etcdserverpb::Maintenance::Service {
 public:
  explicit FaultyMaintenance(Fault f) : fault_(f) {}
  grpc::Status Status(grpc::ServerContext*, const etcdserverpb::StatusRequest*, etcdserverpb::StatusResponse* r) override {
    r->mutable_header()->set_member_id(7);
    r->mutable_header()->set_cluster_id(9);
    r->mutable_header()->set_revision(5);
    r->set_leader(7);
    r->set_version("3.4.99");
    r->set_raftindex(10);
    return grpc::Status::OK;
  }
  grpc::Status Snapshot(grpc::ServerContext* ctx, const etcdserverpb::SnapshotRequest*,
                        grpc::ServerWriter<etcdserverpb::SnapshotResponse>* w) override {
    // A 1 MiB "db" with bbolt's magic where a reader expects it, then the SHA-256 trailer.
    std::string db(1 << 20, 'd');
    const unsigned char magic[4] = {0xed, 0xda, 0x0c, 0xed};
    std::memcpy(&db[16], magic, 4);
    auto digest = sha256_of(db.data(), db.size());
    std::string snap = db + std::string(reinterpret_cast<const char*>(digest.data()), 32);
    if (fault_ == Fault::kBadDigest) snap[snap.size() - 1] ^= 1;
    size_t sent = 0;
    while (sent < snap.size()) {
      if (sent >= snap.size() / 2 && fault_ == Fault::kStall) {
        for (int i = 0; i < 100 && !ctx->IsCancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return grpc::Status::CANCELLED;
      }
      if (sent >= snap.size() / 2 && fault_ == Fault::kBreak) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: member stopped");
      }
      size_t n = std::min<size_t>(32 * 1024, snap.size() - sent);
      etcdserverpb::SnapshotResponse resp;
      resp.set_blob(snap.substr(sent, n));
      sent += n;
      resp.set_remaining_bytes(snap.size() - sent);
      if (!w->Write(resp)) return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }

 private:
  Fault fault_;
};

class FaultServer {
 public:
  explicit FaultServer(Fault f) : service_(f) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
  }
  ~FaultServer() { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  FaultyMaintenance service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

class FaultyMember : public CliTest {
 protected:
  ProcessResult save_from(const FaultServer& s) {
    return cli({"backup", "save", "--store", store_, "--endpoints", s.endpoint(), "--stall-timeout", "1s"});
  }
  // The save from a member with `fault` fails with `exit_code` and `message`, leaving nothing behind.
  void expect_failed_save(Fault fault, int exit_code, const std::string& message) {
    FaultServer s(fault);
    auto r = save_from(s);
    EXPECT_EQ(r.exit_code, exit_code) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    expect_no_backup();
  }
  void expect_no_backup() {
    auto listed = cli_json({"backup", "list", "--store", store_, "-o", "json"});
    EXPECT_EQ(listed.size(), 0u);
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(store_, ec)) {
      EXPECT_TRUE(e.path().filename() == "etcdadm-store.json") << "left behind: " << e.path();
    }
  }
};

}  // namespace

TEST_F(FaultyMember, ControlServerProducesAGoodBackup) {
  // Proves the fake server itself is a valid member, so the failures below are the faults.
  FaultServer s(Fault::kNone);
  auto r = save_from(s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(cli_json({"backup", "list", "--store", store_, "-o", "json"}).size(), 1u);
}

TEST_F(FaultyMember, StallsMidSnapshot) { expect_failed_save(Fault::kStall, 6, "stalled"); }

TEST_F(FaultyMember, BreaksTheStream) { expect_failed_save(Fault::kBreak, 6, "member stopped"); }

TEST_F(FaultyMember, SendsAWrongDigest) { expect_failed_save(Fault::kBadDigest, 5, "SHA-256"); }

}  // namespace etcdadm::test
