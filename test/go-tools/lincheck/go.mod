// lincheck: a history of key-value requests checked for linearizability with porcupine (a test
// oracle, never shipped). Source tool pinned in ../tools; built by scripts/go-test-tools.sh.
module etcdadm.test/lincheck

go 1.26.0

require github.com/anishathalye/porcupine v1.3.1
