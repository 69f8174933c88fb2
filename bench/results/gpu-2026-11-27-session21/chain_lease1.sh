#!/usr/bin/env bash
# Session 21, lease 1: the Vulkan EP with float16 products on NV cooperative matrices and device-time profiling.
# Vulkan tests (the float16 op tests run on the matrix units), then BERT / ResNet-50 / MobileNetV2 fp16 on Vulkan
# with and without cooperative matrices (A/B, same lease), a Vulkan profile of each, and Tessera's CUDA EP alongside.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 resnet50 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  $T devices 2>&1 | grep -i -o "float16_matrix_kernels=[a-z_]*\|name=NVIDIA[^,]*" | head -4
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/a/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/a/vulkan_tests.txt | head -20
  echo "VK_TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  B=/tmp/tessera-bench
  for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16; do
    for coop in 1 0 1; do
      echo "== $m vulkan coop=$coop"
      TESSERA_VULKAN_COOPERATIVE_MATRIX=$coop timeout 120 $T bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 \
        --warmup 10 --time-budget 5 2>&1 | grep -E "^(host|io|graph)|rror" | head -6
    done
    echo "== $m cuda"
    timeout 120 $T bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 --time-budget 4 2>&1 | grep -E "^(host|io)" | head -6
    for coop in 1 0; do
      rm -f /tmp/vkprof_*.json
      TESSERA_VULKAN_COOPERATIVE_MATRIX=$coop timeout 120 $T bench $B/$m.onnx --ep vulkan --modes io --runs 20 --warmup 3 \
        --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
      f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
      echo "== profile $m coop=$coop"
      [[ -n $f ]] && $T profile-summary $f --top 14 --run 12 2>&1 | head -32
    done
    echo "MODEL_DONE $m at $((SECONDS-start)) s"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log 2>/dev/null
touch $OUT/DONE
