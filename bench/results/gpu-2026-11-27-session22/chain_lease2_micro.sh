#!/usr/bin/env bash
# Session 22, lease 1b: per-dispatch cost and product speed on micro models (Vulkan vs CUDA).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/h
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 out/micro.py /tmp
  ( LOG_DIR=$OUT/h export_bench_models /tmp/tessera-bench bert_base_s128_fp16 resnet50_fp16 ) &
  build_gpu tessera_vulkan tessera_cli tessera_cuda || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  for m in relu200 mm768 mm3072; do
    for v in "" "TESSERA_VULKAN_DIRECT_PRODUCTS=0" "TESSERA_EXPERIMENT_NO_BARRIERS=1" "TESSERA_VULKAN_COOPERATIVE_MATRIX=0"; do
      echo "== $m vulkan $v"
      env $v timeout 60 $T bench /tmp/$m.onnx --ep vulkan --modes graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "recorded|rror"
    done
    echo "== $m cuda"
    timeout 60 $T bench /tmp/$m.onnx --ep cuda --modes graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "graph|rror"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain_h.log 2>&1
touch $OUT/DONE_H
