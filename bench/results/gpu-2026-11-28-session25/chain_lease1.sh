#!/usr/bin/env bash
# Session 25, lease 1: automatically replayed sessions choose convolutions by device time (legacy fused call,
# graph-API plans, depthwise kernel). CUDA tests, the side-by-side bench on the conv models, then the Vulkan EP
# (loader carried in .gl) on the default model.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 resnet50_fp16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    echo "== choices $m (automatic graphs)"
    $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 20 --warmup 2 --time-budget 2 --verbose 2>&1 \
      | grep -o "legacy algorithm [0-9]* math type [0-9]* workspace [0-9]*\(, bias/residual/activation in cuDNN's call\)\?\|graph-API plan\|Tessera's depthwise kernel" | sort | uniq -c
  done
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  for i in $(seq 1 100); do [[ -f /tmp/models/READY2 ]] && break; sleep 2; done
  echo "ORT_BUILT at $((SECONDS-start)) s"
  EXTRA_MODELS=/tmp/models RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 default yolo11s_mushroom_fp16 retinaface_mnet25
  echo "SBS_DONE at $((SECONDS-start)) s"
  unset TESSERA_PLUGIN
  $T devices 2>&1 | grep -i "vulkan\|warning" | head -4
  timeout 120 $T bench /tmp/models/default.onnx --shape x=1x3x640x640 --ep vulkan --modes host,io,graph --runs 100 --time-budget 4 2>&1 | tail -4
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    timeout 120 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes graph --runs 100 --time-budget 3 2>&1 | tail -1
  done
  echo "VULKAN_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
