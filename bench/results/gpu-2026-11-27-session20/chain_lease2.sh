#!/usr/bin/env bash
# Session 20, lease 2: CUDA tests on the final code; host-tensor copies on the pool (A/B by --threads 1, which copies
# on the calling thread); ncu of BERT-base fp16's kernels (the epilogue over words); the six-model side-by-side.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/b export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/b/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/b/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for round in 1 2; do
    for m in gpt2_past16 resnet50_fp16; do
      for threads in 0 1; do
        echo "== round $round $m threads=$threads"
        timeout 120 $T bench $B/$m.onnx --ep cuda --threads $threads --modes host,io,graph --runs 300 --warmup 20 --time-budget 6 2>&1 \
          | grep -E "^(host|io)" | head -6
      done
    done
  done
  echo "AB_DONE at $((SECONDS-start)) s"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 150 $NCU --clock-control none --launch-skip 3000 --launch-count 40 --print-summary per-kernel \
    $T bench $B/bert_base_s128_fp16.onnx --ep cuda --modes io --runs 200 --warmup 20 > $OUT/b/ncu.txt 2>&1
  echo "NCU rc $? at $((SECONDS-start)) s"
  grep -E "^  [A-Za-z_]|gpu__time_duration|Duration" $OUT/b/ncu.txt | head -60
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  RUNS=200 TIME_BUDGET=6 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16
  echo "SBS_DONE at $((SECONDS-start)) s"
  for m in bert_base_s128_fp16; do
    echo "== $m"
    timeout 120 $T bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 300 --warmup 20 --time-budget 6 2>&1 | grep -E "^(host|io)" | head -6
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
