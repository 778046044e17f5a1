#!/usr/bin/env bash
# The Debian 12 root tree the tests boot systemd in (test/support/systemd_host.h): systemd as PID 1
# of a pid and mount namespace of its own, chrooted into a per-host overlay on this tree, never on
# the machine's own root (systemd-tmpfiles would empty its /tmp, systemd-sysctl change its kernel
# settings). Built by mmdebstrap from Debian's packages: minbase, systemd, dbus, what the tests ask
# of a host (iproute2, curl, procps), and the libraries the etcdadm binary under test links (each
# shared library `ldd` names, mapped to its Debian package by `dpkg -S`), so that the build's own
# binary runs inside unchanged (bind-mounted in; the tree holds no etcdadm of its own).
#
# Usage (as root): bash scripts/systemd-root.sh ETCDADM_BINARY
#   Builds the tree when missing and points <dir of ETCDADM_BINARY>/systemd-root at it.
# Cache: ${ETCDADM_SYSTEMD_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdadm/systemd-roots}/<key>/tree,
# the key being 16 hex digits of the SHA-256 of the sorted package list (a new library linked
# builds a new tree; trees of older keys are left for `rm -rf`). The downloaded packages are kept
# beside them (apt checks each against the mirror's signed index before installing it).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bash scripts/systemd-root.sh ETCDADM_BINARY" >&2; exit 2; }
binary=$(readlink -f "$1")
[ -x "$binary" ] || { echo "systemd-root: no executable at $1" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "systemd-root: mmdebstrap is missing (apt-get install mmdebstrap)" >&2; exit 1; }
cache="${ETCDADM_SYSTEMD_ROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdadm/systemd-roots}"

# The package of each library the binary loads. Debian 12 merged /lib into /usr/lib, and dpkg
# knows each file by the path its package ships it under: each is asked under both spellings, in
# one dpkg call (one per library took 11 s), and each library must be found under one of them.
libraries=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
spellings=()
for lib in $libraries; do
  spellings+=("$lib" "/usr${lib#/usr}" "${lib#/usr}")
done
owners=$(dpkg -S "${spellings[@]}" 2>/dev/null || true)  # "package[:arch]: /path" per path found
packages=(systemd systemd-sysv dbus iproute2 curl procps ca-certificates)
for lib in $libraries; do
  owner=$(awk -v a="$lib" -v b="/usr${lib#/usr}" -v c="${lib#/usr}" \
            '{path = $NF} path == a || path == b || path == c {sub(/:.*/, "", $1); print $1; exit}' <<<"$owners")
  [ -n "$owner" ] || { echo "systemd-root: no Debian package ships $lib (linked by $binary)" >&2; exit 1; }
  packages+=("$owner")
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
key=$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)
dir="$cache/$key"
link="$(dirname "$binary")/systemd-root"

if [ ! -f "$dir/complete" ]; then
  start=$SECONDS
  rm -rf "$dir"
  mkdir -p "$dir" "$cache/apt-archives"
  list=$(IFS=,; echo "${packages[*]}")
  # Directory output (the overlay's lower layer). No manual pages or locales; the apt lists are
  # cleaned by mmdebstrap. machine-id left empty: systemd makes one per boot in a container.
  if ! mmdebstrap --variant=minbase --include="$list" --format=directory \
      --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
      --setup-hook="sync-in $cache/apt-archives /var/cache/apt/archives/" \
      --customize-hook="sync-out /var/cache/apt/archives $cache/apt-archives" \
      --customize-hook='rm -f "$1"/etc/machine-id && touch "$1"/etc/machine-id' \
      bookworm "$dir/tree" >"$dir/mmdebstrap.log" 2>&1; then
    tail -30 "$dir/mmdebstrap.log" >&2
    echo "systemd-root: mmdebstrap failed (log above)" >&2
    exit 1
  fi
  printf '%s\n' "${packages[@]}" >"$dir/packages"
  touch "$dir/complete"
  echo "systemd-root: built $dir/tree in $((SECONDS - start)) s ($(du -sm "$dir/tree" | cut -f1) MiB, ${#packages[@]} packages asked)"
else
  echo "systemd-root: $dir/tree (cached)"
fi
ln -sfn "$dir/tree" "$link"
