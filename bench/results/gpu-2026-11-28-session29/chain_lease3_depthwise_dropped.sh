#!/usr/bin/env bash
# Session 29, lease 3: the depthwise kernel's staged filter loaded before the wait (A/B by
# TESSERA_CUDA_EARLY_CONSTANT_LOADS), CUDA tests, and graph numbers of the fp16 transformers for issue 14.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2 mobilenet_v2_fp16 gpt2_past16_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|^\[       OK \] (CudaNhwc|CudaPipelines)" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  rm $OUT/a/cuda_tests.txt
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  for round in 1 2 3; do
    for early in 0 1; do
      for m in mobilenet_v2_fp16 mobilenet_v2; do
        echo "== $m round $round early=$early"
        TESSERA_CUDA_EARLY_CONSTANT_LOADS=$early build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 500 --time-budget 3 --modes host,io,graph 2>&1 | grep -E "host tensors|graph" | head -3
      done
    done
  done
  for m in gpt2_past16_fp16 bert_base_s128_fp16; do
    echo "== $m"
    build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 500 --time-budget 3 --modes host,io,graph 2>&1 | grep -E "host tensors|io|graph" | head -4
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null
touch $OUT/DONE
