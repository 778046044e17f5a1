#include "restore/new_cluster.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "common/error.h"
#include "common/text.h"

namespace etcdadm {
namespace {

uint64_t first_8_bytes_big_endian(const unsigned char* digest) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | digest[i];
  return v;
}

bool has_control_character(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// etcd's types.NewURLs check for one peer URL (3.5+: unix and unixs URLs are not checked for
// host:port and path), with the scheme in lower case as Go's url.URL.String() writes it (the
// member ID is computed from that string). Go refuses control characters in URLs.
std::string checked_peer_url(std::string url) {
  url = trim_space(url);
  auto bad = [&](const std::string& why) {
    throw Error(ErrorKind::kInvalidArgument, "peer URL '" + url + "' in --initial-cluster: " + why);
  };
  if (has_control_character(url)) bad("control characters in a URL");
  auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0) bad("not a URL (scheme://host:port)");
  for (size_t i = 0; i < sep; ++i) url[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(url[i])));
  std::string scheme = url.substr(0, sep);
  std::string rest = url.substr(sep + 3);
  if (scheme == "unix" || scheme == "unixs") {
    if (rest.empty()) bad("no socket address");
    return url;
  }
  if (scheme != "http" && scheme != "https") bad("the scheme must be http, https, unix or unixs");
  if (rest.find_first_of("/?#") != std::string::npos) bad("a peer URL must not contain a path");
  auto colon = rest.rfind(':');
  bool bracketed = !rest.empty() && rest[0] == '[';
  if (colon == std::string::npos || colon + 1 == rest.size() || (bracketed && rest[colon - 1] != ']') ||
      (!bracketed && rest.find(':') != colon)) {
    bad("the address does not have the form host:port");
  }
  return url;
}

}  // namespace

uint64_t member_id(std::vector<std::string> peer_urls, const std::string& token) {
  std::sort(peer_urls.begin(), peer_urls.end());
  std::string b;
  for (const std::string& u : peer_urls) b += u;
  b += token;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(b.data()), b.size(), digest);
  return first_8_bytes_big_endian(digest);
}

uint64_t cluster_id(std::vector<uint64_t> member_ids) {
  std::sort(member_ids.begin(), member_ids.end());
  std::string b;
  for (uint64_t id : member_ids) {
    for (int shift = 56; shift >= 0; shift -= 8) b.push_back(static_cast<char>((id >> shift) & 0xff));
  }
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(b.data()), b.size(), digest);
  return first_8_bytes_big_endian(digest);
}

const NewMember& NewCluster::member(const std::string& name) const {
  for (const NewMember& m : members) {
    if (m.name == name) return m;
  }
  throw Error(ErrorKind::kInvalidArgument, "--initial-cluster has no member named " + name,
              "add " + name + "=<peer URL> to --initial-cluster");
}

NewCluster plan_new_cluster(const std::string& initial_cluster, const std::string& token) {
  std::map<std::string, std::vector<std::string>> urls_by_name;
  std::set<std::string> seen;
  for (const std::string& pair : split_list(initial_cluster)) {
    auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(ErrorKind::kInvalidArgument, "--initial-cluster entry '" + pair + "' is not name=peer-URL");
    }
    // Names end up in JSON in the WAL and the db; etcd's Go versions escape control characters
    // differently (\b vs \u0008), and no sane member name has one.
    if (has_control_character(pair.substr(0, eq))) {
      throw Error(ErrorKind::kInvalidArgument, "--initial-cluster: a member name with control characters");
    }
    std::string url = checked_peer_url(pair.substr(eq + 1));
    if (!seen.insert(url).second) {
      throw Error(ErrorKind::kInvalidArgument, "--initial-cluster names the peer URL " + url + " twice");
    }
    urls_by_name[pair.substr(0, eq)].push_back(url);
  }
  if (urls_by_name.empty()) throw Error(ErrorKind::kInvalidArgument, "--initial-cluster is empty");
  NewCluster c;
  c.token = token;
  std::vector<uint64_t> ids;
  for (auto& [name, urls] : urls_by_name) {
    std::sort(urls.begin(), urls.end());
    NewMember m{member_id(urls, token), name, urls};
    for (const NewMember& other : c.members) {
      if (other.id == m.id)
        throw Error(ErrorKind::kInvalidArgument, "members " + other.name + " and " + name + " get the same ID");
    }
    ids.push_back(m.id);
    c.members.push_back(std::move(m));
  }
  std::sort(c.members.begin(), c.members.end(), [](const NewMember& a, const NewMember& b) { return a.id < b.id; });
  c.cluster_id = cluster_id(ids);
  return c;
}

}  // namespace etcdadm
