// libFuzzer target for the copy-on-write bbolt writer of the native restore (bench/docs/fuzz.md,
// "bolt_writer"). The input is a bbolt file (held in a memfd, so no disk is written); the restore's own
// update (members replaced, meta keys, one revision key past the end of `key`) is applied and
// committed, and the result is opened again. Only etcdadm::Error may come out: the writer must
// refuse a damaged tree before writing, never crash, loop or allocate without bound.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/fuzz/fuzz_target.h"
#include "etcd/datadir/bolt_reader.h"
#include "etcd/datadir/bolt_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = ::memfd_create("bolt-writer-fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data, size) == static_cast<ssize_t>(size)) {
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    etcdadm::fuzz::refused_or_read([&] {
      etcdadm::BoltUpdate u(path);
      u.replace_bucket("members", {{"2e1259d415f2a040", "{\"id\":1}"}});
      u.replace_bucket("members_removed", {});
      u.ensure_bucket("cluster");
      u.put("meta", "consistent_index", std::string(8, '\1'));
      u.put("key", std::string(17, '\x7f'), "");
      u.commit();
      etcdadm::BoltReader::open(path)->get({"members"}, "2e1259d415f2a040");
    });
  }
  ::close(fd);
  return 0;
}
