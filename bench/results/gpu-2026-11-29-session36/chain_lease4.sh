#!/usr/bin/env bash
# Session 36, lease 4: measurements on the final code -- GPT-2 one token fp16 on the CUDA EP (issue 14's <= 0.50 ms),
# and the Vulkan EP's recorded MobileNetV2 fp16 / ResNet-50 fp16 in rounds (issue 17's <= 0.6 / <= 1.0 ms).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16_fp16 mobilenet_v2_fp16 resnet50_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_vulkan || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2; do
    echo "== gpt2_past16_fp16 cuda round $round"
    timeout 60 $T bench /tmp/tessera-bench/gpt2_past16_fp16.onnx --ep cuda --modes host,io,graph --runs 300 --warmup 20 --time-budget 2 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
    for m in mobilenet_v2_fp16 resnet50_fp16; do
      echo "== $m vulkan round $round"
      timeout 90 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes io,graph --runs 300 --warmup 20 --time-budget 2 2>&1 | grep -E "io binding|recorded|rror" | head -3
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
