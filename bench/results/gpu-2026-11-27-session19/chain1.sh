#!/usr/bin/env bash
# Session 19, lease 1: GenerationLoop prompt models (the prompt in one run) and cuBLASLt algorithm search.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/a/export_generation.log 2>&1 &
  GEN=$!
  ( LOG_DIR=$OUT/a export_bench_models /tmp/models bert_base_s128 bert_base_s128_fp16 gpt2_past16 ) &
  MODELS=$!
  build_gpu tessera_cuda tessera_generation_bench tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/a/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $GEN; wait $MODELS
  grep -E "ONNX Runtime|agree|exported" $OUT/a/export_generation.log | head -20
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2; do
    echo "== round $round fp16 token by token"
    $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 2>&1 | grep -v "^tokens "
    echo "== round $round fp16 prompt model"
    $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -v "^tokens "
    echo "== round $round fp16 prompt model as its own step"
    $G /tmp/gen/gpt2_prompt_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 2>&1 | grep -v "^tokens "
  done
  echo "== fp32 token by token"
  $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 2>&1 | grep -v "^tokens "
  echo "== fp32 prompt model"
  $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx 2>&1 | grep -v "^tokens "
  echo "GEN_DONE at $((SECONDS-start)) s"
  T=build-gpu/tessera
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128 gpt2_past16; do
      for s in HEURISTIC EXHAUSTIVE; do
        echo "== round $round $m matmul_algo_search=$s"
        timeout 120 $T bench /tmp/models/$m.onnx --ep cuda --ep-option matmul_algo_search=$s --ep-option tuning_cache_file=none \
          --modes io,graph --runs 300 --warmup 20 2>&1 | grep -vE "^\[tessera|^Inputs|^Model|^Providers|^IoBinding|^$"
      done
    done
  done
  echo "== search log bert fp16"
  timeout 120 $T bench /tmp/models/bert_base_s128_fp16.onnx --ep cuda --ep-option tuning_cache_file=none --modes io --runs 5 --verbose 2>&1 | grep "cuBLASLt m" | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log 2>/dev/null
touch $OUT/DONE
