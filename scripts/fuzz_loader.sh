#!/usr/bin/env bash
# Builds the model-loader fuzzer (clang, libFuzzer, ASan + UBSan) in build-fuzz and runs it.
#
#   scripts/fuzz_loader.sh [SECONDS=600] [extra libFuzzer flags...]
#
# The whole library is instrumented (-fsanitize=fuzzer-no-link,address,undefined) so that coverage
# guides the fuzzer through the loader and any memory error or undefined behaviour stops it. Units it
# finds go to build-fuzz/fuzz-run/corpus (the checked-in seeds in tests/fuzz/corpus stay small);
# crashing inputs go to build-fuzz/fuzz-run/artifacts. JOBS sets the build parallelism (default 2).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_TO_RUN=${1:-600}
shift || true
BUILD_DIR="$ROOT/build-fuzz"
RUN_DIR="$BUILD_DIR/fuzz-run"

SANITIZE="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
# Warnings are enforced by the regular (gcc) build; clang's extra ones must not block fuzzing.
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_FLAGS="$SANITIZE" -DCMAKE_CXX_FLAGS="$SANITIZE" \
  -DTESSERA_BUILD_FUZZERS=ON -DTESSERA_BUILD_TESTS=OFF -DTESSERA_WERROR=OFF
ninja -C "$BUILD_DIR" -j"${JOBS:-2}" fuzz_model_loader

mkdir -p "$RUN_DIR/corpus" "$RUN_DIR/artifacts" "$RUN_DIR/tmp"
# The fuzz target keeps its external-data folder under TMPDIR.
export TMPDIR="$RUN_DIR/tmp"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$BUILD_DIR/fuzz_model_loader" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -rss_limit_mb=4096 \
  -artifact_prefix="$RUN_DIR/artifacts/" -print_final_stats=1 "$@" \
  "$RUN_DIR/corpus" "$ROOT/tests/fuzz/corpus"
