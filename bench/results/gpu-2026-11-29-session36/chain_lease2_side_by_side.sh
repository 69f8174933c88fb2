#!/usr/bin/env bash
# Session 36, lease 2 (second chain, same machine): the side by side with ONNX Runtime's CUDA EP on the session's
# code (the input-channel widening off: TESSERA_CUDA_PAD_CONV_CHANNELS=0, as committed without it).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu3
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 gpt2_past16 ) &
  EXPORT=$!
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  export TESSERA_CUDA_PAD_CONV_CHANNELS=0
  for i in $(seq 1 200); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  echo "== parts at $((SECONDS-start)) s"
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  wait $EXPORT
  echo "== side by side at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=3 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 > $OUT/sbs.log 2>&1
  tail -80 $OUT/sbs.log
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
