#!/usr/bin/env bash
# Where a CUDA step's host time goes (issue 13): builds the CLI, the CUDA EP and tessera_cuda_call_overhead,
# prints the host and device cost per call of the library entry points a step uses, then profiles eager runs
# of the bench models (host tensors and IO binding) and summarizes the profile per op type.
#
#   bash scripts/gpu_host/step_overhead_probe.sh        (logs in $OUT, else out/gpu; models in /tmp/tessera-bench)
#
# MODELS (default: resnet50 resnet50_fp16 mobilenet_v2_fp16) picks the profiled models; the export is skipped
# for models already in /tmp/tessera-bench (a warm machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LOG_DIR=${OUT:-$PWD/out/gpu}
mkdir -p "$LOG_DIR"
source scripts/gpu_host/build_gpu.sh || exit 1
build_gpu tessera_cli tessera_cuda tessera_cuda_call_overhead ${EXTRA_TARGETS:-} || exit 1
if [[ -n ${TESTS:-} ]]; then
  echo "==== tests $TESTS"
  build-gpu/tessera_tests --gtest_filter="$TESTS" >"$LOG_DIR/tests.log" 2>&1
  grep -E "^\[  (PASSED|FAILED) |tests? ran|Failure|error" "$LOG_DIR/tests.log" | head -30
fi
if [[ ${CALL_OVERHEAD:-1} == 1 ]]; then
  echo "==== call overhead"
  build-gpu/tessera_cuda_call_overhead 400 2>&1 | tee "$LOG_DIR/call_overhead.txt"
fi
BENCH_DIR=/tmp/tessera-bench
MODELS=${MODELS:-resnet50 resnet50_fp16 mobilenet_v2_fp16}
export_bench_models "$BENCH_DIR" $MODELS
for m in $MODELS; do
  echo "==== $m"
  rm -f /tmp/profile_${m}_*.json
  build-gpu/tessera bench "$BENCH_DIR/$m.onnx" --ep cuda --runs 200 --warmup 20 --time-budget 12 | grep -E "^ *(host|io)"
  build-gpu/tessera bench "$BENCH_DIR/$m.onnx" --ep cuda --runs 100 --warmup 20 --time-budget 6 \
    --profile /tmp/profile_$m >/dev/null
  # Two files: the CUDA-graph session's, then the eager session's (written last). Its totals include the first
  # run (plans, algorithm searches); the medians are the steady state.
  build-gpu/tessera profile-summary "$(ls -t /tmp/profile_${m}_*.json | head -1)" --top 12
done
