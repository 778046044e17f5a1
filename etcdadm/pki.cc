#include "etcdadm/pki.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
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
#include "common/parallel.h"
#include "common/sha256.h"
#include "etcdadm/member_config.h"

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

std::string cert_pem(X509* x) {
  return pem_of([&](BIO* b) { return PEM_write_bio_X509(b, x); });
}

std::string key_pem(EVP_PKEY* k) {
  return pem_of([&](BIO* b) { return PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr); });
}

bool same_public_key(X509* a, X509* b) { return EVP_PKEY_eq(X509_get0_pubkey(a), X509_get0_pubkey(b)) == 1; }

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
  write_file_atomic(dir + "/" + stem + ".key", key_pem(key), 0600);
  write_file_atomic(dir + "/" + stem + ".crt", cert_pem(cert), 0644);
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
          ca                          ? "critical,keyCertSign,cRLSign,digitalSignature"
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
  for (const auto& h : {s.name, std::string(kIpv4Loopback), std::string("localhost")}) {
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
  std::vector<X509Ptr> chain = parse_pem_certs(read_file(path));
  if (chain.empty()) throw Error(ErrorKind::kCorrupt, path + " is not a PEM certificate");
  X509* cert = chain[0].get();
  const std::string fix = "delete the member certificates (or run `etcdadm reset`) to have them issued again";
  // Issued by this CA, or (a CA rotation under way) by the new CA whose cross certificate this CA issued.
  const bool through_cross = chain.size() > 1 && X509_verify(chain[1].get(), X509_get0_pubkey(ca)) == 1 &&
                             X509_verify(cert, X509_get0_pubkey(chain[1].get())) == 1;
  if (!through_cross && X509_verify(cert, X509_get0_pubkey(ca)) != 1) {
    ERR_clear_error();
    throw Error(ErrorKind::kTls, path + " was not issued by the CA in the same directory", fix);
  }
  std::vector<std::string> sans = sans_of(cert);
  for (const auto& h : required_hosts) {
    std::string want = (is_ip(h) ? "IP:" : "DNS:") + h;
    if (h.empty() || std::find(sans.begin(), sans.end(), want) != sans.end()) continue;
    std::string listed;
    for (const auto& x : sans) listed += (listed.empty() ? "" : ", ") + x;
    throw Error(ErrorKind::kInvalidArgument, path + " is not valid for " + h + " (its SANs: " + listed + ")", fix);
  }
}

