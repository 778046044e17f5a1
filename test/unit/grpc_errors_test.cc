// Tests of etcd/grpc_errors.{h,cc}: etcd's refusals named, and errors from gRPC saying what they
// mean.
#include "etcd/grpc_errors.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace etcdadm {
namespace {

// etcd's own error strings (api/v3rpc/rpctypes/error.go, the same in 3.4-3.7), as gRPC carries
// them, and as a member lists them in StatusResponse.errors.
TEST(EtcdRefusal, EtcdsErrorStringsAreNamedAndOthersAreNot) {
  EXPECT_EQ(etcd_refusal("etcdserver: no leader"), EtcdRefusal::kNoLeader);
  EXPECT_EQ(etcd_refusal("etcdserver: leader changed"), EtcdRefusal::kLeaderChanged);
  EXPECT_EQ(etcd_refusal("etcdserver: invalid auth token"), EtcdRefusal::kInvalidAuthToken);
  EXPECT_EQ(etcd_refusal("etcdserver: user name is empty"), EtcdRefusal::kUserNameEmpty);
  EXPECT_EQ(etcd_refusal("etcdserver: permission denied"), EtcdRefusal::kPermissionDenied);
  EXPECT_EQ(etcd_refusal("etcdserver: mvcc: required revision has been compacted"), EtcdRefusal::kNone);
  EXPECT_EQ(etcd_refusal("failed to connect to all addresses"), EtcdRefusal::kNone);
  EXPECT_EQ(etcd_refusal(""), EtcdRefusal::kNone);
}

TEST(EtcdRefusal, ErrorsFromGrpcSayWhatTheRefusalMeans) {
  CallSite site{"Status", "https://10.0.0.1:2379", true, true, true};
  Error no_leader = error_from_grpc(grpc::Status(grpc::StatusCode::UNAVAILABLE, "etcdserver: no leader"), site);
  EXPECT_EQ(no_leader.kind(), ErrorKind::kUnavailable);
  EXPECT_NE(std::string(no_leader.what()).find("etcd has no leader"), std::string::npos) << no_leader.what();
  Error denied = error_from_grpc(grpc::Status(grpc::StatusCode::UNKNOWN, "etcdserver: permission denied"), site);
  EXPECT_EQ(denied.kind(), ErrorKind::kAuth);
  Error no_user = error_from_grpc(grpc::Status(grpc::StatusCode::UNKNOWN, "etcdserver: user name is empty"), site);
  EXPECT_EQ(no_user.kind(), ErrorKind::kAuth);
  EXPECT_NE(no_user.hint().find("--user"), std::string::npos) << no_user.hint();
}

}  // namespace
}  // namespace etcdadm
