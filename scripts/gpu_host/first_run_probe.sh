#!/usr/bin/env bash
# Where a CUDA session's first run goes (issue 13, "first run"): for each model, session creation and the first
# run under the default options, with cudnn_conv_algo_search=HEURISTIC (no timing of candidates), with
# CUDA_MODULE_LOADING=EAGER (every kernel loaded at creation instead of at its first launch), and with the
# preparation run at creation (session.prepare_static_shapes=1); then the default first run's profile by op
# type and the time outside its steps (`tessera profile-summary --run 1`), and the second run's.
#
#   bash scripts/gpu_host/first_run_probe.sh        (logs in $OUT, else out/gpu; models in /tmp/tessera-bench)
#
# MODELS (default: resnet50 mobilenet_v2_fp16 bert_base_s128) picks the models; SKIP_BUILD=1 uses build-gpu as it is.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LOG_DIR=${OUT:-$PWD/out/gpu}
mkdir -p "$LOG_DIR"
source scripts/gpu_host/build_gpu.sh || exit 1
[[ ${SKIP_BUILD:-0} == 1 ]] || build_gpu tessera_cli tessera_cuda || exit 1
BENCH_DIR=/tmp/tessera-bench
MODELS=${MODELS:-resnet50 mobilenet_v2_fp16 bert_base_s128}
export_bench_models "$BENCH_DIR" $MODELS
first_run() {  # first_run LABEL [ENV=VALUE...] -- [tessera bench options...]
  local label=$1 envs=()
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  printf '%-34s ' "$label"
  env "${envs[@]}" build-gpu/tessera bench "$BENCH_DIR/$m.onnx" --ep cuda --modes host --runs 20 --warmup 0 \
    --time-budget 3 "$@" 2>&1 | grep -E "^(session creation|first run|host tensors)" | tr -s ' ' | paste -sd' '
}
for m in $MODELS; do
  echo "==== $m"
  rm -f /tmp/first_run_${m}_*.json
  first_run default -- --profile /tmp/first_run_$m
  first_run "search HEURISTIC" -- --ep-option cudnn_conv_algo_search=HEURISTIC
  first_run "CUDA_MODULE_LOADING=EAGER" CUDA_MODULE_LOADING=EAGER --
  first_run "prepare_static_shapes=1" -- --config session.prepare_static_shapes=1
  first_run "prepare + HEURISTIC" -- --config session.prepare_static_shapes=1 \
    --ep-option cudnn_conv_algo_search=HEURISTIC
  profile=$(ls -t /tmp/first_run_${m}_*.json | head -1)
  build-gpu/tessera profile-summary "$profile" --run 1 --top 10
  build-gpu/tessera profile-summary "$profile" --run 2 --top 4 | grep -E "^run:|steps on"
done
