#!/usr/bin/env bash
# Session 38, lease 1: the side by side with ONNX Runtime's CUDA EP on the session's starting code (404b460), and the
# eager per-step host time (profile) of every model.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  for i in $(seq 1 200); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  echo "== parts at $((SECONDS-start)) s"
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  wait $EXPORT
  echo "== side by side at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=3 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 > $OUT/sbs.log 2>&1
  tail -80 $OUT/sbs.log
  echo "== steps at $((SECONDS-start)) s"
  T=build-gpu/tessera
  for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16; do
    rm -f /tmp/p_${m}_*.json
    timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --ep-option automatic_cuda_graphs=0 --modes io --runs 200 --time-budget 2 --profile /tmp/p_$m > /dev/null 2>&1
    $T profile-summary /tmp/p_${m}_*.json 2>&1 | sed -n 1,24p > $OUT/a/steps_$m.txt
    echo "== $m: $(grep -E 'median host time' $OUT/a/steps_$m.txt)"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
