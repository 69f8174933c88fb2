#!/usr/bin/env bash
# Session 33, lease 5: conv2d.comp with the window positions kept from slice to slice (no integer divisions per
# element and slice) and the epilogue's column split once per column, against the shader before (out/old_shaders2),
# two plugins from one build, alternating, recorded command buffers.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2_fp16 resnet50_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  cp build-gpu/libtessera_vulkan.so /tmp/vk_new.so
  cp src/providers/vulkan/shaders/conv2d.comp /tmp/conv2d_new.comp
  cp out/old_shaders2/conv2d.comp src/providers/vulkan/shaders/ && ninja -C build-gpu tessera_vulkan > $OUT/a/old_build.log 2>&1 && cp build-gpu/libtessera_vulkan.so /tmp/vk_old.so && echo OLD_BUILT
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2; do
    for m in resnet50_fp16 mobilenet_v2_fp16; do
      for v in new old; do
        echo "== $m $v round $round"
        timeout 40 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --plugin vulkan=/tmp/vk_$v.so --modes graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|rror" | head -2
      done
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
