#!/usr/bin/env bash
# From a fresh clone to a benchmark: install dependencies, build, and run `tessera bench` on the
# default model (.models/default.onnx, PP-OCRv4 text detection; see docs/MODELS.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
bash scripts/setup.sh
bash scripts/build.sh
"$BUILD_DIR/tessera" bench "$@"
