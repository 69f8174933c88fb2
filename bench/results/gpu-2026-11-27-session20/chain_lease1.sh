#!/usr/bin/env bash
# Session 20, lease 1: CUDA tests on the warp-per-row SkipLayerNormalization and the packed Q/K/V attention, A/B of
# both on BERT-base s128 (fp16, fp32), then the six-model side-by-side against ONNX Runtime's CUDA EP, then the
# Python suite's CUDA cases.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128; do
      for variant in new unpacked strict_sln; do
        case $variant in
          new) extra=() ;;
          unpacked) extra=(--config session.disabled_optimizers=packed_qkv_attention) ;;
          strict_sln) extra=(--ep-option enable_skip_layer_norm_strict_mode=1) ;;
        esac
        echo "== round $round $m $variant"
        timeout 120 $T bench $B/$m.onnx --ep cuda "${extra[@]}" --modes host,io,graph --runs 300 --warmup 20 --time-budget 6 2>&1 \
          | grep -E "^(host|io)" | head -6
      done
    done
  done
  echo "AB_DONE at $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  RUNS=200 TIME_BUDGET=6 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16
  echo "SBS_DONE at $((SECONDS-start)) s"
  CPU_BENCH=0 timeout 300 bash scripts/gpu_host/run_python_and_cpu_bench.sh > $OUT/a/python.txt 2>&1
  tail -15 $OUT/a/python.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
