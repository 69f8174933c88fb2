#!/usr/bin/env bash
# Session 25, lease 2: replayed sessions without cuDNN's measured list (cudnnFind); CUDA tests and conformance,
# creation probes (verbose timestamps), the side-by-side bench on the conv models, the Vulkan EP on three models.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/b export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 resnet50_fp16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests tessera_conformance || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/b/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/b/cuda_tests.txt | head -20
  build-gpu/tessera_conformance --ep CUDAExecutionProvider --plugin cuda="$PWD/build-gpu/libtessera_cuda.so" \
    --ep-option use_tf32=0 --data "$TESSERA_ONNX_TESTDATA" --expect tests/conformance/expected_cuda.txt \
    --list-failures > $OUT/b/conformance_cuda.log 2>&1
  tail -4 $OUT/b/conformance_cuda.log
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    export TESSERA_CACHE_DIR=/tmp/probe_cache_$m; rm -rf $TESSERA_CACHE_DIR
    for round in cold warm; do
      $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 20 --warmup 2 --time-budget 1 --verbose > $OUT/b/verbose_${m}_$round.txt 2>&1
      echo "== $m $round: $(grep -i "creat" $OUT/b/verbose_${m}_$round.txt | grep -v "^\[tessera" | head -3 | tr '\n' ' ')"
    done
  done
  unset TESSERA_CACHE_DIR
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16
  echo "SBS_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/b_logs.tgz chain.log b side_by_side side_by_side.md 2>/dev/null; cd /tmp/tw
  unset TESSERA_PLUGIN
  timeout 120 $T bench /tmp/models/default.onnx --shape x=1x3x640x640 --ep vulkan --modes host,io,graph --runs 100 --time-budget 4 2>&1 | tail -4
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    timeout 120 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes graph --runs 100 --time-budget 3 2>&1 | tail -1
  done
  echo "VULKAN_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
