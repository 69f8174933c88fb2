#!/usr/bin/env bash
# The installed package as an outside project sees it (issue 18): `cmake --install` of the build into a
# temporary prefix, then, with nothing but that prefix,
#   - tests/install/consumer (find_package(Tessera)) runs relu.onnx on the CPU,
#   - tests/install/plugin builds the simulated testing device as an out-of-tree EP plugin from a copy of its
#     sources (only the installed public headers visible), and the consumer runs the model on it,
#   - the Vulkan EP plugin (src/providers/vulkan, its own CMake project) builds the same way, and the consumer runs
#     the model on it (lavapipe on CI),
#   - the same consumer compiled with `pkg-config --cflags --libs tessera`,
#   - the installed CLI (PREFIX/bin/tessera) runs the model,
#   - `pip wheel` of the Python package (from this build folder) installs into a fresh virtual environment and
#     runs the model from outside the tree.
# Prints one line per check; exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
WORK=$PWD/$BUILD_DIR/install_test
MODEL=$PWD/tests/fuzz/corpus/relu.onnx
EXPECTED="output 0 2 0 4 0 6"
rm -rf "$WORK" && mkdir -p "$WORK"
LOG=$WORK/log.txt
check() {  # check NAME EXPECTED_SUBSTRING COMMAND...
  local name=$1 want=$2 out
  shift 2
  if ! out=$("$@" 2>&1) || [[ $out != *"$want"* ]]; then
    echo "test_install: FAILED: $name"; echo "$out" | tail -20; exit 1
  fi
  echo "test_install: ok: $name"
}
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" >"$LOG" 2>&1 || { tail -20 "$LOG"; exit 1; }
mkdir -p "$WORK/plugin_src/providers"
cp -r src/providers/testing "$WORK/plugin_src/providers/"
for project in consumer plugin; do
  cmake -S tests/install/$project -B "$WORK/$project" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$WORK/prefix" -DPLUGIN_SOURCES="$WORK/plugin_src" >>"$LOG" 2>&1 &&
    cmake --build "$WORK/$project" >>"$LOG" 2>&1 || { echo "test_install: FAILED: building $project"; tail -30 "$LOG"; exit 1; }
done
check "consumer on the CPU" "$EXPECTED" "$WORK/consumer/consumer" "$MODEL"
check "consumer on the out-of-tree plugin" "provider TestingExecutionProvider" \
  "$WORK/consumer/consumer" "$MODEL" "$WORK/plugin/libtessera_testing_ep.so" TestingExecutionProvider
check "its output" "$EXPECTED" \
  "$WORK/consumer/consumer" "$MODEL" "$WORK/plugin/libtessera_testing_ep.so" TestingExecutionProvider
# The Vulkan EP plugin as its own CMake project against the installed package: only its sources and the installed
# public headers are visible (where the build has the plugin, i.e. the Vulkan headers and glslc exist).
if [[ -f $BUILD_DIR/libtessera_vulkan.so ]]; then
  cp -r src/providers/vulkan "$WORK/vulkan_src"
  cmake -S "$WORK/vulkan_src" -B "$WORK/vulkan" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$WORK/prefix" >>"$LOG" 2>&1 && cmake --build "$WORK/vulkan" >>"$LOG" 2>&1 ||
    { echo "test_install: FAILED: building the Vulkan plugin outside the tree"; tail -30 "$LOG"; exit 1; }
  check "consumer on the Vulkan plugin built outside the tree" "$EXPECTED" \
    env TESSERA_VULKAN_SOFTWARE_DEVICES=1 "$WORK/consumer/consumer" "$MODEL" "$WORK/vulkan/libtessera_vulkan.so" \
    VulkanExecutionProvider
fi
PC_DIR=$(dirname "$(find "$WORK/prefix" -name tessera.pc | head -1)")
# shellcheck disable=SC2046
g++ -O1 tests/install/consumer/consumer.cc -o "$WORK/consumer_pc" \
  $(PKG_CONFIG_PATH=$PC_DIR pkg-config --cflags --libs tessera) >>"$LOG" 2>&1 ||
  { echo "test_install: FAILED: compiling with pkg-config"; tail -20 "$LOG"; exit 1; }
check "consumer built with pkg-config" "$EXPECTED" "$WORK/consumer_pc" "$MODEL"
check "installed CLI" "[2,3]" "$WORK/prefix/bin/tessera" run "$MODEL" --dim N=2
TESSERA_BUILD_DIR=$PWD/$BUILD_DIR /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps -w "$WORK/wheel" . \
  >>"$LOG" 2>&1 || { echo "test_install: FAILED: pip wheel"; tail -30 "$LOG"; exit 1; }
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv" >>"$LOG" 2>&1
"$WORK/venv/bin/python" -m pip install --no-deps --no-index "$WORK"/wheel/tessera-*.whl >>"$LOG" 2>&1 ||
  { echo "test_install: FAILED: pip install of the wheel"; tail -20 "$LOG"; exit 1; }
SMOKE='
import os, sys
import numpy as np
import tessera
assert tessera.__file__.startswith(sys.prefix), tessera.__file__  # the installed copy, not the tree
session = tessera.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
(y,) = session.run(None, {"x": np.array([[-1, 2, -3], [4, -5, 6]], np.float32)})
print("output", " ".join(f"{v:g}" for v in y.ravel()))
'
check "the wheel in a virtual environment" "$EXPECTED" \
  env -u PYTHONPATH -C "$WORK" "$WORK/venv/bin/python" -c "$SMOKE" "$MODEL"
echo "test_install: PASSED"
