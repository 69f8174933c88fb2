#!/usr/bin/env bash
# Builds Tessera with the CUDA EP on the offline GPU host and runs the GPU tests.
#
#   bash scripts/gpu_host/run_gpu_tests.sh            (logs to $OUT, else out/gpu)
#
# Needs .deps/debs (from `bash scripts/gpu_host/setup_prefix.sh download` on the dev machine), CUDA at
# /usr/local/cuda and cuDNN 9 (CUDNN_ROOT, default: the PyTorch venv's nvidia/cudnn). Steps: unpack the
# .debs into a prefix, configure build-gpu for TESSERA_CUDA_ARCHITECTURES (default 90), build with -j16,
# record the GPU, run `tessera devices`, the Cuda* tests and the conformance suite on the CUDA EP; then (where python3 has torch) export issue 3's
# bench models (scripts/gpu_host/export_models.py: ResNet-50 and BERT-base, fp32 and fp16), check them
# against PyTorch (CudaModelsTest), list nodes off the GPU and bench them (host tensors / IO binding / IO
# binding + CUDA graph); RUN_RESNET50=1 (default) also checks the dynamo-exported ResNet-50; last,
# compute-sanitizer over the IO-binding and graph tests. Prints a summary last; exits non-zero when a step
# fails. BENCH_MODELS (default: ResNet-50, BERT-base s128, MobileNetV2 and GPT-2 with 16 past tokens, each fp32
# and fp16) picks the benches. The export is skipped when /tmp/tessera-bench already holds every model (a second
# call on a warm machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

LOG_DIR=${OUT:-$PWD/out/gpu}
PREFIX=${TESSERA_DEPS_PREFIX:-/tmp/tessera-deps}
# The distribution's compiler, not whatever CXX names: the GPU host's image also carries a GCC under /opt/gcc
# that links libstdc++ statically into every shared library. One private libstdc++ per library breaks
# processes that load several of them with RTLD_LOCAL (Python: the extension, libtessera, the CUDA plugin
# each got their own locale and iostream state, and formatting a number crashed).
HOST_CXX=${HOST_CXX:-$( [[ -x /usr/bin/g++ ]] && echo /usr/bin/g++ || command -v g++ )}
# The image also exports CC, CXX and CUDAHOSTCXX naming /opt/gcc: CMake's CUDA detection then takes that GCC's
# library folders as the CUDA implicit link directories, and the CUDA plugin links its static libstdc++.a (see
# docs/CUDA.md "Compiler"). Configure with nothing but the compilers named here.
unset CC CXX CUDAHOSTCXX
ARCHS=${TESSERA_CUDA_ARCHITECTURES:-90}
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
JOBS=${JOBS:-16}
mkdir -p "$LOG_DIR"
SUMMARY=()
STATUS=0

step() {  # step NAME LOGFILE COMMAND...: runs COMMAND with its output in LOGFILE, records the outcome
  local name=$1 log=$2 start=$SECONDS rc
  shift 2
  "$@" >"$LOG_DIR/$log" 2>&1
  rc=$?
  SUMMARY+=("$(printf '%-22s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - start))" "$log")")
  [[ $rc -eq 0 ]] || STATUS=1
  return $rc
}

finish() {
  echo "==== summary"
  printf '%s\n' "${SUMMARY[@]}"
  if [[ -f $LOG_DIR/cuda_tests.log ]]; then
    grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? ran' "$LOG_DIR/cuda_tests.log" | sort -u | head -40
  fi
  exit $STATUS
}

step setup_prefix setup_prefix.log bash scripts/gpu_host/setup_prefix.sh install "$PREFIX" || finish
eval "$(bash scripts/gpu_host/setup_prefix.sh env "$PREFIX")"
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH"

step gpu_info gpu_info.txt bash -c 'nvidia-smi; nvcc --version; g++ --version | head -1; cmake --version | head -1;
  ls "$0"/include "$0"/lib 2>&1 | head -40' "$CUDNN_ROOT"
