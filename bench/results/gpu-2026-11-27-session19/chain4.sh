#!/usr/bin/env bash
# Session 19, lease 5: products of one input merged (shared_input_matmul_fusion) -- Cuda* tests, BERT A/B.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/models bert_base_s128 bert_base_s128_fp16 ) &
  MODELS=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $MODELS
  T=build-gpu/tessera
  OFF="--config session.disabled_optimizers=shared_input_matmul_fusion"
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128; do
      for c in "" "$OFF"; do
        echo "== round $round $m ${c:-merged}"
        timeout 120 $T bench /tmp/models/$m.onnx --ep cuda $c --modes host,io,graph --runs 300 --warmup 20 2>&1 | \
          grep -E "^(host|io) |creation|first run"
      done
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
