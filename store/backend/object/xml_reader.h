// Reading the small XML documents S3 and STS answer with (listings, errors, credentials) into a
// plain tree, via libxml2. Element names are local names (namespace prefixes dropped); text is
// entity-decoded. Network access and external entities are never resolved.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace etcdadm {

struct XmlElement {
  std::string name;
  std::string text;  // concatenated direct text content
  std::vector<XmlElement> children;

  const XmlElement* child(std::string_view child_name) const;  // first direct child, or nullptr
  std::string child_text(std::string_view child_name) const;   // "" when absent
  std::vector<const XmlElement*> children_named(std::string_view child_name) const;
  const XmlElement* find(std::string_view descendant_name) const;  // depth-first, or nullptr
};

// Throws Error(kCorrupt) when `document` is not well-formed XML; `what` names it in the message.
XmlElement parse_xml(const std::string& document, const std::string& what);

// Escapes text for an XML element body (& < > " ').
std::string xml_escape(std::string_view text);

}  // namespace etcdadm
