#!/usr/bin/env bash
# Builds the container image the Kubernetes manifests run (docs/deploy/kubernetes: the backup
# sidecar beside etcd, `etcdadm auto` as a static pod) without a container daemon: a Debian 12
# root made by mmdebstrap from Debian's packages with the etcdadm .deb installed (apt pulls the
# libraries its Depends names) and ca-certificates (object stores over HTTPS), packed as one layer
# by umoci into an OCI image layout, tagged with the package's version and `latest`. Its
# entrypoint is /usr/bin/etcdadm, so a manifest's `args` are etcdadm's. It runs as root: the
# sidecar reads etcd's client key, which kubeadm and etcdadm keep 0600 root.
#
# Usage (as root on Debian 12): bash packaging/oci-image.sh DEB OUT_DIR
#   DEB      etcdadm_<version>_amd64.deb (scripts/package.sh builds it)
#   OUT_DIR  the OCI image layout to write (absent or empty)
# Then push or load it with skopeo (Debian's package), e.g.:
#   skopeo copy oci:OUT_DIR:latest docker://registry.example.com/etcdadm:0.1.0
#   skopeo copy oci:OUT_DIR:latest docker-archive:etcdadm.tar:etcdadm:latest   # `docker load -i`, `ctr images import`
# Needs mmdebstrap and umoci (apt-get install mmdebstrap umoci) and Debian's mirror.
# ETCDADM_OCI_APT_CACHE=DIR keeps the downloaded Debian packages there for the next build (apt
# checks each against the mirror's signed index before it installs it, as for a download).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bash packaging/oci-image.sh DEB OUT_DIR" >&2; exit 2; }
deb=$(readlink -f "$1")
out=$2
[ -f "$deb" ] || { echo "oci-image: no package at $1" >&2; exit 1; }
for tool in mmdebstrap umoci dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "oci-image: $tool is missing (apt-get install mmdebstrap umoci)" >&2; exit 1; }
done
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then echo "oci-image: $out is not empty" >&2; exit 1; fi
version=$(dpkg-deb -f "$deb" Version)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# minbase: essential packages and apt, nothing else; no device nodes in the layer (a runtime makes
# /dev); apt's lists and caches cleaned by mmdebstrap; no manual pages or locales.
cache_hooks=()
if [ -n "${ETCDADM_OCI_APT_CACHE:-}" ]; then
  mkdir -p "$ETCDADM_OCI_APT_CACHE"
  cache_hooks=(--setup-hook='mkdir -p "$1"/var/cache/apt/archives/'
               --setup-hook="sync-in $ETCDADM_OCI_APT_CACHE /var/cache/apt/archives/"
               --customize-hook="sync-out /var/cache/apt/archives $ETCDADM_OCI_APT_CACHE")
fi
# The hooks mmdebstrap ships put the local .deb where dpkg inside the root finds it, then remove it.
mmdebstrap --variant=minbase --skip=output/dev --include="ca-certificates,$deb" "${cache_hooks[@]}" \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$work/root.tar" >"$work/mmdebstrap.log" 2>&1 || { tail -30 "$work/mmdebstrap.log" >&2; exit 1; }

[ ! -e "$out" ] || rmdir "$out"  # umoci makes the layout's directory itself
umoci init --layout "$out"
umoci new --image "$out:$version"
umoci raw add-layer --image "$out:$version" \
  --history.created_by "packaging/oci-image.sh: mmdebstrap bookworm minbase + $(basename "$deb")" "$work/root.tar"
umoci config --image "$out:$version" --no-history --os linux --architecture amd64 --config.user 0:0 \
  --config.entrypoint /usr/bin/etcdadm --config.cmd=--help --config.workingdir / \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env ETCDADM_CATALOG=/var/cache/etcdadm/catalog.db \
  --config.label org.opencontainers.image.title=etcdadm \
  --config.label "org.opencontainers.image.version=$version"
umoci tag --image "$out:$version" latest
umoci gc --layout "$out"
echo "oci-image: $out holds etcdadm:$version and etcdadm:latest ($(du -sm "$out" | cut -f1) MiB)"
