#!/usr/bin/env bash
# Session 21, lease 2: Vulkan EP after 64-deep slices and FusedMatMul: tests, fp16 and fp32 models with and without
# cooperative matrices, profiles.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/b export_bench_models /tmp/tessera-bench resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 resnet50 mobilenet_v2 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli tessera_tests tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/b/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/b/vulkan_tests.txt | head -20
  echo "VK_TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  B=/tmp/tessera-bench
  for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128 resnet50 mobilenet_v2; do
    coops="1 0"; [[ $m == *fp16* ]] || coops="1"
    for coop in $coops; do
      echo "== $m vulkan coop=$coop"
      TESSERA_VULKAN_COOPERATIVE_MATRIX=$coop timeout 120 $T bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 \
        --warmup 10 --time-budget 4 2>&1 | grep -E "^(host|io|graph)|rror" | head -6
    done
    [[ $m == *fp16* ]] || continue
    rm -f /tmp/vkprof_*.json
    timeout 120 $T bench $B/$m.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
    f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
    echo "== profile $m"
    [[ -n $f ]] && $T profile-summary $f --top 14 --run 12 2>&1 | sed -n '9,30p'
    echo "MODEL_DONE $m at $((SECONDS-start)) s"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b build.log 2>/dev/null
touch $OUT/DONE
