#!/usr/bin/env bash
# Session 23, lease 4: GenerationLoop prompt runs on the prompt session's automatic graphs: tests, generation bench.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/d
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/d/export_generation.log 2>&1 &
  GEN=$!
  build_gpu tessera_cuda tessera_generation_bench tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*:*GenerationLoop*' > $OUT/d/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/d/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $GEN
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2; do
    for a in 1 0; do
      echo "== round $round fp16 prompt model automatic_cuda_graphs=$a"
      $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx --ep-option automatic_cuda_graphs=$a 2>&1 | grep -v "^tokens "
    done
  done
  for a in 1 0; do
    echo "== fp32 prompt model automatic_cuda_graphs=$a"
    $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx --ep-option automatic_cuda_graphs=$a 2>&1 | grep -v "^tokens "
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/d_logs.tgz chain.log d 2>/dev/null
touch $OUT/DONE
