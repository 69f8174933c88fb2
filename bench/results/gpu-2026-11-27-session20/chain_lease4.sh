#!/usr/bin/env bash
# Session 20, lease 4: native sync points (CUDA test; the Vulkan shared-queue example's timeline-semaphore step on
# NVIDIA's driver), the Python suite's CUDA cases, and preload_dlls finding cuDNN in the PyTorch venv's wheels.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/d
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( CPU_BENCH=0 timeout 400 bash scripts/gpu_host/run_python_and_cpu_bench.sh > $OUT/d/python.txt 2>&1; echo "PY rc $?" >> $OUT/d/python.txt ) &
  PY=$!
  build_gpu tessera_cuda tessera_vulkan tessera_tests example_vulkan_shared_queue || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/d/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/d/cuda_tests.txt | head -20
  grep -E "NativeSyncPoints" $OUT/d/cuda_tests.txt | head -3
  echo "TESTS_DONE at $((SECONDS-start)) s"
  unset TESSERA_PLUGIN
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  TESSERA_PLUGIN=$PWD/build-gpu/libtessera_vulkan.so timeout 120 build-gpu/examples/example_vulkan_shared_queue \
    examples/tiled_inference/tone_curve.onnx 1920 1080 2>&1 | tail -5
  echo "VULKAN_DONE at $((SECONDS-start)) s"
  wait $PY
  tail -6 $OUT/d/python.txt
  grep -E "passed|failed" $OUT/pytest.log | tail -2
  echo "== preload_dlls"
  ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/ 2>&1 | head -30
  SITE=/opt/torch/.venv/lib/python3.12/site-packages
  env -u LD_LIBRARY_PATH PYTHONPATH=$PWD/build-py/python python3 - <<PYEOF 2>&1 | tail -12
import sys, warnings
warnings.simplefilter("always")
import tessera
print("before:", tessera.get_available_providers())
sys.path.append("$SITE")
tessera.preload_dlls()
import tessera.preload as p
print("loaded:", p.preloaded_libraries())
print("after:", tessera.get_available_providers())
import numpy as np
if "CUDAExecutionProvider" in tessera.get_available_providers():
    import onnx
    from onnx import helper, TensorProto
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    s = tessera.InferenceSession(helper.make_model(g).SerializeToString(), providers=["CUDAExecutionProvider"])
    print("cuda run:", s.run(None, {"x": np.array([-1, 2, -3, 4], np.float32)})[0], s.get_providers())
PYEOF
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/d_logs.tgz chain.log d build.log pytest.log 2>/dev/null
touch $OUT/DONE
