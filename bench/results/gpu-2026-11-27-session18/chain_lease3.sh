#!/usr/bin/env bash
# Session 18, lease 3: the final code -- Cuda* and Vulkan* tests (public EP logging, address copies), the shared-queue example on NVIDIA.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/c
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests example_vulkan_shared_queue || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/c/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/c/cuda_tests.txt | head -20
  grep -E "Swish|SplitConcat" $OUT/c/cuda_tests.txt | head -8
  echo "CUDA_DONE at $((SECONDS-start)) s"
  unset TESSERA_PLUGIN
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  timeout 200 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/c/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/c/vulkan_tests.txt | head -20
  echo "VULKAN_DONE at $((SECONDS-start)) s"
  TESSERA_PLUGIN=$PWD/build-gpu/libtessera_vulkan.so timeout 120 build-gpu/examples/example_vulkan_shared_queue \
    examples/tiled_inference/tone_curve.onnx 1920 1080 2>&1 | tail -4
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/c_logs.tgz chain.log c build.log
touch $OUT/DONE
