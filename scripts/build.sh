#!/usr/bin/env bash
# Configures and builds etcdadm into ./build (Release with debug info). Usage: scripts/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${JOBS:-2}"
echo "built: $(pwd)/build/cmd/etcdadm"
