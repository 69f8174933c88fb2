#!/usr/bin/env bash
# Session 25, lease 4: Tessera's depthwise kernel with 16-byte accesses and several output pixels per thread.
# Cuda* tests, then the new plugin against the previous kernel's (rebuilt from HEAD~ of depthwise_conv.cu),
# alternating, on the default model (PP-OCRv4 det: 14 depthwise convolutions) and MobileNetV2 fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/e
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/e export_bench_models /tmp/tessera-bench mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  cp build-gpu/libtessera_cuda.so /tmp/new_cuda.so
  export TESSERA_PLUGIN=/tmp/new_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/e/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/e/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  cp out/depthwise_conv_old.cu src/providers/cuda/kernels/depthwise_conv.cu
  build_gpu tessera_cuda > /dev/null 2>&1; cp build-gpu/libtessera_cuda.so /tmp/old_cuda.so
  echo "OLD_BUILT at $((SECONDS-start)) s"
  wait $EXPORT
  export TESSERA_CACHE_DIR=
  T=build-gpu/tessera
  for round in 1 2; do
    for v in old new; do
      P="--plugin cuda=/tmp/${v}_cuda.so"
      echo "== round $round $v default eager / automatic"
      $T bench /tmp/models/default.onnx $P --shape x=1x3x640x640 --ep cuda --ep-option automatic_cuda_graphs=0 --modes io --runs 200 --warmup 20 --time-budget 3 2>&1 | tail -1
      $T bench /tmp/models/default.onnx $P --shape x=1x3x640x640 --ep cuda --modes host,io --runs 200 --warmup 20 --time-budget 3 2>&1 | tail -2
      echo "== round $round $v mobilenet_v2_fp16 eager / automatic"
      $T bench /tmp/tessera-bench/mobilenet_v2_fp16.onnx $P --ep cuda --ep-option automatic_cuda_graphs=0 --modes io --runs 300 --warmup 20 --time-budget 2 2>&1 | tail -1
      $T bench /tmp/tessera-bench/mobilenet_v2_fp16.onnx $P --ep cuda --modes io --runs 300 --warmup 20 --time-budget 2 2>&1 | tail -1
    done
  done
  echo "BENCH_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
