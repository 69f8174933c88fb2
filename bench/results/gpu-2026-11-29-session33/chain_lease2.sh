#!/usr/bin/env bash
# Session 33, lease 2 (lease 1 went back before its results came): GPT-2 host tensors with the automatic graph's copies beside the kernels (A/B with
# TESSERA_AUTOMATIC_GRAPH_OVERLAP=0, same build, alternating), the CUDA automatic-graph tests, and Vulkan profiles
# of MobileNetV2 fp16, ResNet-50 fp16 and BERT fp16 (where the device time goes).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 gpt2_past16_fp16 mobilenet_v2_fp16 resnet50_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaAutomaticGraphs*:CudaGenerationLoop*:CudaPipelines*:CudaStreamSets*' 2>&1 | tail -4
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  $T devices 2>&1 | grep -ic vulkan
  for m in mobilenet_v2_fp16 resnet50_fp16 bert_base_s128_fp16; do
    echo "== vulkan $m"
    timeout 100 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes io,graph --runs 100 --warmup 10 --time-budget 3 2>&1 | grep -E "^(io|host)|rror" | head -4
    rm -f /tmp/vkprof_*.json
    timeout 100 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
    f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
    [[ -n $f ]] && cp $f $OUT/a/vkprof_$m.json && $T profile-summary $f --top 25 --run 12 2>&1 | head -45
  done
  echo "VULKAN_DONE at $((SECONDS-start)) s"
  for m in gpt2_past16 gpt2_past16_fp16; do
    for round in 1 2; do
      for ov in 1 0; do
        echo "== $m overlap=$ov round $round"
        TESSERA_AUTOMATIC_GRAPH_OVERLAP=$ov timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "^(host|io)" | head -3
      done
    done
  done
  timeout 60 $T bench /tmp/tessera-bench/gpt2_past16.onnx --ep cuda --runs 20 --time-budget 1 --modes host --verbose 2>&1 | grep -i "captured graph" | head -3
  echo "GPT2_DONE at $((SECONDS-start)) s"
  MODELS=gpt2_past16 MODES=host SECONDS_PER_RUN=5 TOP=40 bash scripts/gpu_host/host_sample_probe.sh 2>&1 | tail -42
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease2_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
