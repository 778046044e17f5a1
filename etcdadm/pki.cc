#include "etcdadm/pki.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "common/error.h"
#include "common/fs.h"
#include "common/openssl_ptr.h"

namespace etcdadm {

namespace {

[[noreturn]] void ssl_fail(const std::string& what) {
  throw Error(ErrorKind::kInternal, "OpenSSL: " + what + " failed");
}

std::string pem_of(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) ssl_fail("PEM encoding");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

X509Ptr read_cert(const std::string& path) {
  X509Ptr x = parse_pem_cert(read_file(path));
  if (!x) throw Error(ErrorKind::kCorrupt, path + " is not a PEM certificate");
  return x;
}

KeyPtr read_key(const std::string& path) {
  KeyPtr k = parse_pem_key(read_file(path));
  if (!k) throw Error(ErrorKind::kCorrupt, path + " is not a PEM private key");
  return k;
}

KeyPtr generate_key(KeyAlgorithm algorithm) {
  KeyPtr k(algorithm == KeyAlgorithm::kEcdsaP256 ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048));
  if (!k) ssl_fail(key_algorithm_name(algorithm) + " key generation");
  return k;
}

// What a key is, in the names --key-algorithm takes where it is one of those.
std::string describe_key(EVP_PKEY* key) {
  const int bits = EVP_PKEY_get_bits(key);
  if (EVP_PKEY_is_a(key, "RSA")) return "rsa-" + std::to_string(bits);
  if (EVP_PKEY_is_a(key, "EC")) {
    char group[64] = {0};
    size_t len = 0;
    if (EVP_PKEY_get_group_name(key, group, sizeof group, &len) != 1) return "ec";
    if (std::string(group) == "prime256v1" || std::string(group) == "P-256") return "ecdsa-p256";
    return "ec-" + std::string(group);
  }
  const char* type = EVP_PKEY_get0_type_name(key);
  return type ? std::string(type) : "unknown";
}

}  // namespace

KeyAlgorithm parse_key_algorithm(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "rsa-2048") return KeyAlgorithm::kRsa2048;
  if (t == "ecdsa-p256") return KeyAlgorithm::kEcdsaP256;
  throw Error(ErrorKind::kInvalidArgument, "unknown key algorithm '" + text + "'", "use rsa-2048 or ecdsa-p256");
}

std::string key_algorithm_name(KeyAlgorithm algorithm) {
  return algorithm == KeyAlgorithm::kEcdsaP256 ? "ecdsa-p256" : "rsa-2048";
}

std::string key_algorithm_of_cert(const std::string& cert_path) {
  X509Ptr x = read_cert(cert_path);
  EVP_PKEY* key = X509_get0_pubkey(x.get());
  if (key == nullptr) throw Error(ErrorKind::kCorrupt, cert_path + " has no readable public key");
  return describe_key(key);
}

