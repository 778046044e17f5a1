#include "etcd/client_pool.h"

namespace etcdadm {

EtcdClientPool::EtcdClientPool(ConnectionConfig base) : base_(std::move(base)) {}

EtcdClient& EtcdClientPool::client(const std::string& endpoint) {
  used_.insert(endpoint);
  auto& slot = clients_[endpoint];
  if (!slot) {
    ConnectionConfig c = base_;
    c.endpoints = {endpoint};
    slot = std::make_unique<EtcdClient>(c);
  }
  return *slot;
}

void EtcdClientPool::forget_unused() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    it = used_.count(it->first) ? std::next(it) : clients_.erase(it);
  }
  used_.clear();
}

void EtcdClientPool::reset() {
  clients_.clear();
  used_.clear();
}

}  // namespace etcdadm
