#!/usr/bin/env bash
# Builds the Debian package: build/etcdadm_<version>_amd64.deb (as root on Debian 12).
# Then: apt-get install ./build/etcdadm_<version>_amd64.deb   (pulls the runtime libraries)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
(cd build && cpack --config CPackConfig.cmake -G DEB -B "$(pwd)" >/dev/null)
ls "$(pwd)"/build/etcdadm_*_amd64.deb
