#!/usr/bin/env bash
# Session 35, lease 1: the current commit side by side with ONNX Runtime's CUDA EP (six models, every mode), the
# Vulkan EP's recorded medians on the same files (three-way table), verbose warm-cache creation logs of the conv
# nets (where creation goes), then the Vulkan and CUDA tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_vulkan || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  ( ninja -C build-gpu -j8 tessera_tests > $OUT/a/tests_build.log 2>&1; echo TESTS_BUILT >> $OUT/a/tests_build.log ) &
  TB=$!
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  wait $EXPORT
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  wait $TB
  echo "== side by side at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=3 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 > $OUT/sbs.log 2>&1
  tail -80 $OUT/sbs.log
  cd $OUT && tar czf $OUT/sbs.tgz sbs.log side_by_side.md side_by_side ort_build.log 2>/dev/null; cd /tmp/tw
  echo "== vulkan / cuda rows at $((SECONDS-start)) s"
  T=build-gpu/tessera
  for round in 1 2; do
    for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 bert_base_s128_fp16; do
      echo "== $m vulkan round $round"
      timeout 90 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes io,graph --runs 200 --warmup 20 --time-budget 2 2>&1 | grep -E "io binding|recorded|rror" | head -3
    done
    echo "== bert_base_s128_fp16 cuda round $round"
    timeout 90 $T bench /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 --time-budget 2 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
  done
  echo "== creation logs at $((SECONDS-start)) s"
  for m in mobilenet_v2_fp16 resnet50_fp16 mobilenet_v2; do
    for k in 1 2; do
      TESSERA_CACHE_DIR=$OUT/side_by_side/tuning_cache_$m timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 5 --time-budget 1 --verbose > $OUT/a/creation_${m}_$k.txt 2>&1
      grep -iE "creation|first run" $OUT/a/creation_${m}_$k.txt | head -3
    done
  done
  echo "== tests at $((SECONDS-start)) s"
  timeout 200 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/a/vulkan_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/vulkan_tests.txt | tail -8
  timeout 200 build-gpu/tessera_tests --gtest_filter='Cuda*:PackedQkv*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt | tail -8
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease1_all.tgz chain.log a sbs.log side_by_side.md side_by_side ort_build.log 2>/dev/null
touch $OUT/DONE
