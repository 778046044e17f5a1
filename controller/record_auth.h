// Record authentication: the records that make the controllers act (the spec, a plan, a version
// turn, the maintenance record, a host's record, a restore's approval) carry an authenticator that
// only a holder of the cluster CA's private key can make, so that write access to the store is not
// command of the cluster (docs/security.md, "What a store writer can make `etcdadm auto` do").
//
// Protocol 1 (docs/self-management.md, "Record authentication"): the record is one JSON object
// with a member "auth": {"v": 1, "hmac": <64 lower-case hex>}, the HMAC-SHA-256 under
// ca_authentication_key(<the CA's key>, "etcdadm-auto records") of
//   "etcdadm-auto-record/1\n" + <the record's store key> + "\n" + <the object without "auth",
//   serialized canonically: members sorted by name (bytewise), no whitespace, strings as UTF-8 with
//   only '"', '\' and control characters escaped (\b \f \n \r \t, others \u00xx), integers in decimal>
// The store key is covered so that a record cannot be replayed under another name (one host's
// record as another's, a turn as a plan).
#pragma once

#include <string>
#include <vector>

namespace etcdadm {

// A record as read: authenticated by a CA key this host holds; without an authenticator (written
// by an older etcdadm, by etcd-manager-ctl, by hand); or with one that no key here verifies (forged,
// altered, moved to another key, or signed by a CA this host never held).
enum class RecordTrust { kAuthentic, kUnsigned, kForged };
const char* record_trust_name(RecordTrust trust);

class RecordKeyring {
 public:
  RecordKeyring() = default;  // no key: signs nothing, finds no record authentic
  // The CA keys in `certs_dir`: ca.key (which signs) and every ca.retired-*.key (the CAs this host
  // switched away from, whose holders may not have switched yet). A missing ca.key leaves a keyring
  // that cannot sign; an unreadable one is an error.
  static RecordKeyring of_certs_dir(const std::string& certs_dir);
  // Records signed by this key are authentic too (a CA rotation's new key, which the hosts that
  // switched sign with, opened from the rotation record by a host that has not switched yet).
  void accept_key(const std::string& ca_key_pem);
  bool can_sign() const { return signs_; }
  // `json_text` (one JSON object) with "auth" set for store key `key`; kInternal without a CA key.
  std::string sign(const std::string& key, const std::string& json_text) const;
  // kCorrupt when `json_text` is not a JSON object (the record's own parser names it further).
  RecordTrust check(const std::string& key, const std::string& json_text) const;
  // A short authenticator of `message` for where a whole record does not fit (a change log
  // segment's name, changelog/segment.h): the first 16 bytes of HMAC-SHA-256 under the signing
  // key, 32 lower-case hex digits. The message's own first line names what it is (its protocol), so
  // that no tag verifies as another kind. kInternal without a CA key.
  std::string tag(const std::string& message) const;
  // kAuthentic when a key here made `tag` for `message`; kUnsigned for an empty tag; else kForged.
  RecordTrust check_tag(const std::string& message, const std::string& tag) const;

 private:
  std::vector<std::string> keys_;  // derived authentication keys; keys_[0] signs when signs_
  bool signs_ = false;
};

// How a controller takes a record it would act on: an authentic one always; an unsigned one only
// where its host was told to (`etcdadm auto --accept-unsigned-records`: a spec etcd-manager-ctl
// wrote, records of an etcdadm before authentication); a forged one never.
struct RecordPolicy {
  const RecordKeyring* keyring = nullptr;
  bool accept_unsigned = false;
  // "" when the record `text` at store key `key` may be acted on, else why not (a whole sentence
  // naming the key). kCorrupt when it is no JSON object.
  std::string refusal(const std::string& key, const std::string& text) const;
  // kCorrupt with the refusal when there is one.
  void require(const std::string& key, const std::string& text) const;
};

}  // namespace etcdadm
