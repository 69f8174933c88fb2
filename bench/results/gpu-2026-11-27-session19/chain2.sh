#!/usr/bin/env bash
# Session 19, lease 2: GenerationLoop prompt models on the GPU; Range on the CUDA EP.
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
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/a/cuda_tests.txt | head -20
  grep -E "OK \] .*(Range|Prompt|MatmulTuning)" $OUT/a/cuda_tests.txt
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $GEN
  grep -E "ONNX Runtime|agree" $OUT/a/export_generation.log | head -20
  echo "== partition of the prompt model on the CUDA EP (CPU nodes and copies)"
  timeout 120 build-gpu/tessera partition /tmp/gen/gpt2_prompt_fp16.onnx --ep cuda 2>&1 | grep -vE "CUDAExecutionProvider$" | grep -v "^\[tessera" | head -40
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2; do
    echo "== round $round fp16 token by token"
    $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 2>&1 | grep -v "^tokens "
    echo "== round $round fp16 prompt model"
    $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -v "^tokens "
  done
  echo "== fp16 prompt model as its own step, eager"
  $G /tmp/gen/gpt2_prompt_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 5 --graphs 0 2>&1 | grep -v "^tokens "
  echo "== fp32 token by token"
  $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 2>&1 | grep -v "^tokens "
  echo "== fp32 prompt model"
  $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx 2>&1 | grep -v "^tokens "
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log 2>/dev/null
touch $OUT/DONE
