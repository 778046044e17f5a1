#include "render/release_install.h"

namespace etcdadm::render {

std::string release_cached_text(const std::string& tarball) { return "Cached " + tarball + " (SHA-256 verified)\n"; }

std::string release_installed_text(const InstalledRelease& r) {
  std::string out = "Installed etcd " + r.version + " from " + r.source + (r.from_cache ? " (cached)" : "") + "\n";
  for (const auto& b : r.binaries) out += "  " + b + "\n";
  return out;
}

}  // namespace etcdadm::render
