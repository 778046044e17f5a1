#include "cmd/store_flags.h"

#include "common/error.h"
#include "common/timefmt.h"

namespace etcdadm::cli {

std::chrono::seconds duration_flag(const std::string& flag, const std::string& value, bool allow_zero) {
  auto d = parse_duration(value);
  if (!d || d->count() < 0 || (!allow_zero && d->count() == 0)) {
    throw Error(ErrorKind::kInvalidArgument, "invalid " + flag + " " + value, "e.g. 30s, 15m, 2h");
  }
  return std::chrono::duration_cast<std::chrono::seconds>(*d);
}

}  // namespace etcdadm::cli
