#include "store/store_url.h"

#include "common/error.h"
#include "common/fs.h"
#include "store/local_store.h"

namespace etcdadm {

static std::string trim_slashes(std::string s) {
  while (!s.empty() && s.front() == '/') s.erase(s.begin());
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

StoreUrl parse_store_url(const std::string& url) {
  const std::string forms = "use a path, file:///path, s3://bucket/prefix or gs://bucket/prefix";
  if (url.empty()) throw Error(ErrorKind::kInvalidArgument, "no backup store given", "pass --store (" + forms + ")");
  StoreUrl out;
  auto bucket_url = [&](StoreUrl::Scheme scheme, size_t skip) {
    out.scheme = scheme;
    std::string rest = url.substr(skip);
    auto slash = rest.find('/');
    out.bucket = rest.substr(0, slash);
    out.prefix = slash == std::string::npos ? "" : trim_slashes(rest.substr(slash + 1));
    if (out.bucket.empty()) throw Error(ErrorKind::kInvalidArgument, "store URL " + url + " has no bucket", forms);
  };
  if (url.rfind("s3://", 0) == 0) {
    bucket_url(StoreUrl::Scheme::kS3, 5);
  } else if (url.rfind("gs://", 0) == 0) {
    bucket_url(StoreUrl::Scheme::kGcs, 5);
  } else if (url.rfind("file://", 0) == 0) {
    out.path = url.substr(7);
    if (out.path.empty() || out.path.front() != '/') {
      throw Error(ErrorKind::kInvalidArgument, "file store URL " + url + " must hold an absolute path", "e.g. file:///var/backups/etcd");
    }
    out.path = absolute_path(out.path);
  } else if (url.find("://") != std::string::npos) {
    throw Error(ErrorKind::kInvalidArgument, "unsupported store URL scheme in " + url, forms);
  } else {
    out.path = absolute_path(url);
  }
  return out;
}

std::string StoreUrl::canonical() const {
  switch (scheme) {
    case Scheme::kFile: return "file://" + path;
    case Scheme::kS3: return "s3://" + bucket + (prefix.empty() ? "" : "/" + prefix);
    case Scheme::kGcs: return "gs://" + bucket + (prefix.empty() ? "" : "/" + prefix);
  }
  return "";
}

std::unique_ptr<BlobStore> open_store(const std::string& url, const StoreOptions& options) {
  StoreUrl u = parse_store_url(url);
  switch (u.scheme) {
    case StoreUrl::Scheme::kFile: return std::make_unique<LocalStore>(u.path);
    case StoreUrl::Scheme::kS3: return open_s3_store(u.bucket, u.prefix, options.s3, Environment::from_process());
    case StoreUrl::Scheme::kGcs: return open_gcs_store(u.bucket, u.prefix, options.gcs, Environment::from_process());
  }
  throw Error(ErrorKind::kInternal, "unknown store scheme");
}

}  // namespace etcdadm
