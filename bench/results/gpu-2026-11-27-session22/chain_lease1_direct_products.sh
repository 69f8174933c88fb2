#!/usr/bin/env bash
# Session 22, lease 1: float16 products loaded straight from memory (matmul_direct.comp): Vulkan tests, A/B bench.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/h
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/h export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli tessera_tests tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/h/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/h/vulkan_tests.txt | head -20
  wait $EXPORT
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128; do
      for d in 0 1; do
        echo "== round $round $m direct=$d"
        TESSERA_VULKAN_DIRECT_PRODUCTS=$d timeout 100 $T bench $B/$m.onnx --ep vulkan --modes io,graph --runs 100 --warmup 10 --time-budget 3 2>&1 | grep -E "^(host|io)|rror"
      done
    done
  done
  rm -f /tmp/vkprof_*.json
  timeout 100 $T bench $B/bert_base_s128_fp16.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
  f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
  [[ -n $f ]] && $T profile-summary $f --top 14 --run 12 > $OUT/h/profile_bert16.txt 2>&1
  head -40 $OUT/h/profile_bert16.txt
  for m in bert_base_s128_fp16; do
    timeout 300 $T run $B/$m.onnx --ep cpu --output-dir $OUT/h/out_cpu > /dev/null 2>&1
    timeout 300 $T run $B/$m.onnx --ep vulkan --output-dir $OUT/h/out_vulkan > /dev/null 2>&1
    python3 -c "
import numpy as np, glob
for f in sorted(glob.glob('$OUT/h/out_cpu/*.npy')):
    a = np.load(f).astype(np.float64); b = np.load(f.replace('out_cpu', 'out_vulkan')).astype(np.float64)
    print('$m vulkan vs cpu max rel diff', np.abs(a - b).max() / np.abs(a).max())"
  done
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    echo "== $m"
    timeout 100 $T bench $B/$m.onnx --ep vulkan --modes io,graph --runs 100 --warmup 10 --time-budget 3 2>&1 | grep -E "^(host|io)|rror"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain_h.log 2>&1
touch $OUT/DONE_H
