#!/usr/bin/env bash
# Session 21, lease 3 (continued): cooperative-matrix slices 16 / 32 / 64 deep against the FMA tiles.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  ( LOG_DIR=$OUT export_bench_models /tmp/tessera-bench resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  wait $EXPORT
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for depth in 16 32 64; do
    sed -i "s|^#define TILE_K [0-9]*u  // coop depth|#define TILE_K ${depth}u  // coop depth|" src/providers/vulkan/shaders/coop_tile.glsl
    sed -n '/^#if/,/^#endif/p' src/providers/vulkan/shaders/coop_tile.glsl | head -5
    build_gpu tessera_vulkan || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
    timeout 100 build-gpu/tessera_tests --gtest_filter='VulkanOps*Float16*:VulkanOps*FusedMatMul*' 2>&1 | grep -E "^\[  (PASSED|FAILED)" 
    for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16; do
      for coop in 1 0; do
        [[ $coop == 0 && $depth != 16 ]] && continue
        echo "== depth $depth $m coop=$coop"
        TESSERA_VULKAN_COOPERATIVE_MATRIX=$coop timeout 100 $T bench $B/$m.onnx --ep vulkan --modes graph --runs 100 \
          --warmup 10 --time-budget 3 2>&1 | grep -E "^(graph|io binding \+)|rror" | head -2
      done
    done
  done
  echo ALL_D
} > $OUT/chain_d.log 2>&1
touch $OUT/DONE_D
