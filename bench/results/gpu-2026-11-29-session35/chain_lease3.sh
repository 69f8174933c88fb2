#!/usr/bin/env bash
# Session 35, lease 3: the session's graph-pass changes (Reshape targets copying their input's dims, ranks traced for
# packed Q/K/V) on the GPU EPs: CUDA and Vulkan tests, the bench models against PyTorch, the transformer benches.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 gpt2_past16 gpt2_past16_fp16 resnet50 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_vulkan tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='Cuda*:PackedQkv*:Vulkan*:AttentionFusion*:ShapeSubgraph*' > $OUT/a/tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|FAILED  \]" $OUT/a/tests.txt | tail -8
  wait $EXPORT
  TESSERA_BENCH_MODELS=/tmp/tessera-bench timeout 200 build-gpu/tessera_tests --gtest_filter='CudaModelsTest.*' > $OUT/a/models_test.txt 2>&1
  grep -E "MODEL|OK \]|FAILED|PASSED|relative" $OUT/a/models_test.txt | tail -14
  echo "TESTS_DONE at $((SECONDS-start)) s"
  T=build-gpu/tessera
  for m in bert_base_s128_fp16 bert_base_s128 gpt2_past16 gpt2_past16_fp16; do
    echo "== $m cuda"
    timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 --time-budget 2 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
  done
  echo "== bert_base_s128_fp16 vulkan"
  timeout 60 $T bench /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep vulkan --modes io,graph --runs 200 --warmup 20 --time-budget 2 2>&1 | grep -E "io binding|rror" | head -2
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
grep -v "^\[ RUN\|^\[       OK" $OUT/a/tests.txt > $OUT/a/t && mv $OUT/a/t $OUT/a/tests.txt
touch $OUT/DONE
