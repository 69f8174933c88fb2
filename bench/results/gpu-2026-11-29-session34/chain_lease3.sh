#!/usr/bin/env bash
# Session 34, lease 3: MobileNetV2 on the Vulkan EP with depthwise_pointwise_fusion (on by default there) against the
# same build with the pass disabled (--config session.disabled_optimizers=depthwise_pointwise_fusion), alternating,
# recorded and IO-bound; outputs against the CPU; the profile by op; ResNet-50 / BERT fp16 once; the Vulkan tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2_fp16 mobilenet_v2 resnet50_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  OFF="--config session.disabled_optimizers=depthwise_pointwise_fusion"
  for round in 1 2 3; do
    for m in mobilenet_v2_fp16 $( ((round == 1)) && echo mobilenet_v2 ); do
      for v in fused unfused; do
        extra=""; [[ $v == unfused ]] && extra=$OFF
        echo "== $m $v round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan $extra --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|rror" | head -3
      done
    done
    echo "ROUND_DONE $round at $((SECONDS-start)) s"
  done
  for m in resnet50_fp16 bert_base_s128_fp16; do
    echo "== $m"
    timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|rror" | head -3
  done
  for m in mobilenet_v2_fp16 mobilenet_v2; do
    mkdir -p /tmp/o/$m/cpu /tmp/o/$m/f1
    timeout 60 $T run /tmp/tessera-bench/$m.onnx --output-dir /tmp/o/$m/cpu > /dev/null 2>&1
    timeout 60 $T run /tmp/tessera-bench/$m.onnx --ep vulkan --output-dir /tmp/o/$m/f1 > /dev/null 2>&1
    python3 - $m <<'PY'
import sys, glob, os, numpy as np
m = sys.argv[1]
for f in sorted(glob.glob(f"/tmp/o/{m}/cpu/*.npy")):
    n = os.path.basename(f); ref = np.load(f).astype(np.float64)
    g = f"/tmp/o/{m}/f1/{n}"
    if not os.path.exists(g): print(m, n, "MISSING"); continue
    x = np.load(g).astype(np.float64)
    print(m, n, "vulkan fused max abs", float(np.max(np.abs(x - ref))), "max rel to max|ref|", float(np.max(np.abs(x - ref)) / np.max(np.abs(ref))))
PY
  done
  rm -f /tmp/vkprof_*.json
  timeout 100 $T bench /tmp/tessera-bench/mobilenet_v2_fp16.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
  f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
  [[ -n $f ]] && cp $f $OUT/a/vkprof_mnv2_fp16_fused.json && $T profile-summary $f --top 14 --run 12 2>&1 | tail -14
  echo "BENCH_DONE at $((SECONDS-start)) s"
  build_gpu tessera_tests || { echo TEST_BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "TESTS_BUILT at $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*:DepthwisePointwise*' > $OUT/a/tests.txt 2>&1; tail -8 $OUT/a/tests.txt
  grep -E "FAILED|Failure" $OUT/a/tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
