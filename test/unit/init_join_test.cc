// Tests of etcdadm/lifecycle/init_join.{h,cc}: the join command `etcdadm init` prints.
#include "etcdadm/lifecycle/init_join.h"

#include <gtest/gtest.h>

namespace etcdadm {

// Known answer: the join command init prints names the release source and the non-default layout,
// quoted for the shell, and nothing host-specific (name, bind address).
TEST(JoinCommand, CarriesTheInstallSourceAndLayout) {
  LifecycleOptions o;
  o.member.name = "m1";
  o.member.bind_address = "10.0.0.1";
  o.member.version = "3.5.17";
  o.member.install_dir = "/srv/etcd bin";
  o.member.client_port = 12379;
  o.member.init_system = InitSystemKind::kProcess;
  o.release.release_url = "file:///mnt/mirror/etcd";
  o.release.cache_dir = "/srv/cache";
  EXPECT_EQ(join_command_for(o, o.member),
            "etcdadm join https://10.0.0.1:12379 --version 3.5.17 --release-url file:///mnt/mirror/etcd --cache-dir "
            "/srv/cache --install-dir '/srv/etcd bin' --client-port 12379 --init-system process");
  o.release.tarball = "/tmp/etcd-v3.5.17-linux-amd64.tar.gz";
  o.release.sha256 = std::string(64, 'f');
  EXPECT_EQ(join_command_for(o, o.member),
            "etcdadm join https://10.0.0.1:12379 --version 3.5.17 --release-tarball "
            "/tmp/etcd-v3.5.17-linux-amd64.tar.gz --release-sha256 " + std::string(64, 'f') +
                " --cache-dir /srv/cache --install-dir '/srv/etcd bin' --client-port 12379 --init-system process");
  LifecycleOptions plain;
  plain.member.bind_address = "10.0.0.1";
  plain.member.version = "3.5.17";
  EXPECT_EQ(join_command_for(plain, plain.member), "etcdadm join https://10.0.0.1:2379 --version 3.5.17");
}

}  // namespace etcdadm
