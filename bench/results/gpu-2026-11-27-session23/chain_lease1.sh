#!/usr/bin/env bash
# Session 23, lease 1: the CUDA kernels of ai.onnx Attention and RotaryEmbedding (tests against the CPU EP), every
# Cuda* test, and the decoding step's products with their weights prefetched into L2 (A/B, TESSERA_SMALL_ROWS_PREFETCH).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/a/export_generation.log 2>&1 &
  GEN=$!
  build_gpu tessera_cuda tessera_generation_bench tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaTransformerOps*:OnnxAttention*:RotaryEmbedding*' > $OUT/a/new_ops_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|OK \]" $OUT/a/new_ops_tests.txt | head -30
  echo "NEW_TESTS_DONE at $((SECONDS-start)) s"
  wait $GEN
  grep -E "ONNX Runtime|agree" $OUT/a/export_generation.log | head -5
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2; do
    for pf in 0 1; do
      echo "== round $round fp16 prefetch=$pf"
      TESSERA_SMALL_ROWS_PREFETCH=$pf $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -v "^tokens "
    done
  done
  for pf in 0 1; do
    echo "== fp32 prefetch=$pf"
    TESSERA_SMALL_ROWS_PREFETCH=$pf $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx 2>&1 | grep -v "^tokens "
  done
  echo "GEN_DONE at $((SECONDS-start)) s"
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/a/cuda_tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log 2>/dev/null
touch $OUT/DONE
