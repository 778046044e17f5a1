// Change log records and segments made up for the tests of the change log and its readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "changelog/segment.h"
#include "store/blob_store.h"
#include "store/codec.h"

namespace etcdadm::test {

// A record of revision `rev` with `events` events (every third a DELETE, the others PUTs with
// values of 100 bytes and more) and, when `lease` is not 0, that lease granted.
inline changelog::Record make_record(int64_t rev, int events = 1, int64_t lease = 0) {
  changelog::Record r;
  r.set_revision(rev);
  r.set_observed_unix_micros(1795000000000000 + rev * 1000);
  for (int i = 0; i < events; ++i) {
    auto* e = r.add_events();
    e->set_type(i % 3 == 2 ? etcdserverpb::Event::DELETE : etcdserverpb::Event::PUT);
    e->mutable_kv()->set_key("/k/" + std::to_string(rev) + "/" + std::to_string(i));
    e->mutable_kv()->set_mod_revision(rev);
    if (e->type() == etcdserverpb::Event::PUT) {
      e->mutable_kv()->set_create_revision(rev);
      e->mutable_kv()->set_version(1);
      e->mutable_kv()->set_value(std::string(100 + i, 'v'));
      e->mutable_kv()->set_lease(lease);
    }
  }
  if (lease != 0) {
    auto* g = r.add_leases();
    g->set_id(lease);
    g->set_granted_ttl(30);
  }
  return r;
}

// A segment of the records `first`..`last` (make_record's, of varying sizes), written to `store`.
inline changelog::SegmentName write_segment(BlobStore& store, int64_t first, int64_t last,
                                            Compression c = Compression::kGzip,
                                            std::optional<age::Recipients> to = std::nullopt) {
  changelog::SegmentBuilder b(c, to);
  for (int64_t rev = first; rev <= last; ++rev) b.add(make_record(rev, 1 + static_cast<int>(rev % 4), rev % 5 == 0 ? rev : 0));
  return b.write(store, "cdf818194e3a8c32");
}

}  // namespace etcdadm::test
