// The member PKI, in etcdadm's layout and file names so existing installations keep working:
//   ca.crt/key                         CN etcd, 10 years (reused when present)
//   server.crt/key                     CN <name>, serverAuth+clientAuth, SANs: <name>, client hosts, 127.0.0.1, extras
//   peer.crt/key                       CN <name>, serverAuth+clientAuth, SANs: <name>, peer hosts, 127.0.0.1, extras
//   etcdctl-etcd-client.crt/key        CN <name>-etcdctl, O system:masters, clientAuth
//   apiserver-etcd-client.crt/key      CN <name>-kube-apiserver-etcd-client, O system:masters, clientAuth
// Keys are RSA 2048 unless the CA is created with another algorithm (--key-algorithm: kubeadm's
// encryptionAlgorithm); leaves get their CA's algorithm unless told otherwise. Leaves are valid
// 365 days by default; keys are PEM files with mode 0600, written atomically. Renewal keeps each certificate's key,
// subject and SANs and issues a new serial and validity (etcdadm's most requested missing feature). A CA rotation
// (docs/operations.md, "Rotating the cluster CA") adds, for its duration:
//   ca.crt/key stays the current CA until the host switches; the leaves are re-issued by the new CA
//   and each leaf file holds the leaf and then the cross-signed certificate of the new CA (its
//   subject and key, issued by the current CA), so that a peer or client that trusts only the
//   current CA still verifies them; at the switch the new CA becomes ca.crt/key and the old pair is
//   kept as ca.retired-<label>.crt/key.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/timefmt.h"

namespace etcdadm {

// The key types etcdadm issues. ECDSA P-256 keys take microseconds to make where RSA 2048 takes
// hundreds of milliseconds, and every etcd release and Kubernetes client accepts them.
enum class KeyAlgorithm { kRsa2048, kEcdsaP256 };

// "rsa-2048" / "ecdsa-p256" (kubeadm's RSA-2048 / ECDSA-P256 are accepted too); throws
// kInvalidArgument naming the accepted values.
KeyAlgorithm parse_key_algorithm(const std::string& text);
std::string key_algorithm_name(KeyAlgorithm algorithm);  // "rsa-2048", "ecdsa-p256"

// The algorithm of the key in a PEM certificate file ("rsa-2048", "ecdsa-p256", or a description
// such as "rsa-4096" or "ec-secp384r1" for keys etcdadm did not make).
std::string key_algorithm_of_cert(const std::string& cert_path);

struct MemberPkiSpec {
  std::string certs_dir;
  std::string name;
  std::vector<std::string> client_hosts;  // IPs or DNS names the member serves clients on
  std::vector<std::string> peer_hosts;    // IPs or DNS names peers reach it on
  std::vector<std::string> extra_sans;    // --server-cert-extra-sans
  std::chrono::hours leaf_validity{24 * 365};
  // New leaf keys: nullopt follows the CA's key (an ECDSA CA gets ECDSA leaves; any other, RSA).
  std::optional<KeyAlgorithm> key_algorithm;
};

// Certificate kinds by file stem.
inline const std::vector<std::string>& member_cert_names() {
  static const std::vector<std::string> names = {"server", "peer", "etcdctl-etcd-client", "apiserver-etcd-client"};
  return names;
}

// Creates ca.crt/ca.key (with a key of `algorithm`) unless both exist; an existing pair is checked
// to match and kept whatever its algorithm. Returns true when created.
bool ensure_ca(const std::string& certs_dir, KeyAlgorithm algorithm = KeyAlgorithm::kRsa2048);

// Issues the member certificates that do not exist yet (existing ones are kept). Needs the CA.
// Returns the stems issued.
std::vector<std::string> ensure_member_certs(const MemberPkiSpec& spec);

struct CertInfo {
  std::string name;  // file stem ("ca", "server", ...)
  std::string subject;
  std::string serial_hex;
  SystemTime not_before;
  SystemTime not_after;
  std::vector<std::string> sans;  // "DNS:x", "IP:1.2.3.4"
  bool is_ca = false;
  std::string key_algorithm;  // as key_algorithm_of_cert
};

// The certificates present in `certs_dir` (CA first).
std::vector<CertInfo> inspect_certs(const std::string& certs_dir);

// Re-issues the named leaf certificates (or all present when `which` is empty or {"all"}) with
// their existing keys, subjects and SANs, a new serial and `validity` from now. Returns the stems
// renewed. Throws kNotFound for a named certificate that does not exist.
std::vector<std::string> renew_certs(const std::string& certs_dir, const std::vector<std::string>& which,
                                     std::chrono::hours validity = std::chrono::hours(24 * 365));

// The new CA of a rotation and the cross-signed certificate that carries trust in it from the
// current one, as PEM text.
struct RotationCa {
  std::string cert_pem;  // self-signed, CN etcd-<UTC time>, 10 years, the current CA's key algorithm
  std::string key_pem;
  std::string cross_pem;  // the new CA's subject and key, issued by the current CA, valid as long as it
};

// Makes a rotation's CA for the CA in `certs_dir` (ca.crt/ca.key). Nothing is written.
RotationCa make_rotation_ca(const std::string& certs_dir);

// Checks a rotation's CA (read from a store: hostile) against the CA it replaces (its certificate
// file): the key is the certificate's, the certificate a self-signed CA valid now, the cross
// certificate the new CA's subject and key issued by the old CA. Throws kCorrupt naming what does
// not fit.
void check_rotation_ca(const std::string& old_ca_cert_path, const RotationCa& rotation);

// Re-issues the member leaves present in `certs_dir` by the rotation's CA with their keys, subjects
// and SANs, `validity` from now, each file the leaf then the cross certificate. Returns the stems.
std::vector<std::string> reissue_under_rotation_ca(const std::string& certs_dir, const RotationCa& rotation,
                                                   std::chrono::hours validity = std::chrono::hours(24 * 365));

// Makes the rotation's CA the CA of `certs_dir`: the current pair is kept as
// ca.retired-<label>.crt/key (never overwritten), then the new key and certificate are written.
// Idempotent: a directory whose ca.crt already is the rotation's is left as it is.
void adopt_rotation_ca(const std::string& certs_dir, const RotationCa& rotation, const std::string& retired_label);

// Sealing for the holders of a CA key: AES-256-GCM under a key derived with HKDF-SHA-256 from the
// CA's private key (its DER encoding; salt "etcdadm-ca-seal/1", info `context`), a random 96-bit
// nonce, `context` as the additional data. Only a holder of the key can read or forge the sealed
// text; a store that holds it learns nothing and can change nothing unnoticed. Output:
// nonce || ciphertext || tag. open_sealed throws kAuth when the text was not sealed with this key
// and context (another CA, a forged or damaged record).
std::string seal_for_ca_holders(const std::string& ca_key_path, const std::string& context, const std::string& plain);
std::string open_sealed(const std::string& ca_key_path, const std::string& context, const std::string& sealed);

// A key for authenticating (HMAC-SHA-256) what only holders of a CA's private key may write: HKDF-
// SHA-256 over the key's DER encoding (PKCS#8 or the algorithm's own, as OpenSSL's i2d_PrivateKey
// writes it), salt "etcdadm-ca-auth/1", info `context`; 32 bytes. kCorrupt when `ca_key_pem` is
// no private key.
std::string ca_authentication_key(const std::string& ca_key_pem, const std::string& context);

}  // namespace etcdadm
