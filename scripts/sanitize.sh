#!/usr/bin/env bash
# The sanitizer job (issue 18), run by scripts/test.sh after the regular tests (SANITIZE=0 skips it):
#
# 1. build-asan: clang, AddressSanitizer + UndefinedBehaviorSanitizer (any report stops the process) and
#    libFuzzer's coverage on the whole library; builds the unit tests (tests/unit, `tessera_unit_tests`) and the
#    model-loader fuzzer from the same objects, runs every unit test, then FUZZ_SECONDS (60) of fuzzing from the
#    checked-in seeds (tests/fuzz/corpus).
# 2. build-tsan: clang, ThreadSanitizer; runs the unit tests that run sessions, arenas, stream pools, thread
#    pools and the tile pipeline's host threads from several threads at once (TSAN_FILTER). tests/tsan.supp
#    silences the OpenMP runtime and oneDNN, which are not instrumented; tests/lsan.supp the OpenMP runtime's
#    per-thread memory.
#
#   bash scripts/sanitize.sh [asan|tsan]...        (default: both; logs in build-asan/, build-tsan/)
#
# Neither build includes the CUDA EP (TESSERA_BUILD_CUDA=OFF) or the Python package. The builds are incremental:
# a second run recompiles only what changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
TSAN_FILTER=${TSAN_FILTER:-'*Concurrent*:*AtOnce*:*Threads*:StreamPoolTest.*:MultiDeviceTest.*:ThreadPoolTest.*:RunDeadlineTest.*:TilePipelineTest.*:CallerStreamTest.*'}
JOBS_TO_RUN=("$@")
((${#JOBS_TO_RUN[@]})) || JOBS_TO_RUN=(asan tsan)

configure() {  # configure DIR SANITIZERS EXTRA_FLAGS [cmake args...]
  local dir=$1 sanitizers=$2 flags=$3
  shift 3
  # -O1 with line tables: stacks name file and line, and the build takes far less than -O2 -g.
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE= \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_FLAGS="-O1 -gline-tables-only $flags" -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only $flags" \
    -DTESSERA_SANITIZERS="$sanitizers" \
    -DTESSERA_BUILD_CUDA=OFF -DTESSERA_BUILD_PYTHON=OFF -DTESSERA_BUILD_EXAMPLES=OFF -DTESSERA_WERROR=OFF "$@" \
    >"$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log"; return 1; }
}

run_asan() {
  local dir="$ROOT/build-asan"
  mkdir -p "$dir"
  configure "$dir" address,undefined "-fsanitize=fuzzer-no-link" -DTESSERA_BUILD_FUZZERS=ON
  ninja -C "$dir" -j"$JOBS" tessera_unit_tests fuzz_model_loader >"$dir/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$dir/build.log" | head -30; return 1; }
  echo "sanitize.sh: ASan+UBSan unit tests"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp" "$dir/tessera_unit_tests" --gtest_brief=1 >"$dir/unit_tests.log" 2>&1 ||
    { grep -E "ERROR: |runtime error|FAILED|SUMMARY" "$dir/unit_tests.log" | head -40; return 1; }
  grep -E "tests? from .* ran|^\[  (PASSED|SKIPPED) " "$dir/unit_tests.log"
  echo "sanitize.sh: fuzzing the model loader for ${FUZZ_SECONDS} s"
  mkdir -p "$dir/fuzz-run/corpus" "$dir/fuzz-run/artifacts" "$dir/fuzz-run/tmp"
  TMPDIR="$dir/fuzz-run/tmp" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp" \
    "$dir/fuzz_model_loader" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -rss_limit_mb=4096 \
    -artifact_prefix="$dir/fuzz-run/artifacts/" -print_final_stats=1 "$dir/fuzz-run/corpus" \
    "$ROOT/tests/fuzz/corpus" >"$dir/fuzz.log" 2>&1 ||
    { grep -E "ERROR|SUMMARY|Test unit written" "$dir/fuzz.log" | head -20; return 1; }
  grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$dir/fuzz.log" | tr '\n' ' '
  echo
}

run_tsan() {
  local dir="$ROOT/build-tsan"
  mkdir -p "$dir"
  configure "$dir" thread ""
  ninja -C "$dir" -j"$JOBS" tessera_unit_tests >"$dir/build.log" 2>&1 ||
    { grep -E "error|FAILED" "$dir/build.log" | head -30; return 1; }
  echo "sanitize.sh: ThreadSanitizer, $TSAN_FILTER"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$ROOT/tests/tsan.supp" \
    "$dir/tessera_unit_tests" --gtest_brief=1 --gtest_filter="$TSAN_FILTER" >"$dir/unit_tests.log" 2>&1 ||
    { grep -E -A12 "WARNING: ThreadSanitizer|FAILED|SUMMARY" "$dir/unit_tests.log" | head -60; return 1; }
  grep -E "tests? from .* ran|^\[  (PASSED|SKIPPED) " "$dir/unit_tests.log"
}

for job in "${JOBS_TO_RUN[@]}"; do
  case $job in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "sanitize.sh: unknown job '$job' (asan, tsan)" >&2; exit 2 ;;
  esac
done
echo "sanitize.sh: PASSED (${JOBS_TO_RUN[*]})"
