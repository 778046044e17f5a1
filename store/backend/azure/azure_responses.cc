#include "store/backend/azure/azure_responses.h"

#include <charconv>
#include <cstdio>

#include "common/base64.h"
#include "common/error.h"
#include "common/timefmt.h"
#include "store/backend/object/xml_reader.h"

namespace etcdadm {

namespace {

uint64_t byte_count(const std::string& text, const std::string& name, const std::string& what) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw Error(ErrorKind::kCorrupt,
                what + ": the size of " + name.substr(0, 200) + " is not a byte count: '" + text.substr(0, 40) + "'");
  }
  return v;
}

}  // namespace

AzureListPage parse_azure_list_blobs(const std::string& body, const std::string& what) {
  XmlElement x = parse_xml(body, what);
  if (x.name != "EnumerationResults") throw Error(ErrorKind::kCorrupt, what + " is not a blob listing");
  AzureListPage page;
  if (const XmlElement* blobs = x.child("Blobs")) {
    for (const XmlElement* b : blobs->children_named("Blob")) {
      AzureBlobInfo info;
      info.name = b->child_text("Name");
      if (info.name.empty()) throw Error(ErrorKind::kCorrupt, what + " lists a blob without a name");
      const XmlElement* props = b->child("Properties");
      if (props == nullptr)
        throw Error(ErrorKind::kCorrupt, what + ": blob " + info.name.substr(0, 200) + " has no properties");
      info.size = byte_count(props->child_text("Content-Length"), info.name, what);
      auto t = parse_http_date(props->child_text("Last-Modified"));
      info.modified_unix_micros = t ? to_unix_micros(*t) : 0;
      info.etag = props->child_text("Etag");
      page.blobs.push_back(std::move(info));
    }
  }
  page.next_marker = x.child_text("NextMarker");
  return page;
}

AzureErrorBody parse_azure_error_body(const std::string& body) {
  AzureErrorBody out;
  try {
    XmlElement x = parse_xml(body, "error");
    if (x.name == "Error") {
      out.code = x.child_text("Code");
      out.message = x.child_text("Message");
      auto nl = out.message.find('\n');  // Azure appends "RequestId:...\nTime:..."
      if (nl != std::string::npos) out.message.resize(nl);
      return out;
    }
  } catch (const Error&) {
  }
  out.message = body.substr(0, 200);
  return out;
}

std::string azure_block_list_xml(const std::vector<std::string>& block_ids) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>";
  for (const auto& id : block_ids) xml += "<Latest>" + xml_escape(id) + "</Latest>";
  return xml + "</BlockList>";
}

std::string azure_block_id(int number) {
  char id[16];
  std::snprintf(id, sizeof id, "%010d", number);
  return base64(id);
}

}  // namespace etcdadm
