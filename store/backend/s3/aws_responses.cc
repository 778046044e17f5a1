#include "store/backend/s3/aws_responses.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/text.h"
#include "common/timefmt.h"
#include "store/backend/object/xml_reader.h"

namespace etcdadm {

namespace {

int64_t iso_date_micros(const std::string& s) {
  auto t = parse_rfc3339(s);  // "2026-11-21T07:06:34.000Z"
  return t ? to_unix_micros(*t) : 0;
}

// A byte count as S3 writes it: decimal digits only ("" counts as 0, as servers omit it for
// empty objects). std::stoull would take "-1" as 2^64-1 and throw std::invalid_argument for "x".
uint64_t object_size(const std::string& text, const std::string& key, const std::string& what) {
  if (text.empty()) return 0;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw Error(ErrorKind::kCorrupt,
                what + ": the size of " + key.substr(0, 200) + " is not a byte count: '" + text.substr(0, 40) + "'");
  }
  return v;
}

std::optional<std::chrono::system_clock::time_point> parse_expiration(const std::string& s) {
  if (s.empty()) return std::nullopt;
  auto t = parse_rfc3339(s);
  if (!t) throw Error(ErrorKind::kAuth, "credentials carry an unreadable expiration time: " + s.substr(0, 64));
  return *t;
}

}  // namespace

S3ListPage parse_list_objects_v2(const std::string& body, const std::string& what) {
  XmlElement x = parse_xml(body, what);
  S3ListPage page;
  for (const XmlElement* o : x.children_named("Contents")) {
    S3ObjectInfo info;
    info.key = o->child_text("Key");
    info.size = object_size(o->child_text("Size"), info.key, what);
    info.modified_unix_micros = iso_date_micros(o->child_text("LastModified"));
    info.etag = unquote_etag(o->child_text("ETag"));
    page.objects.push_back(std::move(info));
  }
  if (x.child_text("IsTruncated") == "true") {
    page.next_continuation_token = x.child_text("NextContinuationToken");
    if (page.next_continuation_token.empty()) {
      throw Error(ErrorKind::kCorrupt, what + " is truncated but has no continuation token");
    }
  }
  return page;
}

S3UploadsPage parse_list_multipart_uploads(const std::string& body, const std::string& what) {
  XmlElement x = parse_xml(body, what);
  S3UploadsPage page;
  for (const XmlElement* u : x.children_named("Upload")) {
    page.uploads.push_back(
        {u->child_text("Key"), u->child_text("UploadId"), iso_date_micros(u->child_text("Initiated"))});
  }
  if (x.child_text("IsTruncated") == "true") {
    page.next_key_marker = x.child_text("NextKeyMarker");
    page.next_upload_id_marker = x.child_text("NextUploadIdMarker");
    if (page.next_key_marker.empty()) throw Error(ErrorKind::kCorrupt, what + " is truncated but has no NextKeyMarker");
  }
  return page;
}

S3VersionsPage parse_list_object_versions(const std::string& body, const std::string& what) {
  XmlElement x = parse_xml(body, what);
  S3VersionsPage page;
  // Versions and delete markers come interleaved in key order; each keeps its own element name.
  for (const auto& child : x.children) {
    bool marker = child.name == "DeleteMarker";
    if (!marker && child.name != "Version") continue;
    S3ObjectVersion v;
    v.key = child.child_text("Key");
    v.version_id = child.child_text("VersionId");
    v.latest = child.child_text("IsLatest") == "true";
    v.delete_marker = marker;
    if (v.key.empty() || v.version_id.empty())
      throw Error(ErrorKind::kCorrupt, what + " lists a version without key or version ID");
    page.versions.push_back(std::move(v));
  }
  if (x.child_text("IsTruncated") == "true") {
    page.next_key_marker = x.child_text("NextKeyMarker");
    page.next_version_id_marker = x.child_text("NextVersionIdMarker");
    if (page.next_key_marker.empty()) throw Error(ErrorKind::kCorrupt, what + " is truncated but has no NextKeyMarker");
  }
  return page;
}

std::string parse_bucket_versioning(const std::string& body, const std::string& what) {
  std::string status = parse_xml(body, what).child_text("Status");
  if (!status.empty() && status != "Enabled" && status != "Suspended") {
    throw Error(ErrorKind::kCorrupt, what + " has an unknown versioning status: " + status.substr(0, 40));
  }
  return status;
}

std::string parse_upload_id(const std::string& body, const std::string& what) {
  std::string id = parse_xml(body, what).child_text("UploadId");
  if (id.empty()) throw Error(ErrorKind::kCorrupt, what + " holds no UploadId");
  return id;
}

std::vector<S3DeleteFailure> parse_delete_objects_result(const std::string& body, const std::string& what) {
  std::vector<S3DeleteFailure> out;
  XmlElement doc = parse_xml(body, what);  // named: the pointers below point into it
  for (const XmlElement* e : doc.children_named("Error")) {
    out.push_back({e->child_text("Key"), e->child_text("Code"), e->child_text("Message")});
  }
  return out;
}

std::string unquote_etag(std::string etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') return etag.substr(1, etag.size() - 2);
  return etag;
}

bool is_valid_region_name(const std::string& region) {
  if (region.empty() || region.size() > 40) return false;
  for (char c : region) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

S3ErrorBody parse_s3_error_body(const std::string& body) {
  S3ErrorBody out;
  if (body.empty()) return out;
  try {
    XmlElement x = parse_xml(body, "S3 error");
    out.is_error_document = x.name == "Error";
    const XmlElement* err = out.is_error_document ? &x : x.find("Error");
    if (err != nullptr) {
      out.code = err->child_text("Code");
      out.message = err->child_text("Message");
      std::string region = err->child_text("Region");
      if (is_valid_region_name(region)) out.region = region;
    }
  } catch (const Error&) {
    out.message = body.substr(0, 200);
  }
  return out;
}

AwsCredentials parse_sts_credentials(const std::string& xml) {
  XmlElement doc = parse_xml(xml, "STS response");
  const XmlElement* c = doc.find("Credentials");
  if (c == nullptr) throw Error(ErrorKind::kAuth, "STS response holds no <Credentials>");
  AwsCredentials out;
  out.access_key_id = trim_space(c->child_text("AccessKeyId"));
  out.secret_access_key = trim_space(c->child_text("SecretAccessKey"));
  out.session_token = trim_space(c->child_text("SessionToken"));
  out.expiration = parse_expiration(trim_space(c->child_text("Expiration")));
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    throw Error(ErrorKind::kAuth, "STS response holds incomplete credentials");
  }
  return out;
}

AwsCredentials parse_credentials_json(const std::string& body, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    throw Error(ErrorKind::kAuth, source + " returned something that is not credentials JSON");
  }
  // A field of another type is as good as absent (json::value would throw a type_error).
  auto text = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  AwsCredentials c;
  c.access_key_id = text("AccessKeyId");
  c.secret_access_key = text("SecretAccessKey");
  c.session_token = text("Token");
  c.expiration = parse_expiration(text("Expiration"));
  c.source = source;
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    std::string code = text("Code");
    throw Error(ErrorKind::kAuth,
                source + " returned no credentials" + (code.empty() ? "" : " (" + code.substr(0, 100) + ")"));
  }
  return c;
}

}  // namespace etcdadm
