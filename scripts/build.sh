#!/usr/bin/env bash
# Configures (Release, warnings as errors) and builds everything into $BUILD_DIR (default: build/).
# Extra arguments are passed to the configure step, e.g. -DTESSERA_SANITIZERS=address,undefined.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=ON "$@"
cmake --build "$BUILD_DIR" -j"$(nproc)"
