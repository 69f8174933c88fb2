#!/usr/bin/env bash
# Session 33, lease 4: the Vulkan products with slices loaded three ahead (coop_tile.glsl TILE_LOOP) against one
# ahead (the shaders before, out/old_shaders/, built into a second copy of the plugin in the same build), alternating
# `--plugin vulkan=...` per run; the Vulkan tests on the GPU (cooperative matrices); the automatic-graph tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  M16="mobilenet_v2_fp16 resnet50_fp16 bert_base_s128_fp16"
  M32="mobilenet_v2 resnet50 bert_base_s128"
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench $M16 $M32 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  cp build-gpu/libtessera_vulkan.so /tmp/vk_new.so
  mkdir -p /tmp/new_shaders && cp src/providers/vulkan/shaders/{conv2d.comp,matmul.comp,coop_tile.glsl} /tmp/new_shaders/
  cp out/old_shaders/* src/providers/vulkan/shaders/ && ninja -C build-gpu tessera_vulkan > $OUT/a/old_build.log 2>&1 && cp build-gpu/libtessera_vulkan.so /tmp/vk_old.so && echo OLD_BUILT
  cp /tmp/new_shaders/* src/providers/vulkan/shaders/ && ninja -C build-gpu tessera_vulkan >> $OUT/a/old_build.log 2>&1 && cmp -s build-gpu/libtessera_vulkan.so /tmp/vk_new.so && echo NEW_RESTORED
  timeout 200 build-gpu/tessera_tests --gtest_filter='Vulkan*:CudaAutomaticGraphs*:AutomaticGraphs*' > $OUT/a/tests.txt 2>&1; tail -6 $OUT/a/tests.txt
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2; do
    for m in $M16 $( ((round == 1)) && echo $M32 ); do
      for v in new old; do
        echo "== $m $v round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --plugin vulkan=/tmp/vk_$v.so --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|rror" | head -2
      done
    done
    echo "ROUND_DONE $round at $((SECONDS-start)) s"
  done
  for m in mobilenet_v2_fp16 resnet50_fp16 bert_base_s128_fp16; do
    rm -f /tmp/vkprof_*.json
    timeout 100 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --plugin vulkan=/tmp/vk_new.so --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
    f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
    [[ -n $f ]] && cp $f $OUT/a/vkprof_$m.json && $T profile-summary $f --top 8 --run 12 2>&1 | grep -E "^run:|total"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease4_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
