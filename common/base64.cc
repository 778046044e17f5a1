#include "common/base64.h"

#include <openssl/evp.h>

namespace etcdadm {

std::string base64(std::string_view data) {
  std::string out((data.size() + 2) / 3 * 4 + 1, '\0');  // EVP_EncodeBlock also writes a NUL
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64url(std::string_view data) {
  std::string out = base64(data);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (auto& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

}  // namespace etcdadm
