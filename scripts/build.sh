#!/usr/bin/env bash
# Configures and builds etcdadm into ./build (Release with debug info).
# Usage: scripts/build.sh [TARGET ...]   (default: everything, tests included; `etcdadm` alone is
#                                         what the quick start needs)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"${JOBS:-2}" "${targets[@]}"
echo "built: $(pwd)/build/cmd/etcdadm"
