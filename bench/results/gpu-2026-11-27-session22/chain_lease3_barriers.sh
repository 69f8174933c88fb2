#!/usr/bin/env bash
# Session 22, lease 2: barriers that name only the stages and accesses involved: tests, conformance, every model.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/h
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 out/micro.py /tmp
  ( LOG_DIR=$OUT/h export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli tessera_tests tessera_testing_ep tessera_conformance || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/h/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/h/vulkan_tests.txt | head -20
  timeout 300 build-gpu/tessera_conformance --ep vulkan --data $TESSERA_ONNX_TESTDATA \
    --expect tests/conformance/expected_vulkan.txt > $OUT/h/conformance_vulkan.txt 2>&1
  tail -3 $OUT/h/conformance_vulkan.txt; grep REGRESSION $OUT/h/conformance_vulkan.txt | head
  T=build-gpu/tessera
  echo "== relu200"
  timeout 60 $T bench /tmp/relu200.onnx --ep vulkan --modes graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "recorded|rror"
  wait $EXPORT
  B=/tmp/tessera-bench
  for round in 1 2; do
    for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 bert_base_s128_fp16; do
      echo "== round $round $m"
      timeout 100 $T bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 --warmup 10 --time-budget 3 2>&1 | grep -E "^(host|io)|rror"
    done
  done
  for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16; do
    rm -f /tmp/vkprof_*.json
    timeout 100 $T bench $B/$m.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
    f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
    echo "== profile $m"
    [[ -n $f ]] && $T profile-summary $f --top 14 --run 12 2>&1 | tail -22
  done
  for m in bert_base_s128 resnet50 mobilenet_v2_fp16; do
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
