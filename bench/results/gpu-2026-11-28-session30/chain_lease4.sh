#!/usr/bin/env bash
# Session 30, lease 4: the NHWC / depthwise CUDA tests after a test-only refactor.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 120 build-gpu/tessera_tests --gtest_filter='CudaNhwc*:DepthwiseInputActivation*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED  \]|^\[       OK \]|Failure" | head -30
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
