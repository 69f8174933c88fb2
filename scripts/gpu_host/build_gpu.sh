#!/usr/bin/env bash
# Sourced by the GPU-host scripts: unpacks the build dependencies into a prefix and configures build-gpu
# (system g++, see docs/CUDA.md "Compiler"); `build_gpu TARGET...` then builds those targets with ninja.
# Logs land in $LOG_DIR. TESSERA_GPU_CMAKE_ARGS adds configure arguments (e.g. the Python package:
# -DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)).
PREFIX=${TESSERA_DEPS_PREFIX:-/tmp/tessera-deps}
HOST_CXX=${HOST_CXX:-$( [[ -x /usr/bin/g++ ]] && echo /usr/bin/g++ || command -v g++ )}
# The image also exports CC, CXX and CUDAHOSTCXX naming /opt/gcc: CMake's CUDA detection then takes that GCC's
# library folders as the CUDA implicit link directories, and the CUDA plugin links its static libstdc++.a (see
# docs/CUDA.md "Compiler"). Configure with nothing but the compilers named here.
unset CC CXX CUDAHOSTCXX
ARCHS=${TESSERA_CUDA_ARCHITECTURES:-90}
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
JOBS=${JOBS:-16}
LOG_DIR=${LOG_DIR:-${OUT:-$PWD/out/gpu}}
mkdir -p "$LOG_DIR"
bash scripts/gpu_host/setup_prefix.sh install "$PREFIX" >"$LOG_DIR/setup_prefix.log" 2>&1 || {
  tail -5 "$LOG_DIR/setup_prefix.log"; return 1; }
eval "$(bash scripts/gpu_host/setup_prefix.sh env "$PREFIX")"
export PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

build_gpu() {
  if [[ ! -f build-gpu/build.ninja ]]; then
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_WERROR=OFF \
      -DTESSERA_CUDA_ARCHITECTURES="$ARCHS" -DCUDNN_ROOT="$CUDNN_ROOT" \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CXX_COMPILER="$HOST_CXX" \
      -DCMAKE_CUDA_HOST_COMPILER="$HOST_CXX" ${TESSERA_GPU_CMAKE_ARGS:-} >"$LOG_DIR/configure.log" 2>&1 || { tail -20 "$LOG_DIR/configure.log"; return 1; }
  fi
  ninja -C build-gpu -j"$JOBS" "$@" >"$LOG_DIR/build.log" 2>&1 || { grep -E "error|FAILED" "$LOG_DIR/build.log" | head -30; return 1; }
}

# export_bench_models DIR MODEL...: exports the bench models (resnet50, mobilenet_v2_fp16, bert_base_s128,
# gpt2_past16, ...) that DIR lacks, by family; the log goes to $LOG_DIR/export.log.
export_bench_models() {
  local dir=$1 m need=()
  shift
  for m in "$@"; do [[ -f $dir/$m.onnx ]] || need+=("${m%%_fp16}"); done
  ((${#need[@]})) || return 0
  python3 scripts/gpu_host/export_models.py "$dir" $(printf '%s\n' "${need[@]}" | sed 's/_s128//;s/_past16//;s/^bert_base$/bert/' | sort -u) \
    >"$LOG_DIR/export.log" 2>&1 || tail -5 "$LOG_DIR/export.log"
}
