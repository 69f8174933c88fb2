#!/usr/bin/env bash
# Session 29, lease 1: constants loaded before griddepcontrol.wait (small-rows products, SkipLayerNormalization).
# CUDA tests, then GPT-2 generation and gpt2_past16 A/B (TESSERA_CUDA_EARLY_CONSTANT_LOADS=0 / 1 alternating).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  ( python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/a/export_generation.log 2>&1 ) &
  GEN=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_generation_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*:*GenerationLoop*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  wait $GEN
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2 3; do
    for early in 0 1; do
      echo "== fp16 round $round early=$early"
      TESSERA_CUDA_EARLY_CONSTANT_LOADS=$early $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -E "tokens_per_s|ms_per_decode|tokens_match"
    done
  done
  for early in 0 1; do
    echo "== fp32 early=$early"
    TESSERA_CUDA_EARLY_CONSTANT_LOADS=$early $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx 2>&1 | grep -E "tokens_per_s|ms_per_decode|tokens_match"
  done
  echo "GEN_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  for round in 1 2; do
    for early in 0 1; do
      for m in gpt2_past16 mobilenet_v2_fp16; do
        echo "== $m round $round early=$early"
        TESSERA_CUDA_EARLY_CONSTANT_LOADS=$early build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 500 --time-budget 3 --modes host,io,graph 2>&1 | grep -E "host tensors|io-bound|graph" | head -4
      done
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log 2>/dev/null
touch $OUT/DONE
