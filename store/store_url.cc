#include "store/store_url.h"

#include <cctype>
#include <regex>

#include "common/error.h"
#include "common/fs.h"
#include "store/backend/azure/azure_store.h"
#include "store/backend/gcs/gcs_store.h"
#include "store/backend/local/local_store.h"
#include "store/backend/s3/s3_store.h"
#include "store/backend/swift/swift_store.h"

namespace etcdadm {

static std::string trim_slashes(std::string s) {
  while (!s.empty() && s.front() == '/') s.erase(s.begin());
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// Where `text` begins with a known scheme name, however it was mangled ("s3:/b", "s3//b", "S3://b",
// "gcs://b"), returns the URL that was probably meant; empty when it does not look like one.
static std::string probably_meant(const std::string& text) {
  std::string lower;
  for (char ch : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  auto rest_after = [&](size_t n) {
    size_t i = n;
    while (i < text.size() && (text[i] == ':' || text[i] == '/')) ++i;
    return text.substr(i);
  };
  for (std::string scheme : {"s3", "gs", "gcs", "azureblob", "swift", "file"}) {
    if (lower.rfind(scheme, 0) != 0 || lower.size() == scheme.size()) continue;
    char next = lower[scheme.size()];
    if (next != ':' && next != '/') continue;
    std::string canonical = scheme == "gcs" ? "gs" : scheme;
    std::string rest = rest_after(scheme.size());
    return canonical == "file" ? "file:///" + rest : canonical + "://" + rest;
  }
  return "";
}

StoreUrl parse_store_url(const std::string& url) {
  const std::string forms =
      "use an absolute path, ./relative/path, file:///path, s3://bucket/prefix, gs://bucket/prefix, "
      "azureblob://container/prefix or swift://container/prefix";
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
  // A typo in a scheme must never turn an object store into a local directory: a cron job would
  // then "succeed" for months without a byte reaching the bucket.
  auto refuse_typo = [&](const std::string& why) {
    std::string meant = probably_meant(url);
    throw Error(ErrorKind::kInvalidArgument, "store URL '" + url + "' " + why,
                meant.empty() ? forms : "did you mean " + meant + "? (" + forms + ")");
  };
  static const std::regex scheme_like(R"(^[A-Za-z][A-Za-z0-9+.-]*:)");
  if (url.rfind("s3://", 0) == 0) {
    bucket_url(StoreUrl::Scheme::kS3, 5);
  } else if (url.rfind("gs://", 0) == 0) {
    bucket_url(StoreUrl::Scheme::kGcs, 5);
  } else if (url.rfind("azureblob://", 0) == 0) {
    bucket_url(StoreUrl::Scheme::kAzure, 12);
  } else if (url.rfind("swift://", 0) == 0) {
    bucket_url(StoreUrl::Scheme::kSwift, 8);
  } else if (url.rfind("file://", 0) == 0) {
    out.path = url.substr(7);
    if (out.path.empty() || out.path.front() != '/') {
      throw Error(ErrorKind::kInvalidArgument, "file store URL " + url + " must hold an absolute path",
                  "e.g. file:///var/backups/etcd");
    }
    out.path = absolute_path(out.path);
  } else if (url.find("://") != std::string::npos) {
    refuse_typo("has an unsupported scheme");
  } else if (std::regex_search(url, scheme_like)) {
    refuse_typo("looks like a URL without '//' after its scheme");
  } else if (url.front() == '/') {
    out.path = absolute_path(url);
  } else if (url.rfind("./", 0) == 0 || url.rfind("../", 0) == 0 || url == "." || url == "..") {
    out.path = absolute_path(url);
  } else if (!probably_meant(url).empty()) {
    refuse_typo("looks like a mistyped object-store URL");
  } else {
    throw Error(ErrorKind::kInvalidArgument, "relative store path '" + url + "' is ambiguous",
                "write ./" + url + " (relative to the working directory) or an absolute path, or a URL: " + forms);
  }
  return out;
}

std::string StoreUrl::canonical() const {
  switch (scheme) {
    case Scheme::kFile:
      return "file://" + path;
    case Scheme::kS3:
      return "s3://" + bucket + (prefix.empty() ? "" : "/" + prefix);
    case Scheme::kGcs:
      return "gs://" + bucket + (prefix.empty() ? "" : "/" + prefix);
    case Scheme::kAzure:
      return "azureblob://" + bucket + (prefix.empty() ? "" : "/" + prefix);
    case Scheme::kSwift:
      return "swift://" + bucket + (prefix.empty() ? "" : "/" + prefix);
  }
  return "";
}

std::unique_ptr<BlobStore> open_store(const std::string& url, const StoreOptions& options) {
  StoreUrl u = parse_store_url(url);
  switch (u.scheme) {
    case StoreUrl::Scheme::kFile:
      return std::make_unique<LocalStore>(u.path);
    case StoreUrl::Scheme::kS3:
      return open_s3_store(u.bucket, u.prefix, options.s3, options.object, Environment::from_process());
    case StoreUrl::Scheme::kGcs:
      return open_gcs_store(u.bucket, u.prefix, options.gcs, options.object, Environment::from_process());
    case StoreUrl::Scheme::kAzure:
      return open_azure_store(u.bucket, u.prefix, options.azure, options.object, Environment::from_process());
    case StoreUrl::Scheme::kSwift:
      return open_swift_store(u.bucket, u.prefix, options.object, Environment::from_process());
  }
  throw Error(ErrorKind::kInternal, "unknown store scheme");
}

}  // namespace etcdadm
