#!/usr/bin/env bash
# Session 25, lease 3: replayed sessions search depthwise convolutions among the graph API's plans and Tessera's
# kernel only. CUDA tests, creation probes, the side-by-side bench on MobileNetV2 fp32 / fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/c
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/c export_bench_models /tmp/tessera-bench mobilenet_v2 mobilenet_v2_fp16 resnet50_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/c/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/c/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for m in mobilenet_v2_fp16 resnet50_fp16; do
    export TESSERA_CACHE_DIR=/tmp/probe_cache_$m; rm -rf $TESSERA_CACHE_DIR
    for round in cold warm; do
      $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 20 --warmup 2 --time-budget 1 --verbose > $OUT/c/verbose_${m}_$round.txt 2>&1
      echo "== $m $round: $(grep -i "creat" $OUT/c/verbose_${m}_$round.txt | grep -v "^\[tessera" | head -3 | tr '\n' ' ')"
    done
  done
  unset TESSERA_CACHE_DIR
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh mobilenet_v2 mobilenet_v2_fp16
  echo "SBS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/c_logs.tgz chain.log c side_by_side side_by_side.md 2>/dev/null
touch $OUT/DONE