// Issues `stem`'s leaf again by `ca` with its key, subject and SANs, `validity` from now. The file
// holds the leaf, then `cross` when given; else a cross certificate the old file carried for `ca`
// (a rotation's, after its switch) is kept, so that clients that trust only the old CA still verify it.
void reissue_leaf(const std::string& dir, const std::string& stem, X509* ca, EVP_PKEY* ca_key,
                  std::chrono::hours validity, X509* cross) {
  std::vector<X509Ptr> old = parse_pem_certs(read_file(dir + "/" + stem + ".crt"));
  if (old.empty()) throw Error(ErrorKind::kCorrupt, dir + "/" + stem + ".crt is not a PEM certificate");
  KeyPtr key = read_key(dir + "/" + stem + ".key");
  if (X509_check_private_key(old[0].get(), key.get()) != 1) {
    throw Error(ErrorKind::kCorrupt, stem + ".key does not belong to " + stem + ".crt in " + dir);
  }
  std::vector<std::string> hosts;
  for (const auto& san : sans_of(old[0].get())) hosts.push_back(san.substr(san.find(':') + 1));
  X509Ptr renewed = issue(key.get(), name_entry(X509_get_subject_name(old[0].get()), NID_commonName),
                          name_entry(X509_get_subject_name(old[0].get()), NID_organizationName), validity, ca, ca_key,
                          false, ext_key_usage_for(stem), san_list(hosts));
  std::string pem = cert_pem(renewed.get());
  if (cross != nullptr) {
    pem += cert_pem(cross);
  } else if (old.size() > 1 && same_public_key(old[1].get(), ca) &&
             X509_cmp_time(X509_get0_notAfter(old[1].get()), nullptr) > 0) {
    pem += cert_pem(old[1].get());
  }
  write_file_atomic(dir + "/" + stem + ".crt", pem, 0644);
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
  const KeyAlgorithm algorithm = spec.key_algorithm.value_or(
      describe_key(X509_get0_pubkey(ca.get())) == "ecdsa-p256" ? KeyAlgorithm::kEcdsaP256 : KeyAlgorithm::kRsa2048);
  std::vector<Leaf> missing;
  for (const auto& leaf : leaves_for(spec)) {
    const std::string crt = spec.certs_dir + "/" + leaf.stem + ".crt";
    if (path_exists(crt) && path_exists(spec.certs_dir + "/" + leaf.stem + ".key")) {
      check_existing_leaf(crt, ca.get(), leaf.hosts);
    } else {
      missing.push_back(leaf);
    }
  }
  // An RSA-2048 key takes 0.1-0.5 s of one core to find (a restore's critical path on every host
  // at once): the keys are made side by side.
  std::vector<KeyPtr> keys(missing.size());
  for_each_index_in_parallel(missing.size(), missing.size(), [&](size_t i) { keys[i] = generate_key(algorithm); });
  std::vector<std::string> issued;
  for (size_t i = 0; i < missing.size(); ++i) {
    const Leaf& leaf = missing[i];
    X509Ptr c = issue(keys[i].get(), leaf.cn, leaf.org, spec.leaf_validity, ca.get(), ca_key.get(), false,
                      ext_key_usage_for(leaf.stem), san_list(leaf.hosts));
    write_pair(spec.certs_dir, leaf.stem, c.get(), keys[i].get());
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
  for (const auto& stem : targets) reissue_leaf(dir, stem, ca.get(), ca_key.get(), validity, nullptr);
  return targets;
}

namespace {

struct ParsedRotation {
  X509Ptr cert, cross;
  KeyPtr key;
};

ParsedRotation parse_rotation(const RotationCa& r) {
  ParsedRotation p{parse_pem_cert(r.cert_pem), parse_pem_cert(r.cross_pem), parse_pem_key(r.key_pem)};
  if (!p.cert || !p.cross || !p.key) {
    ERR_clear_error();
    throw Error(ErrorKind::kCorrupt, "the rotation's CA is not a PEM certificate, key and cross certificate");
  }
  return p;
}

}  // namespace

RotationCa make_rotation_ca(const std::string& dir) {
  X509Ptr ca = read_cert(dir + "/ca.crt");
  KeyPtr ca_key = read_key(dir + "/ca.key");
  const bool ecdsa = describe_key(X509_get0_pubkey(ca.get())) == "ecdsa-p256";
  KeyPtr key = generate_key(ecdsa ? KeyAlgorithm::kEcdsaP256 : KeyAlgorithm::kRsa2048);
  // A subject of its own: certificates of the two CAs never share an issuer name.
  const std::string cn = "etcd-" + format_rfc3339_seconds(std::chrono::system_clock::now());
  X509Ptr cert = issue(key.get(), cn, "", std::chrono::hours(24 * 365 * 10), nullptr, nullptr, true, "", "");
  // The cross certificate: the same subject and key, issued by the current CA for as long as it is valid.
  X509Ptr cross = issue(key.get(), cn, "", std::chrono::hours(24 * 365 * 10), ca.get(), ca_key.get(), true, "", "");
  X509_set1_notAfter(cross.get(), X509_get0_notAfter(ca.get()));
  if (X509_sign(cross.get(), ca_key.get(), EVP_sha256()) == 0) ssl_fail("signing the cross certificate");
  return RotationCa{cert_pem(cert.get()), key_pem(key.get()), cert_pem(cross.get())};
}

void check_rotation_ca(const std::string& old_ca_cert_path, const RotationCa& r) {
  X509Ptr ca = read_cert(old_ca_cert_path);
  ParsedRotation p = parse_rotation(r);
  auto fail = [](const std::string& what) {
    throw Error(ErrorKind::kCorrupt, "the rotation's CA is not usable: " + what);
  };
  if (X509_check_private_key(p.cert.get(), p.key.get()) != 1) fail("its key does not belong to its certificate");
  if (X509_check_ca(p.cert.get()) <= 0 || X509_check_issued(p.cert.get(), p.cert.get()) != X509_V_OK ||
      X509_verify(p.cert.get(), X509_get0_pubkey(p.cert.get())) != 1) {
    fail("its certificate is not a self-signed CA");
  }
  if (X509_cmp_time(X509_get0_notBefore(p.cert.get()), nullptr) > 0 ||
      X509_cmp_time(X509_get0_notAfter(p.cert.get()), nullptr) < 0) {
    fail("its certificate is not valid now");
  }
  if (!same_public_key(p.cross.get(), p.cert.get()) ||
      X509_NAME_cmp(X509_get_subject_name(p.cross.get()), X509_get_subject_name(p.cert.get())) != 0) {
    fail("the cross certificate is not for the new CA's subject and key");
  }
  if (X509_check_ca(p.cross.get()) <= 0 || X509_verify(p.cross.get(), X509_get0_pubkey(ca.get())) != 1) {
    fail("the cross certificate was not issued by " + old_ca_cert_path);
  }
  if (same_public_key(p.cert.get(), ca.get())) fail("it has the current CA's key");
  ERR_clear_error();
}

std::vector<std::string> reissue_under_rotation_ca(const std::string& dir, const RotationCa& r,
                                                   std::chrono::hours validity) {
  check_rotation_ca(dir + "/ca.crt", r);
  ParsedRotation p = parse_rotation(r);
  std::vector<std::string> stems;
  for (const auto& stem : member_cert_names()) {
    if (!path_exists(dir + "/" + stem + ".crt")) continue;
    reissue_leaf(dir, stem, p.cert.get(), p.key.get(), validity, p.cross.get());
    stems.push_back(stem);
  }
  return stems;
}

void adopt_rotation_ca(const std::string& dir, const RotationCa& r, const std::string& retired_label) {
  const std::string current = read_file(dir + "/ca.crt");
  if (current == r.cert_pem) return;
  ParsedRotation p = parse_rotation(r);
  for (const auto& ext : {".crt", ".key"}) {
    const std::string retired = dir + "/ca.retired-" + retired_label + ext;
    if (!path_exists(retired))
      write_file_atomic(retired, read_file(dir + "/ca" + ext), std::string(ext) == ".key" ? 0600 : 0644);
  }
  // The key first (as write_pair): killed between the two, ca.key is the new CA's and ca.crt the
  // old one's, which ensure_ca reports as a pair that does not match; the retired copies hold the old.
  write_file_atomic(dir + "/ca.key", r.key_pem, 0600, /*overwrite=*/true);
  write_file_atomic(dir + "/ca.crt", r.cert_pem, 0644, /*overwrite=*/true);
}

namespace {

constexpr size_t kSealNonce = 12, kSealTag = 16;

// HKDF-SHA-256 over the key's DER encoding: only a holder of the private key can compute it.
std::string derive_from_key(EVP_PKEY* key, std::string_view salt, std::string_view info) {
  unsigned char* der = nullptr;
  const int der_len = i2d_PrivateKey(key, &der);
  if (der_len <= 0) ssl_fail("encoding the CA key");
  std::string ikm(reinterpret_cast<char*>(der), static_cast<size_t>(der_len));
  OPENSSL_clear_free(der, static_cast<size_t>(der_len));
  std::string out = hkdf_sha256(ikm, salt, info);
  OPENSSL_cleanse(ikm.data(), ikm.size());
  return out;
}

std::string seal_key(const std::string& ca_key_path, const std::string& context) {
  return derive_from_key(read_key(ca_key_path).get(), "etcdadm-ca-seal/1", context);
}

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

}  // namespace

std::string seal_for_ca_holders(const std::string& ca_key_path, const std::string& context, const std::string& plain) {
  std::string key = seal_key(ca_key_path, context);
  std::string out(kSealNonce + plain.size() + kSealTag, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, kSealNonce) != 1) ssl_fail("random nonce");
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  const bool ok =
      ctx &&
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                         o) == 1 &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(context.data()),
                        static_cast<int>(context.size())) == 1 &&
      EVP_EncryptUpdate(ctx.get(), o + kSealNonce, &len, reinterpret_cast<const unsigned char*>(plain.data()),
                        static_cast<int>(plain.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx.get(), o + kSealNonce + len, &len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kSealTag, o + kSealNonce + plain.size()) == 1;
  OPENSSL_cleanse(key.data(), key.size());
  if (!ok) ssl_fail("AES-256-GCM sealing");
  return out;
}