namespace {

void write_pair(const std::string& dir, const std::string& stem, X509* cert, EVP_PKEY* key) {
  make_dirs(dir, 0755);
  // The key first: a certificate never exists without its key.
  write_file_atomic(
      dir + "/" + stem + ".key",
      pem_of([&](BIO* b) { return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); }), 0600);
  write_file_atomic(dir + "/" + stem + ".crt", pem_of([&](BIO* b) { return PEM_write_bio_X509(b, cert); }), 0644);
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) ssl_fail("extension " + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

bool is_ip(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// "DNS:a,IP:1.2.3.4" from host names and addresses, without duplicates.
std::string san_list(const std::vector<std::string>& hosts) {
  std::vector<std::string> seen;
  std::string out;
  for (const auto& h : hosts) {
    if (h.empty() || std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    if (!out.empty()) out += ",";
    out += (is_ip(h) ? "IP:" : "DNS:") + h;
  }
  return out;
}

// Issues a certificate for `key`. issuer == nullptr: self-signed CA.
X509Ptr issue(EVP_PKEY* key, const std::string& cn, const std::string& org, std::chrono::hours validity, X509* issuer,
              EVP_PKEY* issuer_key, bool ca, const std::string& ext_key_usage, const std::string& sans) {
  X509Ptr x(X509_new());
  X509_set_version(x.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -300);  // tolerate small clock differences
  X509_gmtime_adj(X509_getm_notAfter(x.get()), static_cast<long>(std::chrono::seconds(validity).count()));
  X509_NAME* name = X509_get_subject_name(x.get());
  if (!org.empty())
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1,
                               0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509_set_pubkey(x.get(), key);
  X509* signer = issuer ? issuer : x.get();
  add_ext(x.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  // keyEncipherment is RSA key transport; an ECDSA key only signs (RFC 5480 section 3).
  add_ext(x.get(), signer, NID_key_usage,
          ca                              ? "critical,keyCertSign,cRLSign,digitalSignature"
          : EVP_PKEY_is_a(key, "RSA") ? "critical,digitalSignature,keyEncipherment"
                                          : "critical,digitalSignature");
  if (!ext_key_usage.empty()) add_ext(x.get(), signer, NID_ext_key_usage, ext_key_usage);
  add_ext(x.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer) add_ext(x.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (!sans.empty()) add_ext(x.get(), signer, NID_subject_alt_name, sans);
  if (X509_sign(x.get(), issuer_key ? issuer_key : key, EVP_sha256()) == 0) ssl_fail("signing " + cn);
  return x;
}

std::string name_entry(X509_NAME* name, int nid) {
  int idx = X509_NAME_get_index_by_NID(name, nid, -1);
  if (idx < 0) return "";
  ASN1_STRING* s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, s);
  std::string out = n > 0 ? std::string(reinterpret_cast<char*>(utf8), static_cast<size_t>(n)) : "";
  OPENSSL_free(utf8);
  return out;
}

std::vector<std::string> sans_of(X509* x) {
  std::vector<std::string> out;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    if (g->type == GEN_DNS) {
      out.push_back("DNS:" + std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName))));
    } else if (g->type == GEN_IPADD) {
      char buf[64] = {0};
      int len = ASN1_STRING_length(g->d.iPAddress);
      inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress), buf, sizeof buf);
      out.push_back(std::string("IP:") + buf);
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

SystemTime time_of(const ASN1_TIME* t) {
  std::tm tm{};
  ASN1_TIME_to_tm(t, &tm);
  return from_utc_tm(tm);
}

std::string ext_key_usage_for(const std::string& stem) {
  return (stem == "server" || stem == "peer") ? "serverAuth,clientAuth" : "clientAuth";
}

struct Leaf {
  std::string stem, cn, org;
  std::vector<std::string> hosts;
};

std::vector<Leaf> leaves_for(const MemberPkiSpec& s) {
  std::vector<std::string> server = s.extra_sans, peer = s.extra_sans;
  for (const auto& h : {s.name, std::string("127.0.0.1"), std::string("localhost")}) {
    server.push_back(h);
    peer.push_back(h);
  }
  server.insert(server.end(), s.client_hosts.begin(), s.client_hosts.end());
  peer.insert(peer.end(), s.peer_hosts.begin(), s.peer_hosts.end());
  return {{"server", s.name, "", server},
          {"peer", s.name, "", peer},
          {"etcdctl-etcd-client", s.name + "-etcdctl", "system:masters", {}},
          {"apiserver-etcd-client", s.name + "-kube-apiserver-etcd-client", "system:masters", {}}};
}

// A certificate kept from an earlier run must still fit: issued by this CA (a join retried with
// another cluster's CA) and valid for every host this member now needs (another --bind-address).
// etcd would otherwise fail later with a TLS error far from the cause.
void check_existing_leaf(const std::string& path, X509* ca, const std::vector<std::string>& required_hosts) {
  X509Ptr cert = read_cert(path);
  const std::string fix = "delete the member certificates (or run `etcdadm reset`) to have them issued again";
  if (X509_verify(cert.get(), X509_get0_pubkey(ca)) != 1) {
    ERR_clear_error();
    throw Error(ErrorKind::kTls, path + " was not issued by the CA in the same directory", fix);
  }
  std::vector<std::string> sans = sans_of(cert.get());
  for (const auto& h : required_hosts) {
    std::string want = (is_ip(h) ? "IP:" : "DNS:") + h;
    if (h.empty() || std::find(sans.begin(), sans.end(), want) != sans.end()) continue;
    std::string listed;
    for (const auto& x : sans) listed += (listed.empty() ? "" : ", ") + x;
    throw Error(ErrorKind::kInvalidArgument, path + " is not valid for " + h + " (its SANs: " + listed + ")", fix);
  }
}

}  // namespace

bool ensure_ca(const std::string& dir, KeyAlgorithm algorithm) {
  std::string crt = dir + "/ca.crt", key = dir + "/ca.key";
  if (path_exists(crt) && path_exists(key)) {
    X509Ptr c = read_cert(crt);
    KeyPtr k = read_key(key);
    if (X509_check_private_key(c.get(), k.get()) != 1) {
      throw Error(ErrorKind::kCorrupt, "ca.key in " + dir + " does not belong to ca.crt",
                  "restore the matching CA key, or move both away to create a new CA");
    }
    return false;
  }
  if (path_exists(crt) != path_exists(key)) {
    throw Error(ErrorKind::kNotFound, "only one of ca.crt and ca.key exists in " + dir,
                "copy the cluster's CA certificate AND key there (join needs the same CA as the cluster)");
  }
  KeyPtr k = generate_key(algorithm);
  X509Ptr c = issue(k.get(), "etcd", "", std::chrono::hours(24 * 365 * 10), nullptr, nullptr, true, "", "");
  write_pair(dir, "ca", c.get(), k.get());
  return true;
}

