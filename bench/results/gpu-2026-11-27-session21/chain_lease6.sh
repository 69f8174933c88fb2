#!/usr/bin/env bash
# Session 21, lease 6: the Resize align_corners fix on NVIDIA's driver (conformance), then split-K's target grid
# (SplitsFor: about 256 workgroups) against 128 and 512, same machine.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/g
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/g export_bench_models /tmp/tessera-bench resnet50 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli tessera_conformance || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_conformance --ep vulkan --data $TESSERA_ONNX_TESTDATA \
    --expect tests/conformance/expected_vulkan.txt > $OUT/g/conformance_vulkan.txt 2>&1
  tail -4 $OUT/g/conformance_vulkan.txt; grep REGRESSION $OUT/g/conformance_vulkan.txt
  wait $EXPORT
  T=build-gpu/tessera
  B=/tmp/tessera-bench
  for target in 256 128 512 256; do
    sed -i "s/(\([0-9]*\) + workgroups - 1) \/ workgroups/($target + workgroups - 1) \/ workgroups/" src/providers/vulkan/vulkan_kernels.cc
    grep -n "+ workgroups - 1" src/providers/vulkan/vulkan_kernels.cc
    build_gpu tessera_vulkan || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
    for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16 resnet50 bert_base_s128; do
      echo "== target $target $m"
      timeout 100 $T bench $B/$m.onnx --ep vulkan --modes graph --runs 100 --warmup 10 --time-budget 3 2>&1 | grep -E "^io binding \+|rror"
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain_g.log 2>&1
touch $OUT/DONE_G
