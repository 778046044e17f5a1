// The OpenStack Swift backend of the blob store, on Swift's own API: swift://container/prefix (the
// scheme kops and etcd-manager use). Authentication: store/backend/swift/swift_auth.h.
//
// Writes stream: an object smaller than one segment goes up in one PUT. A larger one is a static
// large object: segments of --upload-part-size (doubling every 100 segments, as Swift allows 1000
// per manifest by default) go up, `concurrency` at a time, into the container
// "<container>_segments" (python-swiftclient's convention) under "<object>/<upload id>/<n>", and the
// manifest PUT makes the object visible in one step. Without overwrite, each visible write carries
// If-None-Match: *. A failed writer deletes its segments; a killed one leaves them, and the next
// save deletes segment sets that no manifest uses once they are older than --clean-abandoned-after.
// Reads stream one GET, resumed with a Range request pinned to the ETag.
#pragma once

#include <memory>
#include <string>

#include "common/environment.h"
#include "store/backend/swift/swift_client.h"
#include "store/blob_capabilities.h"
#include "store/store_options.h"

namespace etcdadm {

class SwiftStore : public BlobStore, public LeftoverUploads, public ReloadableCredentials {
 public:
  SwiftStore(std::shared_ptr<SwiftClient> client, std::string container, std::string prefix,
             size_t segment_size = 8u << 20, int concurrency = 4);

  std::string url() const override;
  std::unique_ptr<BlobWriter> create(const std::string& key, bool overwrite) override;
  std::unique_ptr<BlobReader> open(const std::string& key) override;
  std::optional<BlobInfo> stat(const std::string& key) override;
  std::vector<BlobInfo> list(const std::string& prefix) override;
  std::vector<BlobInfo> list_range(const std::string& start_after, const std::string& end_before) override;
  void remove(const std::string& key) override;
  std::vector<std::string> remove_abandoned(std::chrono::seconds older_than) override;
  void reload_credentials() override { client_->session().invalidate(); }

  SwiftClient& client() { return *client_; }
  const std::string& container() const { return container_; }
  std::string segments_container() const { return container_ + "_segments"; }
  std::string object_name(const std::string& key) const { return keys_.object(key); }

 private:
  std::shared_ptr<SwiftClient> client_;
  std::string container_;
  ObjectKeys keys_;
  size_t segment_size_;
  int concurrency_;
};

// Size of 1-based segment `n`: the first segment's size, doubled every 100 segments (capped at
// Swift's 5 GiB object limit), so 1000 segments of a manifest hold 800 GiB from 8 MiB.
size_t swift_segment_size(size_t first_segment_size, int n);

std::unique_ptr<SwiftStore> open_swift_store(const std::string& container, const std::string& prefix,
                                             const ObjectStoreSettings& object, const Environment& env);

}  // namespace etcdadm
