#!/usr/bin/env bash
# Session 34, lease 7 (lease 6 ran the same with 256/64/128, 256/128/128, 256/256/128, 128/64/128, 512/64/128,
# 256/64/64, 256/64/256 and MobileNetV2 fp32 too; tune.log): the Vulkan split-K heuristic's constants (SplitsFor: target workgroups, least depth per chunk,
# grids below which products split), set through temporary environment variables, alternating per model.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2_fp16 resnet50_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2; do
    for m in mobilenet_v2_fp16 resnet50_fp16 bert_base_s128_fp16; do
      for cfg in 256,64,128 256,32,128 256,32,256 512,32,256 256,16,128; do
        IFS=, read tgt dep below <<< "$cfg"
        echo "== $m $cfg round $round"
        TESSERA_VULKAN_SPLIT_TARGET=$tgt TESSERA_VULKAN_SPLIT_DEPTH=$dep TESSERA_VULKAN_SPLIT_BELOW=$below \
          timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes graph --runs 100 --warmup 10 --time-budget 1 2>&1 | grep -E "recorded|rror" | head -2
      done
    done
    echo "ROUND_DONE $round at $((SECONDS-start)) s"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
