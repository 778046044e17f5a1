#include "etcd/datadir/mvcc.h"

#include <algorithm>
#include <climits>

#include "common/error.h"

namespace etcdadm {

uint64_t read_big_endian_u64(std::string_view b) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(b[i]);
  return v;
}

int64_t newest_revision(const BoltReader& db) {
  auto last = db.last({"key"});
  if (!last) return 0;
  const std::string& k = last->first;
  if ((k.size() != 17 && !(k.size() == 18 && k[17] == 't')) || k[8] != '_') {
    throw Error(ErrorKind::kCorrupt, "the snapshot's key bucket ends with a key that is not a revision (" +
                                         std::to_string(k.size()) + " bytes)");
  }
  uint64_t main = read_big_endian_u64(std::string_view(k).substr(0, 8));
  if (main > static_cast<uint64_t>(INT64_MAX / 2)) {
    throw Error(ErrorKind::kCorrupt, "the snapshot's newest revision " + std::to_string(main) + " is implausible");
  }
  return static_cast<int64_t>(main);
}

int64_t store_revision(const BoltReader& db) {
  int64_t rev = std::max<int64_t>(1, newest_revision(db));
  for (const char* key : {"finishedCompactRev", "scheduledCompactRev"}) {
    auto v = db.get({"meta"}, key);
    if (v && v->size() >= 8) {
      auto main = static_cast<int64_t>(read_big_endian_u64(std::string_view(*v).substr(0, 8)));
      if (main > rev && main < INT64_MAX / 2) rev = main;
    }
  }
  return rev;
}

std::string big_endian_u64(uint64_t v) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (56 - 8 * i)) & 0xff);
  return b;
}

std::string revision_key(int64_t main, int64_t sub) {
  return big_endian_u64(static_cast<uint64_t>(main)) + "_" + big_endian_u64(static_cast<uint64_t>(sub));
}

}  // namespace etcdadm
