#!/usr/bin/env bash
# Session 23, lease 7: GroupQueryAttention on the CUDA EP (tests against the CPU EP, in place), every Cuda* test.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/g
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaTransformerOps*:GroupQueryAttention*:*MultiHead*:*MhaLowering*' > $OUT/g/new_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|OK \]" $OUT/g/new_tests.txt | head -30
  grep -B2 -A8 "Failure" $OUT/g/new_tests.txt | head -60
  echo "NEW_TESTS_DONE at $((SECONDS-start)) s"
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*:*GenerationLoop*' > $OUT/g/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/g/cuda_tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/g_logs.tgz chain.log g 2>/dev/null
touch $OUT/DONE
