#!/usr/bin/env bash
# The container image the Kubernetes manifests run (packaging/oci-image.sh), built from the Debian
# package as a user builds it, and checked by the OCI tools: umoci reads the layout and unpacks the
# image into a runtime bundle (rootfs and the runtime spec an OCI runtime would run), and crun, an
# OCI runtime, runs the image's entrypoint from that bundle in namespaces of its own: `etcdadm
# version` answers with the package's version using only the image's own libraries, and the
# manifests' commands (docs/deploy/kubernetes) name a binary the image has on its PATH.
# Usage: oci_image_test.sh <build dir> <version>
set -euo pipefail
build=$1
version=$2
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack --config CPackConfig.cmake -G DEB -B "$work/out") >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
deb="$work/out/etcdadm_${version}_amd64.deb"
[ -f "$deb" ] || fail "no $deb"

start=$SECONDS
ETCDADM_OCI_APT_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/etcdadm/oci-apt-archives" \
  bash "$source_dir/packaging/oci-image.sh" "$deb" "$work/image"
echo "image built in $((SECONDS - start)) s"

# Both tags, one manifest; the config as the manifests need it.
umoci list --layout "$work/image" | sort >"$work/tags"
[ "$(tr '\n' ' ' <"$work/tags")" = "$version latest " ] || [ "$(tr '\n' ' ' <"$work/tags")" = "latest $version " ] ||
  fail "tags: $(cat "$work/tags")"
umoci stat --image "$work/image:latest" --json >"$work/stat.json"
python3 - "$work/stat.json" <<'PY' || fail "the image's history"
import json, sys
stat = json.load(open(sys.argv[1]))
history = stat["history"]
assert len(history) == 1 and "mmdebstrap" in history[0]["created_by"], history
PY

umoci unpack --image "$work/image:latest" "$work/bundle" >/dev/null
rootfs="$work/bundle/rootfs"
python3 - "$work/bundle/config.json" <<'PY' || fail "the runtime spec umoci wrote"
import json, sys
spec = json.load(open(sys.argv[1]))
p = spec["process"]
assert p["args"] == ["/usr/bin/etcdadm", "--help"], p["args"]
assert p["user"]["uid"] == 0, p["user"]
env = dict(e.split("=", 1) for e in p["env"])
assert env["ETCDADM_CATALOG"] == "/var/cache/etcdadm/catalog.db", env
assert "/usr/bin" in env["PATH"].split(":"), env
PY
[ -x "$rootfs/usr/bin/etcdadm" ] || fail "no /usr/bin/etcdadm in the image"
[ -f "$rootfs/etc/ssl/certs/ca-certificates.crt" ] || fail "no CA bundle in the image"
[ ! -e "$rootfs/usr/share/man/man1/etcdadm.1.gz" ] || fail "manual pages are left out of the image"
echo "image: $(du -sm "$work/image" | cut -f1) MiB stored, $(du -sm "$rootfs" | cut -f1) MiB unpacked"

# Run by an OCI runtime: the entrypoint with `version` instead of the default `--help`, no
# terminal, in the namespaces the spec umoci wrote gives it (pid, mount, network, ipc, uts).
python3 - "$work/bundle/config.json" <<'PY'
import json, sys
path = sys.argv[1]
spec = json.load(open(path))
spec["process"]["args"] = ["/usr/bin/etcdadm", "version"]
spec["process"]["terminal"] = False
json.dump(spec, open(path, "w"))
PY
# No cgroup of its own (--cgroup-manager=disabled): crun refuses a machine whose cgroup v1
# hierarchies sit beside a v2 one ("hybrid mode"), so in a mount namespace of its own the v2 mount
# is taken away first where there is one; the machine's mounts are not touched.
id="etcdadm-oci-test-$$"
out=$(unshare --mount --propagation private sh -c \
  'if mountpoint -q /sys/fs/cgroup/unified; then umount /sys/fs/cgroup/unified; fi
   exec crun --cgroup-manager=disabled run --bundle "$1" "$2"' sh "$work/bundle" "$id" 2>&1) ||
  { crun delete -f "$id" >/dev/null 2>&1 || true; fail "crun run: $out"; }
[ "$out" = "etcdadm $version" ] || fail "etcdadm version in the container: $out"
echo "crun ran the image: $out"

# Every container of the manifests that runs etcdadm's image starts this binary: its command is
# `etcdadm` (on the image's PATH) or absent (the entrypoint, with the manifest's args).
python3 - "$source_dir"/docs/deploy/kubernetes/*.yaml <<'PY' || fail "the manifests' etcdadm containers"
import sys, yaml
found = 0
for path in sys.argv[1:]:
    pod = yaml.safe_load(open(path))
    for c in pod["spec"]["containers"]:
        if "etcdadm" not in c["image"].rsplit("/", 1)[-1]:
            continue
        found += 1
        command = c.get("command")
        assert command is None or command[0] in ("etcdadm", "/usr/bin/etcdadm"), (path, command)
        assert command is not None or c.get("args"), (path, "neither command nor args")
assert found >= 2, found
PY
echo "OCI image OK"