# Warnings stay warnings here (CI builds with -Werror): a warning in code being edited elsewhere, or one only
# the host's g++ 13 reports, must not keep the GPU tests from running.
step configure configure.log cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=OFF \
  -DTESSERA_CUDA_ARCHITECTURES="$ARCHS" -DCUDNN_ROOT="$CUDNN_ROOT" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CXX_COMPILER="$HOST_CXX" \
  -DCMAKE_CUDA_HOST_COMPILER="$HOST_CXX" || finish
if [[ ! -f build-gpu/build.ninja ]] || ! grep -q 'CUDA EP: building' "$LOG_DIR/configure.log"; then
  SUMMARY+=("configure: the CUDA EP is not part of the build (see configure.log)")
  STATUS=1
  finish
fi
if ! step build build.log ninja -C build-gpu -j"$JOBS" tessera_tests tessera_cli tessera_cuda tessera_conformance; then
  tail -40 "$LOG_DIR/build.log"
  finish
fi
step devices devices.txt build-gpu/tessera devices
step cuda_tests cuda_tests.log build-gpu/tessera_tests --gtest_filter='Cuda*'
# The ONNX backend conformance suite on the CUDA EP (TF32 off: the suite's tolerance is float32's), against
# tests/conformance/expected_cuda.txt; the results as an expectation file land in the log folder.
CUDA_EXPECT=tests/conformance/expected_cuda.txt
[[ -f $CUDA_EXPECT ]] || CUDA_EXPECT=tests/conformance/expected_cpu.txt
step conformance_cuda conformance_cuda.log build-gpu/tessera_conformance --ep CUDAExecutionProvider \
  --plugin cuda="$PWD/build-gpu/libtessera_cuda.so" --ep-option use_tf32=0 --data "$TESSERA_ONNX_TESTDATA" --expect "$CUDA_EXPECT" \
  --write-expect "$LOG_DIR/expected_cuda.txt" --list-failures
