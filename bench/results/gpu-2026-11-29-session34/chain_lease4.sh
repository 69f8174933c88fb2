#!/usr/bin/env bash
# Session 34, lease 4: depthwise_pointwise_conv.comp with its tap loops unrolled ([[unroll]]) against the lease-3
# shader (out/old_dp) and the unfused kernels (the pass disabled), MobileNetV2 fp16 / fp32 on the Vulkan EP,
# alternating; the profile by op; the Vulkan tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2_fp16 mobilenet_v2 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  cp build-gpu/libtessera_vulkan.so /tmp/vk_new.so
  cp src/providers/vulkan/shaders/depthwise_pointwise_conv.comp /tmp/dp_new.comp
  cp out/old_dp/depthwise_pointwise_conv.comp src/providers/vulkan/shaders/ && ninja -C build-gpu tessera_vulkan > $OUT/a/old_build.log 2>&1 && cp build-gpu/libtessera_vulkan.so /tmp/vk_old.so && echo OLD_BUILT
  cp /tmp/dp_new.comp src/providers/vulkan/shaders/depthwise_pointwise_conv.comp && ninja -C build-gpu tessera_vulkan >> $OUT/a/old_build.log 2>&1 && echo NEW_RESTORED
  wait $EXPORT
  T=build-gpu/tessera
  OFF="--config session.disabled_optimizers=depthwise_pointwise_fusion"
  for round in 1 2; do
    for m in mobilenet_v2_fp16 mobilenet_v2; do
      for v in new old unfused; do
        so=/tmp/vk_new.so; extra=""
        [[ $v == old ]] && so=/tmp/vk_old.so
        [[ $v == unfused ]] && extra=$OFF
        echo "== $m $v round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --plugin vulkan=$so $extra --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|rror" | head -3
      done
    done
    echo "ROUND_DONE $round at $((SECONDS-start)) s"
  done
  rm -f /tmp/vkprof_*.json
  timeout 100 $T bench /tmp/tessera-bench/mobilenet_v2_fp16.onnx --ep vulkan --plugin vulkan=/tmp/vk_new.so --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
  f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
  [[ -n $f ]] && cp $f $OUT/a/vkprof_mnv2_fp16_unrolled.json && $T profile-summary $f --top 14 --run 12 2>&1 | tail -9
  echo "BENCH_DONE at $((SECONDS-start)) s"
  build_gpu tessera_tests || { echo TEST_BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "TESTS_BUILT at $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*:DepthwisePointwise*' > $OUT/a/tests.txt 2>&1; tail -8 $OUT/a/tests.txt
  grep -E "FAILED|Failure" $OUT/a/tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
