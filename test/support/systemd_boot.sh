#!/usr/bin/env bash
# Boots Debian 12's systemd as PID 1 of a host of its own (test/support/systemd_host.h): a pid,
# mount, cgroup, UTS and IPC namespace, chrooted into a writable overlay on the cached root tree of
# scripts/systemd-root.sh. Never the machine's own root: systemd-tmpfiles would empty its /tmp and
# systemd-sysctl change its kernel settings. Inside, /proc/sys and /sys are read-only (so
# systemd-sysctl's condition fails and the machine's settings are never written), /dev holds only
# the harmless nodes, /run and /tmp are the host's own tmpfs, and /sys/fs/cgroup is a cgroup2
# mount of a cgroup made for this host (under the machine's unified hierarchy), the root of the
# host's cgroup namespace. unshare's --kill-child: when this process dies, so does PID 1, and with
# it every process of the host.
#
# Usage: systemd_boot.sh TREE HOST_DIR NAME CGROUP ETCDADM_BINARY NETNS [SHARED_DIR...]
#   HOST_DIR gets upper/, work/ and root/ (the overlay's mount point); CGROUP is the cgroup2
#   directory to make and run in; NETNS the network namespace (`ip netns`) of a host with
#   addresses of its own, "" for the machine's; each SHARED_DIR is bind-mounted at its own path
#   inside (the test's temp dir: its release files, its store).
set -euo pipefail
[ $# -ge 6 ] || { echo "usage: systemd_boot.sh TREE HOST_DIR NAME CGROUP ETCDADM_BINARY NETNS [SHARED_DIR...]" >&2; exit 2; }
tree=$1 host_dir=$2 name=$3 cgroup=$4 binary=$5 netns=$6
shift 6
mkdir -p "$host_dir/upper" "$host_dir/work" "$host_dir/root" "$cgroup"
echo $$ >"$cgroup/cgroup.procs"
# Into the network namespace after the cgroup: `ip netns exec` mounts a sysfs of that namespace
# over /sys, which hides the machine's cgroup hierarchy. It execs, so the PID stays this one.
enter_netns=()
[ -z "$netns" ] || enter_netns=(ip netns exec "$netns")
exec "${enter_netns[@]}" unshare --kill-child --pid --fork --mount --cgroup --uts --ipc --propagation private -- bash -c '
set -euo pipefail
tree=$1 host_dir=$2 name=$3 binary=$4
shift 4
r=$host_dir/root
ro_bind() { mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"; }
mount -t overlay overlay -o "lowerdir=$tree,upperdir=$host_dir/upper,workdir=$host_dir/work" "$r"
mount -t proc proc "$r/proc"
ro_bind "$r/proc/sys"
[ ! -e "$r/proc/sysrq-trigger" ] || ro_bind "$r/proc/sysrq-trigger"
mount -t sysfs -o ro sysfs "$r/sys"
mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
mount -t tmpfs -o mode=755 tmpfs "$r/dev"
for node in null zero full random urandom tty; do
  touch "$r/dev/$node"
  mount --bind "/dev/$node" "$r/dev/$node"
done
mkdir -p "$r/dev/pts" "$r/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$r/dev/pts"
ln -s pts/ptmx "$r/dev/ptmx"
mount -t tmpfs tmpfs "$r/dev/shm"
mount -t tmpfs tmpfs "$r/run"
mount -t tmpfs tmpfs "$r/tmp"
touch "$r/usr/bin/etcdadm"
mount --bind "$binary" "$r/usr/bin/etcdadm"
for shared in "$@"; do
  mkdir -p "$r$shared"
  mount --bind "$shared" "$r$shared"
done
hostname "$name"
echo "$name" >"$r/etc/hostname"
exec env -i container=etcdadm-test ETCDADM_TEST_PROCESS="${ETCDADM_TEST_PROCESS:-}" /usr/sbin/chroot "$r" /lib/systemd/systemd
' systemd_boot "$tree" "$host_dir" "$name" "$binary" "$@"
