#!/usr/bin/env bash
# Session 16, lease 10: the six-model side-by-side on the session's final code (1bd0480).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  RUNS=200 TIME_BUDGET=6 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16
  echo "SBS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a10_logs.tgz chain.log side_by_side side_by_side.md 2>/dev/null
touch $OUT/DONE
