#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (unit + end-to-end against real etcd 3.4, 3.5,
# 3.6 and 3.7 on loopback). Usage (as root on Debian 12): bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --with-test-servers
# etcd 3.5, 3.6 and 3.7 for the version matrix, built from etcd's Go modules (cached; see docs/etcd-versions.md)
bash scripts/etcd-versions.sh
# Outside oracles built from Go modules (fake-gcs-server, MinIO; cached): test/go-tools/tools
bash scripts/go-test-tools.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j2 --timeout 600