std::vector<std::string> ensure_member_certs(const MemberPkiSpec& spec) {
  X509Ptr ca = read_cert(spec.certs_dir + "/ca.crt");
  KeyPtr ca_key = read_key(spec.certs_dir + "/ca.key");
  const KeyAlgorithm algorithm =
      spec.key_algorithm.value_or(describe_key(X509_get0_pubkey(ca.get())) == "ecdsa-p256" ? KeyAlgorithm::kEcdsaP256
                                                                                        : KeyAlgorithm::kRsa2048);
  std::vector<std::string> issued;
  for (const auto& leaf : leaves_for(spec)) {
    const std::string crt = spec.certs_dir + "/" + leaf.stem + ".crt";
    if (path_exists(crt) && path_exists(spec.certs_dir + "/" + leaf.stem + ".key")) {
      check_existing_leaf(crt, ca.get(), leaf.hosts);
      continue;
    }
    KeyPtr k = generate_key(algorithm);
    X509Ptr c = issue(k.get(), leaf.cn, leaf.org, spec.leaf_validity, ca.get(), ca_key.get(), false,
                      ext_key_usage_for(leaf.stem), san_list(leaf.hosts));
    write_pair(spec.certs_dir, leaf.stem, c.get(), k.get());
    issued.push_back(leaf.stem);
  }
  return issued;
}

std::vector<CertInfo> inspect_certs(const std::string& dir) {
  std::vector<CertInfo> out;
  std::vector<std::string> stems = {"ca"};
  stems.insert(stems.end(), member_cert_names().begin(), member_cert_names().end());
  for (const auto& stem : stems) {
    std::string path = dir + "/" + stem + ".crt";
    if (!path_exists(path)) continue;
    X509Ptr x = read_cert(path);
    CertInfo info;
    info.name = stem;
    info.subject = name_entry(X509_get_subject_name(x.get()), NID_commonName);
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get_serialNumber(x.get()), nullptr);
    char* hex = BN_bn2hex(bn);
    info.serial_hex = hex;
    OPENSSL_free(hex);
    BN_free(bn);
    info.not_before = time_of(X509_get0_notBefore(x.get()));
    info.not_after = time_of(X509_get0_notAfter(x.get()));
    info.sans = sans_of(x.get());
    info.is_ca = X509_check_ca(x.get()) > 0;
    info.key_algorithm = X509_get0_pubkey(x.get()) ? describe_key(X509_get0_pubkey(x.get())) : "unknown";
    out.push_back(info);
  }
  return out;
}

std::vector<std::string> renew_certs(const std::string& dir, const std::vector<std::string>& which,
                                     std::chrono::hours validity) {
  std::vector<std::string> targets;
  bool all = which.empty() || (which.size() == 1 && which[0] == "all");
  for (const auto& stem : all ? member_cert_names() : which) {
    if (std::find(member_cert_names().begin(), member_cert_names().end(), stem) == member_cert_names().end()) {
      throw Error(ErrorKind::kInvalidArgument, "unknown certificate '" + stem + "'",
                  "use all, server, peer, etcdctl-etcd-client or apiserver-etcd-client");
    }
    bool present = path_exists(dir + "/" + stem + ".crt");
    if (!present && !all) throw Error(ErrorKind::kNotFound, dir + "/" + stem + ".crt does not exist");
    if (present) targets.push_back(stem);
  }
  X509Ptr ca = read_cert(dir + "/ca.crt");
  KeyPtr ca_key = read_key(dir + "/ca.key");
  for (const auto& stem : targets) {
    X509Ptr old = read_cert(dir + "/" + stem + ".crt");
    KeyPtr key = read_key(dir + "/" + stem + ".key");
    if (X509_check_private_key(old.get(), key.get()) != 1) {
      throw Error(ErrorKind::kCorrupt, stem + ".key does not belong to " + stem + ".crt in " + dir);
    }
    std::vector<std::string> hosts;
    for (const auto& san : sans_of(old.get())) hosts.push_back(san.substr(san.find(':') + 1));
    X509Ptr renewed = issue(key.get(), name_entry(X509_get_subject_name(old.get()), NID_commonName),
                            name_entry(X509_get_subject_name(old.get()), NID_organizationName), validity, ca.get(),
                            ca_key.get(), false, ext_key_usage_for(stem), san_list(hosts));
    write_file_atomic(dir + "/" + stem + ".crt", pem_of([&](BIO* b) { return PEM_write_bio_X509(b, renewed.get()); }),
                      0644);
  }
  return targets;
}

}  // namespace etcdadm
