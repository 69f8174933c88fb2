#!/usr/bin/env bash
# Session 23, lease 3: host values computed from shapes and read on the device no longer keep a model from automatic
# graphs (copied once per captured shape): Cuda* tests, the GPT-2 prompt model's graph status and time, generation.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/b/export_generation.log 2>&1 &
  GEN=$!
  build_gpu tessera_cuda tessera_generation_bench tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*' > $OUT/b/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/b/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $GEN
  T=build-gpu/tessera
  for m in gpt2_prompt_fp16 gpt2_prompt; do
    echo "== $m 16 tokens"
    timeout 120 $T bench /tmp/gen/$m.onnx --ep cuda --shape input_ids=1x16 --modes host,io,graph --runs 200 --time-budget 4 2>&1 | grep -vE "^\[tessera|^Inputs"
  done
  echo "== prompt model eager (automatic_cuda_graphs=0)"
  timeout 60 $T bench /tmp/gen/gpt2_prompt_fp16.onnx --ep cuda --ep-option automatic_cuda_graphs=0 --shape input_ids=1x16 --modes host,io --runs 200 --time-budget 3 2>&1 | grep -E "^(host|io|Graphs)"
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2; do
    for a in 1 0; do
      echo "== round $round fp16 prompt model automatic_cuda_graphs=$a"
      $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx --ep-option automatic_cuda_graphs=$a 2>&1 | grep -v "^tokens "
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b 2>/dev/null
touch $OUT/DONE
