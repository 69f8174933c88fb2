#!/usr/bin/env bash
# Session 17, lease 4: the Vulkan EP with bool kernels -- does the fp16 BERT record now? Vulkan tests on the GPU, then
# BERT-base s128 fp16 / fp32, ResNet-50 fp16 and MobileNetV2 fp16 on the Vulkan EP and Tessera's CUDA EP.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/e
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  build-gpu/tessera devices 2>&1 | grep -iE "vulkan|8bit|float16" | head -8
  timeout 200 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/e/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/e/vulkan_tests.txt | head -20
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"; ls /tmp/tessera-bench
  B=/tmp/tessera-bench
  for m in bert_base_s128_fp16 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16; do
    for ep in vulkan cuda; do
      timeout 200 build-gpu/tessera bench $B/$m.onnx --ep $ep --verbose --modes host,io,graph --runs 200 --warmup 20 \
        --time-budget 6 > $OUT/e/${m}_${ep}.txt 2>&1
      echo "== $m $ep"; grep -iE "record|median|creation|first run|graph" $OUT/e/${m}_${ep}.txt | grep -v "^\[tessera V" | tail -10
      grep -iE "not record|cannot record|fall back|on the cpu|CPUExecutionProvider" $OUT/e/${m}_${ep}.txt | head -5
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/e_logs.tgz chain.log e build.log
touch $OUT/DONE
