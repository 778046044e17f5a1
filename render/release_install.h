// `download`: an etcd release tarball verified into the cache, or its binaries installed.
#pragma once

#include <string>

#include "etcdadm/release/install.h"

namespace etcdadm::render {

// `tarball`: where download_release put the verified tarball.
std::string release_cached_text(const std::string& tarball);
std::string release_installed_text(const InstalledRelease& r);

}  // namespace etcdadm::render
