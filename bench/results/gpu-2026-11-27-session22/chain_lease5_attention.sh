#!/usr/bin/env bash
# Session 22, lease 5: Vulkan ai.tessera::Attention with unrolled loads: tests (Vulkan, CUDA attention), BERT A/B with attention_fusion.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/h
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/h export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cuda tessera_cli tessera_tests tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*:Cuda*Attention*:*CacheUpdate*:KernelRegistry*' > $OUT/h/tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/h/tests.txt | head -20
  wait $EXPORT
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128; do
      for cfg in "" "--config session.disabled_optimizers=attention_fusion"; do
        echo "== round $round $m $cfg"
        timeout 100 $T bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 --warmup 10 --time-budget 3 $cfg 2>&1 | grep -E "^(host|io)|rror"
      done
    done
  done
  rm -f /tmp/vkprof_*.json
  timeout 100 $T bench $B/bert_base_s128_fp16.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
  f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
  echo "== profile bert fp16"
  [[ -n $f ]] && $T profile-summary $f --top 14 --run 12 2>&1 | tail -20
  for m in bert_base_s128 bert_base_s128_fp16; do
    timeout 300 $T run $B/$m.onnx --ep cpu --output-dir $OUT/h/out_cpu_$m > /dev/null 2>&1
    timeout 300 $T run $B/$m.onnx --ep vulkan --output-dir $OUT/h/out_vulkan_$m > /dev/null 2>&1
    python3 -c "
import numpy as np, glob
for f in sorted(glob.glob('$OUT/h/out_cpu_$m/*.npy')):
    a = np.load(f).astype(np.float64); b = np.load(f.replace('out_cpu', 'out_vulkan')).astype(np.float64)
    print('$m vulkan vs cpu max rel diff', np.abs(a - b).max() / np.abs(a).max())"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain_h.log 2>&1
touch $OUT/DONE_H
