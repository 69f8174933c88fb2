#!/bin/bash
# Installs ONNX Runtime 1.30.0 (CPU) for the side-by-side bench (bench/compare_ort.mjs) from the npm package
# onnxruntime-node, into the gitignored .deps/ort-node. Optional: no build or test depends on it.
#
# --ignore-scripts skips the package's install script (which would download GPU binaries); the CPU
# library ships in the package itself: bin/napi-v6/linux/x64/libonnxruntime.so.1 next to the Node.js
# binding onnxruntime_binding.node.
#
#   bash scripts/fetch_onnxruntime.sh        # prints the library path and the runtime version
set -euo pipefail

cd "$(dirname "$0")/.."
PREFIX=.deps/ort-node
VERSION=1.30.0

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "fetch_onnxruntime.sh: node and npm are required (apt-get install nodejs npm)" >&2
  exit 1
fi
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --ignore-scripts --no-audit --no-fund "onnxruntime-node@$VERSION"

PACKAGE="$PREFIX/node_modules/onnxruntime-node"
LIBRARY="$PACKAGE/bin/napi-v6/linux/x64/libonnxruntime.so.1"
[ -f "$LIBRARY" ] || { echo "fetch_onnxruntime.sh: $LIBRARY is missing" >&2; exit 1; }
# Check that the binding loads and reports the pinned version.
node --input-type=module -e "
import ort from '$PWD/$PACKAGE/dist/index.js';
const version = ort.env.versions.node;
if (version !== '$VERSION') { console.error('unexpected onnxruntime-node version ' + version); process.exit(1); }
console.log('onnxruntime-node ' + version + ': $LIBRARY');
"
