#!/usr/bin/env bash
# Session 20, lease 5: the CUDA tests on the final code (ONNX Swish-24 on the CUDA EP is new since lease 4).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/e
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/e/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/e/cuda_tests.txt | head -20
  grep -E "ContribGeluFamily" $OUT/e/cuda_tests.txt | head -3
  echo "TESTS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cp $OUT/chain.log $OUT/e/ 2>/dev/null
touch $OUT/DONE
