#!/usr/bin/env bash
# Session 20, lease 3: CUDA tests with batched device copies (IoBinding inputs and outputs); IO-bound A/B rows;
# the six-model side-by-side on the final code.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/c
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/c export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/c/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/c/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for m in gpt2_past16 bert_base_s128_fp16; do
    echo "== $m"
    timeout 120 $T bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 300 --warmup 20 --time-budget 6 2>&1 | grep -E "^(host|io)" | head -6
  done
  echo "AB_DONE at $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  RUNS=200 TIME_BUDGET=6 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16
  echo "SBS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/c_logs.tgz chain.log c side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
