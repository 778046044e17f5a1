// placeholder: being written
namespace etcdadm {}
