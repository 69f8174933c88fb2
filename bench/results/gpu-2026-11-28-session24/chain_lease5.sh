#!/usr/bin/env bash
# Session 24, lease 5: the Vulkan EP's global pools (one workgroup per plane) on the default model, H100.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/e
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  $T devices 2>&1 | tail -4
  timeout 120 $T bench /tmp/models/default.onnx --shape x=1x3x640x640 --ep vulkan --modes host,io,graph --runs 100 --time-budget 4 2>&1 | tail -6
  timeout 120 $T bench /tmp/models/default.onnx --shape x=1x3x640x640 --ep vulkan --modes io --runs 20 --warmup 3 --profile /tmp/vp > /dev/null 2>&1
  $T profile-summary $(ls -t /tmp/vp_*.json | head -1) 2>&1 | head -30
  echo "DONE_V at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
