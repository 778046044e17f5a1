// What Azure Blob Storage answers, read from its XML: pure functions, no I/O, so that broken and
// hostile answers are tested on their own. Every function throws etcdadm::Error and nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace etcdadm {

struct AzureBlobInfo {
  std::string name;
  uint64_t size = 0;
  int64_t modified_unix_micros = 0;
  std::string etag;
};

struct AzureListPage {
  std::vector<AzureBlobInfo> blobs;
  std::string next_marker;  // "" after the last page
};

// List Blobs (EnumerationResults). A <Content-Length> that is no byte count is kCorrupt.
AzureListPage parse_azure_list_blobs(const std::string& body, const std::string& what);

// The <Error><Code/><Message/></Error> document of a failure. Never throws: another body gives an
// empty code and (up to 200 bytes of) the body as the message.
struct AzureErrorBody {
  std::string code, message;
};
AzureErrorBody parse_azure_error_body(const std::string& body);

// The <BlockList> body of Put Block List: every block, in order, as <Latest>.
std::string azure_block_list_xml(const std::vector<std::string>& block_ids);

// The ID of block `number` (1-based): base64 of a fixed-width decimal, as Azure requires every ID
// of one blob to have the same length.
std::string azure_block_id(int number);

}  // namespace etcdadm
