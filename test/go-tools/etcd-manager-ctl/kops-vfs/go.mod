// The local-filesystem part of kops' util/pkg/vfs (k8s.io/kops at the version etcd-manager v3.0.20260707
// pins), in place of the whole package for etcd-manager-ctl the test oracle: the real package
// links every cloud SDK kops supports (~170 modules to download on a cold machine), and the tests
// give etcd-manager-ctl only local stores. fs.go is kops' code, trimmed of hashing; vfs.go holds
// the interface etcd-manager uses; context.go only the file branch of BuildVfsPath.
module k8s.io/kops

go 1.25

require k8s.io/klog/v2 v2.140.0
