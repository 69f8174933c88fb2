#!/usr/bin/env bash
# Session 32, lease 2: pair epilogues (FusedMatMul, channels-last Conv) and the word-per-thread SkipLayerNormalization:
# bench against lease 1, the in-graph kernel profile, GPT-2 generation, the CUDA tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 gpt2_past16 mobilenet_v2 mobilenet_v2_fp16 ) &
  EXPORT=$!
  ( python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/a/export_generation.log 2>&1 ) &
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT cli in $((SECONDS-start)) s"
  wait $EXPORT
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  ( build_gpu tessera_tests tessera_generation_bench tessera_python > $OUT/a/build2.log 2>&1 ) &
  BUILD2=$!
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128 mobilenet_v2_fp16 mobilenet_v2 gpt2_past16; do
      echo "== $m round $round"
      build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
    done
  done
  build-gpu/tessera partition /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN > $OUT/a/partition_bert_fp16.txt 2>&1
  wait $BUILD2; cat $OUT/a/build2.log
  echo "BUILT all at $((SECONDS-start)) s"
  export PYTHONPATH=$PWD/build-gpu/python
  for m in bert_base_s128_fp16 mobilenet_v2_fp16; do
    timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/$m.onnx --runs 60 --top 25 --sequence 40 > $OUT/a/profile_$m.txt 2>&1
    head -16 $OUT/a/profile_$m.txt
  done
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  for round in 1 2; do
    $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -E "tokens_per_s|ms_per_decode|tokens_match"
  done
  $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx 2>&1 | grep -E "tokens_per_s|ms_per_decode|tokens_match"
  echo "== tests at $((SECONDS-start)) s"
  timeout 420 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  tail -5 $OUT/a/cuda_tests_summary.txt; head -40 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease2_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
