#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (unit + end-to-end against real etcd on
# loopback). Usage (as root on Debian 12): bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --with-test-servers
bash scripts/build.sh
cd build
ctest --output-on-failure -j2 --timeout 600
