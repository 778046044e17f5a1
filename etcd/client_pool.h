// One EtcdClient per endpoint, kept across calls: a caller that asks the same members every few
// seconds (the controller of `etcdadm auto`) pays for each connection and TLS handshake once, not
// on every round. Not thread-safe: one owner thread.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "etcd/client.h"

namespace etcdadm {

class EtcdClientPool {
 public:
  // `base`: TLS material and timeouts of every client; its endpoints are ignored.
  explicit EtcdClientPool(ConnectionConfig base);
  // The client of `endpoint` (its only endpoint), made on first use.
  EtcdClient& client(const std::string& endpoint);
  // Drops the clients no call to client() asked for since the last forget_unused(): members that
  // went away do not keep connections (and their reconnect attempts) alive.
  void forget_unused();
  // Drops every client: the next calls connect afresh (after certificates were issued again).
  void reset();
  size_t size() const { return clients_.size(); }

 private:
  ConnectionConfig base_;
  std::map<std::string, std::unique_ptr<EtcdClient>> clients_;
  std::set<std::string> used_;
};

}  // namespace etcdadm