std::string open_sealed(const std::string& ca_key_path, const std::string& context, const std::string& sealed) {
  if (sealed.size() < kSealNonce + kSealTag) throw Error(ErrorKind::kAuth, "the sealed text is too short to be one");
  std::string key = seal_key(ca_key_path, context);
  const auto* in = reinterpret_cast<const unsigned char*>(sealed.data());
  const size_t n = sealed.size() - kSealNonce - kSealTag;
  std::string plain(n, '\0');
  std::string tag = sealed.substr(kSealNonce + n);
  CipherCtx ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  int len = 0;
  bool ok = ctx &&
            EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr,
                               reinterpret_cast<const unsigned char*>(key.data()), in) == 1 &&
            EVP_DecryptUpdate(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(context.data()),
                              static_cast<int>(context.size())) == 1 &&
            EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &len, in + kSealNonce,
                              static_cast<int>(n)) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kSealTag, tag.data()) == 1;
  ok = ok && EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()) + len, &len) == 1;
  OPENSSL_cleanse(key.data(), key.size());
  ERR_clear_error();
  if (!ok) {
    OPENSSL_cleanse(plain.data(), plain.size());
    throw Error(ErrorKind::kAuth,
                "the sealed text does not open with " + ca_key_path + " (sealed for another CA, forged or damaged)");
  }
  return plain;
}

std::string ca_authentication_key(const std::string& ca_key_pem, const std::string& context) {
  KeyPtr key = parse_pem_key(ca_key_pem);
  if (!key) throw Error(ErrorKind::kCorrupt, "not a PEM private key");
  return derive_from_key(key.get(), "etcdadm-ca-auth/1", context);
}

}  // namespace etcdadm
