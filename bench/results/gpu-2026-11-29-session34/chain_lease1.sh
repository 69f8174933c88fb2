#!/usr/bin/env bash
# Session 34, lease 1: BERT-base on the Vulkan EP with the fused attention on cooperative matrices
# (attention_coop.comp, --ep-option fused_attention=1) against the unfused kernels, alternating, one plugin; the
# Q/K/V merge's effect on the unfused path; outputs against the CPU; the Vulkan tests on the GPU.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128_fp16 bert_base_s128 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2 3; do
    for m in bert_base_s128_fp16 $( ((round == 1)) && echo bert_base_s128 ); do
      for f in 0 1; do
        echo "== $m fused_attention=$f round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --ep-option fused_attention=$f --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|^graph|rror" | head -3
      done
    done
    echo "ROUND_DONE $round at $((SECONDS-start)) s"
  done
  echo "== bert_base_s128_fp16 unfused, no Q/K/V merge"
  timeout 60 $T bench /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep vulkan --config session.disabled_optimizers=shared_input_matmul_fusion --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|^graph|rror" | head -3
  for m in bert_base_s128_fp16 bert_base_s128; do
    mkdir -p /tmp/o/$m/cpu /tmp/o/$m/f1 /tmp/o/$m/f0
    timeout 60 $T run /tmp/tessera-bench/$m.onnx --output-dir /tmp/o/$m/cpu > /dev/null 2>&1
    timeout 60 $T run /tmp/tessera-bench/$m.onnx --ep vulkan --ep-option fused_attention=1 --output-dir /tmp/o/$m/f1 > /dev/null 2>&1
    timeout 60 $T run /tmp/tessera-bench/$m.onnx --ep vulkan --ep-option fused_attention=0 --output-dir /tmp/o/$m/f0 > /dev/null 2>&1
    python3 - $m <<'PY'
import sys, glob, os, numpy as np
m = sys.argv[1]
for f in sorted(glob.glob(f"/tmp/o/{m}/cpu/*.npy")):
    n = os.path.basename(f); ref = np.load(f).astype(np.float64)
    for v in ("f1", "f0"):
        g = f"/tmp/o/{m}/{v}/{n}"
        if not os.path.exists(g): print(m, n, v, "MISSING"); continue
        x = np.load(g).astype(np.float64)
        print(m, n, v, "max abs", float(np.max(np.abs(x - ref))), "max rel to max|ref|", float(np.max(np.abs(x - ref)) / np.max(np.abs(ref))))
PY
  done
  rm -f /tmp/vkprof_*.json
  timeout 100 $T bench /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep vulkan --ep-option fused_attention=1 --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
  f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
  [[ -n $f ]] && cp $f $OUT/a/vkprof_bert_fp16_fused.json && $T profile-summary $f --top 14 --run 12 2>&1 | head -40
  echo "BENCH_DONE at $((SECONDS-start)) s"
  build_gpu tessera_tests || { echo TEST_BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "TESTS_BUILT at $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/a/tests.txt 2>&1; tail -8 $OUT/a/tests.txt
  grep -E "FAILED|Failure" $OUT/a/tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
