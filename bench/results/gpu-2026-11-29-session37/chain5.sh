#!/usr/bin/env bash
# Session 37, lease 5: the final code's CUDA tests (activation_clip stays off the CUDA EP; EP API 10 plugins).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 200 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='CudaKernelTest.*:CudaNhwc*:CudaAutomaticGraphs*:CudaEp*:FusedConv*:ConvActivationFusion*' > $OUT/tests.txt 2>&1
  tail -4 $OUT/tests.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
