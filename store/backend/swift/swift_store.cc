#include "store/backend/swift/swift_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "common/error.h"
#include "common/timefmt.h"
#include "store/backend/object/parted_writer.h"
#include "store/backend/object/streaming_reader.h"

namespace etcdadm {

size_t swift_segment_size(size_t first_segment_size, int n) {
  size_t size = first_segment_size;
  for (int step = 100; n > step && size < (size_t{5} << 30); step += 100) size *= 2;
  return std::min(size, size_t{5} << 30);
}

namespace {

constexpr int kMaxSegments = 1000;  // Swift's default max_manifest_segments

std::string new_upload_id() {
  std::random_device rd;
  char id[40];
  std::snprintf(id, sizeof id, "%lld-%08x", static_cast<long long>(to_unix_micros(std::chrono::system_clock::now())),
                static_cast<unsigned>(rd()));
  return id;
}

// A static large object: segments in "<container>_segments" under "<name>/<upload id>/", then a
// manifest at the name that lists them. Segments grow past every 100th so that Swift's default
// 1000 of them hold large objects.
class SwiftUpload : public PartedUpload {
 public:
  SwiftUpload(std::shared_ptr<SwiftClient> client, std::string container, std::string name, size_t segment_size,
              bool create_only)
      : client_(std::move(client)),
        container_(std::move(container)),
        name_(std::move(name)),
        segment_size_(segment_size),
        create_only_(create_only) {}

  std::string where() const override { return "swift://" + container_ + "/" + name_; }
  size_t part_size(int number) const override { return swift_segment_size(segment_size_, number); }
  int max_parts() const override { return kMaxSegments; }
  void put_whole(std::string_view data) override { client_->put_object(container_, name_, data, create_only_); }
  void begin() override {
    client_->put_container(segments_container());
    upload_id_ = new_upload_id();
  }
  std::string put_part(int number, const std::string& data) override {
    return client_->put_object(segments_container(), segment_name(number), data, /*create_only=*/false);
  }
  void complete(const std::vector<std::string>& etags, const std::vector<uint64_t>& sizes) override {
    std::vector<SwiftSegment> manifest;
    for (size_t i = 0; i < etags.size(); ++i)
      manifest.push_back({"/" + segment_path(static_cast<int>(i) + 1), etags[i], sizes.at(i)});
    try {
      client_->put_object(container_, name_, swift_slo_manifest_json(manifest), create_only_, /*manifest=*/true);
    } catch (const Error& e) {
      // A manifest PUT the server carried out, whose answer was lost (a reset connection), is
      // retried, and the retry meets the object it made: 412, kAlreadyExists. Failing now would
      // abandon the upload, deleting the segments that the visible manifest points at: a backup
      // that lists and cannot be read. A manifest there that lists exactly this upload's segments
      // (their paths carry its ID) is ours: the commit is done.
      if (e.kind() != ErrorKind::kAlreadyExists || !create_only_ || !manifest_is_ours(manifest)) throw;
      spdlog::info("{}: the manifest's answer was lost, and the manifest there is this upload's: committed", where());
    }
  }
  void abandon(int parts) override {
    for (int n = 1; n <= parts; ++n) client_->delete_object(segments_container(), segment_name(n));
  }

 private:
  std::string segments_container() const { return container_ + "_segments"; }
  std::string segment_name(int n) const {
    char num[16];
    std::snprintf(num, sizeof num, "%08d", n);
    return name_ + "/" + upload_id_ + "/" + num;
  }
  std::string segment_path(int n) const { return segments_container() + "/" + segment_name(n); }
  bool manifest_is_ours(const std::vector<SwiftSegment>& manifest) const {
    auto there = client_->slo_segments(container_, name_);
    if (!there || there->size() != manifest.size()) return false;
    for (size_t i = 0; i < manifest.size(); ++i) {
      if ((*there)[i] != manifest[i].path) return false;
    }
    return true;
  }

