#!/usr/bin/env bash
# Installs everything etcdadm needs to build and test on Debian 12, from Debian packages only.
# Idempotent: safe to run again; apt-get skips what is already there.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
packages=(
  # toolchain
  build-essential cmake pkg-config git ca-certificates
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcurl4-openssl-dev libxml2-dev libssl-dev zlib1g-dev libzstd-dev libisal-dev libarchive-dev
  nlohmann-json3-dev libspdlog-dev libfmt-dev libsqlite3-dev libcli11-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev
  # real etcd for the tests and the quick start, plus tools the tests use as oracles
  etcd-server etcd-client openssl procps python3 gzip zstd
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all packages present"
  exit 0
fi
echo "install-deps.sh: installing ${missing[*]}"
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
# The etcd-server package enables a service; we never want a system etcd running on the default ports.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  systemctl stop etcd || true
fi
