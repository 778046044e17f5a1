#include "store/backend/object/xml_reader.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/error.h"

namespace etcdadm {

namespace {

XmlElement convert(xmlNode* node) {
  XmlElement e;
  e.name = reinterpret_cast<const char*>(node->name);
  for (xmlNode* c = node->children; c != nullptr; c = c->next) {
    if (c->type == XML_ELEMENT_NODE) {
      e.children.push_back(convert(c));
    } else if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content != nullptr) {
      e.text += reinterpret_cast<const char*>(c->content);
    }
  }
  return e;
}

}  // namespace

const XmlElement* XmlElement::child(std::string_view child_name) const {
  for (const auto& c : children) {
    if (c.name == child_name) return &c;
  }
  return nullptr;
}

std::string XmlElement::child_text(std::string_view child_name) const {
  const XmlElement* c = child(child_name);
  return c == nullptr ? std::string() : c->text;
}

std::vector<const XmlElement*> XmlElement::children_named(std::string_view child_name) const {
  std::vector<const XmlElement*> out;
  for (const auto& c : children) {
    if (c.name == child_name) out.push_back(&c);
  }
  return out;
}

const XmlElement* XmlElement::find(std::string_view descendant_name) const {
  if (name == descendant_name) return this;
  for (const auto& c : children) {
    if (const XmlElement* f = c.find(descendant_name)) return f;
  }
  return nullptr;
}

XmlElement parse_xml(const std::string& document, const std::string& what) {
  xmlDoc* doc = xmlReadMemory(document.data(), static_cast<int>(document.size()), "response.xml", nullptr,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  if (doc == nullptr) {
    std::string head = document.substr(0, 200);
    throw Error(ErrorKind::kCorrupt, what + ": not a valid XML document: " + head,
                "is the endpoint an S3-compatible server?");
  }
  xmlNode* root = xmlDocGetRootElement(doc);
  XmlElement out;
  if (root != nullptr) out = convert(root);
  xmlFreeDoc(doc);
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace etcdadm