  std::shared_ptr<SwiftClient> client_;  // shared: a writer may outlive its store object
  std::string container_, name_;
  size_t segment_size_;
  bool create_only_;  // If-None-Match: * on the manifest that makes the object visible
  std::string upload_id_;
};

}  // namespace

SwiftStore::SwiftStore(std::shared_ptr<SwiftClient> client, std::string container, std::string prefix,
                       size_t segment_size, int concurrency)
    : client_(std::move(client)),
      container_(std::move(container)),
      keys_{std::move(prefix)},
      segment_size_(std::clamp<size_t>(segment_size, 1u << 20, size_t{5} << 30)),
      concurrency_(std::max(1, concurrency)) {}

std::string SwiftStore::url() const {
  std::string u = "swift://" + container_ + (keys_.root.empty() ? "" : "/" + keys_.root);
  // The auth endpoint is part of the store's identity: two clouds can have containers of one name.
  const auto& c = client_->session().config();
  return u + "?auth=" + (c.kind == SwiftAuthConfig::Kind::kPreauthenticated ? c.storage_url : c.auth_url);
}

std::unique_ptr<BlobWriter> SwiftStore::create(const std::string& key, bool overwrite) {
  // The visible write carries If-None-Match: * as well; checking here fails fast, before a large upload.
  if (!overwrite && client_->head_object(container_, object_name(key))) {
    throw Error(ErrorKind::kAlreadyExists, url() + ": " + key + " already exists");
  }
  return std::make_unique<PartedWriter>(
      std::make_unique<SwiftUpload>(client_, container_, object_name(key), segment_size_, /*create_only=*/!overwrite),
      concurrency_);
}

std::unique_ptr<BlobReader> SwiftStore::open(const std::string& key) {
  std::string name = object_name(key);
  auto info = client_->head_object(container_, name);
  if (!info) throw Error(ErrorKind::kNotFound, url() + ": " + key + " does not exist");
  std::shared_ptr<SwiftClient> client = client_;
  return std::make_unique<StreamingReader>(
      "swift://" + container_ + "/" + name, info->size, client_->retry(),
      [client, container = container_, name, etag = info->etag](uint64_t offset, const HttpBodySink& sink) {
        client->get_object(container, name, offset, etag, sink);
      });
}

std::optional<BlobInfo> SwiftStore::stat(const std::string& key) {
  auto info = client_->head_object(container_, object_name(key));
  if (!info) return std::nullopt;
  return BlobInfo{key, info->size, info->modified_unix_micros};
}

std::vector<BlobInfo> SwiftStore::list(const std::string& prefix) {
  return keys_.list(prefix, [&](const std::string& full, const std::string& marker, std::vector<BlobInfo>& out) {
    auto page = client_->list(container_, full, marker);
    for (auto& o : page) out.push_back(BlobInfo{o.name, o.size, o.modified_unix_micros});
    // Swift pages by the last name seen; a short page is the last one.
    return page.size() < 10000 ? std::string() : page.back().name;
  });
}

std::vector<BlobInfo> SwiftStore::list_range(const std::string& start_after, const std::string& end_before) {
  return keys_.list_range(start_after, end_before,
                          [&](const std::string& full, const std::string& first, const std::string& last,
                              const std::string& marker, std::vector<BlobInfo>& out) {
                            auto page = client_->list(container_, full, marker.empty() ? first : marker, last);
                            for (auto& o : page) out.push_back(BlobInfo{o.name, o.size, o.modified_unix_micros});
                            return page.size() < 10000 ? std::string() : page.back().name;
                          });
}

void SwiftStore::remove(const std::string& key) { client_->delete_object(container_, object_name(key)); }

std::vector<std::string> SwiftStore::remove_abandoned(std::chrono::seconds older_than) {
  std::vector<std::string> removed;
  int64_t cutoff = to_unix_micros(std::chrono::system_clock::now() - older_than);
  // Segment sets "<object>/<upload id>/<n>" of this store's objects, with their newest segment.
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> sets;
  std::string prefix = keys_.root.empty() ? "" : keys_.root + "/";
  std::string marker;
  for (;;) {
    std::vector<SwiftObjectInfo> page;
    try {
      page = client_->list(segments_container(), prefix, marker);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kNotFound) return removed;  // no segments container: no large object yet
      throw;
    }
    for (const auto& o : page) {
      auto last = o.name.rfind('/');
      if (last == std::string::npos || last == 0) continue;
      auto& set = sets[o.name.substr(0, last)];
      set.first = std::max(set.first, o.modified_unix_micros);
      set.second.push_back(o.name);
    }
    if (page.size() < 10000) break;
    marker = page.back().name;
  }
  for (const auto& [set, entry] : sets) {
    if (entry.first == 0 || entry.first > cutoff) continue;  // maybe still being written
    auto slash = set.rfind('/');
    std::string object = set.substr(0, slash);
    auto used = client_->slo_segments(container_, object);
    std::string used_prefix = "/" + segments_container() + "/" + set + "/";
    if (used &&
        std::any_of(used->begin(), used->end(), [&](const std::string& p) { return p.rfind(used_prefix, 0) == 0; })) {
      continue;  // the segments of a committed object
    }
    for (const auto& segment : entry.second) client_->delete_object(segments_container(), segment);
    removed.push_back(std::to_string(entry.second.size()) + " segments of an unfinished upload of swift://" +
                      container_ + "/" + object + " (swift://" + segments_container() + "/" + set + "/)");
  }
  return removed;
}

std::unique_ptr<SwiftStore> open_swift_store(const std::string& container, const std::string& prefix,
                                             const ObjectStoreSettings& object, const Environment& env) {
  HttpOptions http;
  http.ca_file = object.ca_bundle;
  http.verify_tls = !object.insecure_skip_verify;
  http.idle_timeout = object.idle_timeout;
  auto session = std::make_shared<SwiftSession>(resolve_swift_auth(env), http);
  auto client = std::make_shared<SwiftClient>(session);
  return std::make_unique<SwiftStore>(client, container, prefix, object.part_size, object.concurrency);
}

}  // namespace etcdadm
