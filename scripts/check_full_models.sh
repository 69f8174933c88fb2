#!/usr/bin/env bash
# Full-size reference check (not part of CI: ~0.5 GB of models, a few minutes on 2 cores): exports
# ResNet-50 (1x3x224x224) and BERT-base (1x128 tokens) with PyTorch and runs the same comparison as
# tests/models/model_test.cc on them (max|tessera - torch| / max|torch| < 1e-4 per output).
# The export is redone only when scripts/export_models.py changed since the last one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
MODELS_DIR="$PWD/$BUILD_DIR/models_full"
STAMP="$MODELS_DIR/.exported"

bash scripts/build.sh
if [[ ! -f "$STAMP" || scripts/export_models.py -nt "$STAMP" ]]; then
  /usr/bin/python3 scripts/export_models.py --out "$MODELS_DIR"
  touch "$STAMP"
fi

LOG="$BUILD_DIR/check_full_models.log"
TESSERA_MODELS_DIR="$MODELS_DIR" "$BUILD_DIR/tessera_tests" --gtest_filter='ReferenceModelTest.*' | tee "$LOG"
if grep -q '\[  SKIPPED \]' "$LOG"; then
  echo "check_full_models.sh: FAILED: a model was skipped (see above)" >&2
  exit 1
fi
echo "check_full_models.sh: PASSED"