tail -6 "$LOG_DIR/conformance_cuda.log"
# Issue 3's bench models: export, accuracy against PyTorch (float64), placement, latency.
BENCH_DIR=/tmp/tessera-bench
ALL_MODELS="resnet50 resnet50_fp16 bert_base_s128 bert_base_s128_fp16 mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 gpt2_past16_fp16"
PREFOLDED="resnet50_fp16_prefolded mobilenet_v2_fp16_prefolded"  # accuracy only (export_models.py, export_vision)
exported() {
  local name
  for name in $ALL_MODELS $PREFOLDED; do [[ -f $BENCH_DIR/$name.ref/output.npy ]] || return 1; done
}
bench_models() {
  local name
  for name in ${BENCH_MODELS:-$ALL_MODELS}; do
    [[ -f $BENCH_DIR/$name.onnx ]] || continue
    echo "==== $name"
    build-gpu/tessera partition "$BENCH_DIR/$name.onnx" --ep cuda | grep -v CUDAExecutionProvider | head -20
    build-gpu/tessera bench "$BENCH_DIR/$name.onnx" --ep cuda --runs 300 --warmup 30 --time-budget 18
  done
}
if python3 -c 'import torch, torchvision, transformers' 2>/dev/null; then
  exported || step export_bench export_bench.log python3 scripts/gpu_host/export_models.py "$BENCH_DIR"
  step models_vs_pytorch models_vs_pytorch.log env TESSERA_BENCH_MODELS="$BENCH_DIR" \
    build-gpu/tessera_tests --gtest_filter='CudaModelsTest*'
  grep -E '^MODEL|off the GPU|FAILED|error' "$LOG_DIR/models_vs_pytorch.log" | head -30
  # The float16 vision files' own error (their weights computed in float32) and PyTorch's float16 error.
  if python3 -c 'import onnxruntime' 2>/dev/null; then
    step fp16_file_error fp16_file_error.log python3 scripts/gpu_host/fp16_file_error.py \
      "$BENCH_DIR"/{resnet50,mobilenet_v2}_fp16{,_prefolded}.onnx
    cat "$LOG_DIR/fp16_file_error.log"
  fi
  for ref in "$BENCH_DIR"/*.ref/pytorch_error.txt; do echo "PyTorch's own error, $(basename "$(dirname "$ref")"): $(cat "$ref")"; done
  step bench bench.log bench_models
  grep -E '^====|^ *(host tensors|io binding)|not measured' "$LOG_DIR/bench.log"
  # PyTorch on the same GPU in the same session, the way the bench's CUDA-graph row is measured.
  if [[ ${TORCH_REFERENCE:-1} == 1 ]]; then
    step torch_reference torch_reference.log python3 bench/torch_cuda_reference.py --runs 300 \
      --models resnet50 resnet50_fp16 bert_base_s128 bert_base_s128_fp16 mobilenet_v2 mobilenet_v2_fp16
    cat "$LOG_DIR/torch_reference.log"
  fi
  # do_copy_in_default_stream A/B (a copy-bound model and ResNet-50, two threads at once).
  [[ ${COPY_STREAMS_BENCH:-1} == 1 ]] &&
    step copy_streams_bench copy_streams_bench.log bash scripts/gpu_host/copy_streams_bench.sh build-gpu "$BENCH_DIR"
  [[ -f $LOG_DIR/copy_streams_bench.log ]] && cat "$LOG_DIR/copy_streams_bench.log"
fi
# ResNet-50 (random weights) exported by PyTorch's dynamo exporter (ReduceMean average pool): CUDA EP
# outputs against PyTorch's, then latency.
resnet50_check() {
  local models=/tmp/tessera-models out=/tmp/tessera-resnet50-out
  python3 scripts/export_models.py --only resnet50 --out "$models" || return 1
  local dir=$models/resnet50 inputs=()
  for npy in "$dir"/inputs/*.npy; do inputs+=(--input "$(basename "$npy" .npy)=$npy"); done
  build-gpu/tessera run "$dir/model.onnx" --ep cuda "${inputs[@]}" --output-dir "$out" || return 1
  python3 - "$dir/outputs" "$out" <<'PY' || return 1
import pathlib, sys
import numpy as np
worst = 0.0
for ref in sorted(pathlib.Path(sys.argv[1]).glob("*.npy")):
    expected, actual = np.load(ref).astype(np.float64), np.load(pathlib.Path(sys.argv[2]) / ref.name)
    error = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
    worst = max(worst, error)
    print(f"{ref.stem}: shape {actual.shape}, relative L2 error vs PyTorch {error:.3e}")
sys.exit(0 if worst < 1e-2 else 1)
PY
  build-gpu/tessera partition "$dir/model.onnx" --ep cuda | grep -v CUDAExecutionProvider | head -20
  build-gpu/tessera bench "$dir/model.onnx" --ep cuda --runs 200 --warmup 20 --time-budget 15
}
if [[ ${RUN_RESNET50:-1} == 1 ]] && python3 -c 'import torch' 2>/dev/null; then
  step resnet50_dynamo resnet50.log resnet50_check
  tail -12 "$LOG_DIR/resnet50.log"
fi
if command -v compute-sanitizer >/dev/null; then
  step sanitizer sanitizer.log timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 \
    build-gpu/tessera_tests \
    --gtest_filter='CudaSessionTest.IoBinding*:CudaSessionTest.Async*:CudaEpTest.Copies*:CudaGraphTest.*:CudaCopyStreamsTest.*'
fi
[[ -f $LOG_DIR/sanitizer.log ]] && grep -E "ERROR SUMMARY|Invalid|Program hit|FAILED" "$LOG_DIR/sanitizer.log" | head -20
cat "$LOG_DIR/devices.txt"
finish
