#!/usr/bin/env bash
# Session 31, lease 5: the attention kernels after the shared device-query helper (attention_device.cuh): the kernel
# bench against the float64 reference and the CUDA attention / packed-projection tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_attention_kernels || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  timeout 90 build-gpu/tessera_attention_kernels > $OUT/a/attention_kernels.txt 2>&1
  grep -E "auto|tensor-core|BOUND" $OUT/a/attention_kernels.txt
  build_gpu tessera_cuda tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaAttention*:CudaTransformer*:PackedQkv*:CudaKernelTest.FusedMatMul*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|FAILED  \]|^\[       OK \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -100 > $OUT/a/cuda_test_failures.txt
  tail -4 $OUT/a/cuda_tests_summary.txt; head -30 $OUT/a/cuda_test_failures.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease5_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
