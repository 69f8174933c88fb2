#!/usr/bin/env bash
# On the offline GPU host: builds the Python package (pybind11 from the host's python3) with the CUDA EP,
# runs the pytest suite there (CUDA, torch and CuPy tests included), then the side-by-side CPU bench
# against the host's onnxruntime (bench/compare_ort.py) for ResNet-50 and BERT-base at THREADS (16).
#
#   bash scripts/gpu_host/run_python_and_cpu_bench.sh        (logs to $OUT, else out/gpu)
#
# Needs .deps/debs like run_gpu_tests.sh (scripts/gpu_host/README.md). CPU_BENCH=0 skips the CPU bench.
# Prints a summary last.
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
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
THREADS=${THREADS:-16}
mkdir -p "$LOG_DIR"
SUMMARY=()
STATUS=0
step() {
  local name=$1 log=$2 start=$SECONDS rc
  shift 2
  "$@" >"$LOG_DIR/$log" 2>&1
  rc=$?
  SUMMARY+=("$(printf '%-16s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - start))" "$log")")
  [[ $rc -eq 0 ]] || STATUS=1
  return $rc
}
finish() {
  echo "==== summary"
  printf '%s\n' "${SUMMARY[@]}"
  exit $STATUS
}

step setup_prefix py_setup_prefix.log bash scripts/gpu_host/setup_prefix.sh install "$PREFIX" || finish
eval "$(bash scripts/gpu_host/setup_prefix.sh env "$PREFIX")"
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH"
PYTHON=$(command -v python3)
step configure py_configure.log cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=OFF \
  -DTESSERA_BUILD_TESTS=OFF -DTESSERA_CUDA_ARCHITECTURES=90 -DCUDNN_ROOT="$CUDNN_ROOT" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CXX_COMPILER="$HOST_CXX" \
  -DCMAKE_CUDA_HOST_COMPILER="$HOST_CXX" -DPython_EXECUTABLE="$PYTHON" \
  -Dpybind11_DIR="$("$PYTHON" -m pybind11 --cmakedir)" -DTESSERA_BUILD_PYTHON=ON || finish
step build py_build.log ninja -C build-py -j16 tessera_python tessera_cuda tessera_testing_ep tessera_cli || {
  tail -30 "$LOG_DIR/py_build.log"
  finish
}
step pytest pytest.log env TESSERA_TESTING_EP_PATH="$PWD/build-py/libtessera_testing_ep.so" \
  PYTHONPATH="$PWD/build-py/python" "$PYTHON" -m pytest -q -p no:cacheprovider -rs tests/python
tail -25 "$LOG_DIR/pytest.log"

[[ ${CPU_BENCH:-1} == 1 ]] || finish  # CPU_BENCH=0: the Python tests only
MODELS=/tmp/tessera-cpu-bench
step export py_export.log "$PYTHON" scripts/export_models.py --out "$MODELS"
bench() {
  local name
  for name in resnet50 bert_base; do
    [[ -f $MODELS/$name/model.onnx ]] || { echo "missing $name"; return 1; }
    PYTHONPATH="$PWD/build-py/python" "$PYTHON" bench/compare_ort.py "$MODELS/$name/model.onnx" \
      --threads "$THREADS" --dim batch=1 --dim sequence=128 --rounds 10 --runs 10 || return 1
  done
}
step cpu_bench cpu_bench.log bench
cat "$LOG_DIR/cpu_bench.log"
finish
