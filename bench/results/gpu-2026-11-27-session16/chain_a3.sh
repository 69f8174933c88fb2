#!/usr/bin/env bash
# Session 16, lease 3: the new CUDA kernels (contrib Gelu family, RMS normalizations) and every CUDA test.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a3
{
  set -x
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaOpsTest.*' > $OUT/a3/cuda_ops.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|Expected|Which is" $OUT/a3/cuda_ops.txt | head -40
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a3/cuda_all.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/a3/cuda_all.txt | head -20
  echo "DONE_AT $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a3_logs.tgz chain.log a3 build.log
touch $OUT/DONE
