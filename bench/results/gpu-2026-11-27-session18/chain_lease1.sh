#!/usr/bin/env bash
# Session 18, lease 1: the Swish (SiLU) activation in the CUDA and Vulkan epilogues -- every Cuda* and Vulkan* test.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/a/cuda_tests.txt | head -20
  grep -E "Swish" $OUT/a/cuda_tests.txt | head -5
  echo "CUDA_DONE at $((SECONDS-start)) s"
  unset TESSERA_PLUGIN
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  timeout 200 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/a/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/a/vulkan_tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log
touch $OUT/DONE
