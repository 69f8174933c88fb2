#!/usr/bin/env bash
# Session 24, lease 2: CUDA ConvTranspose (and Resize) tests against the CPU EP, every Cuda* test, then the default
# model (PP-OCRv4 det, now entirely on the CUDA EP) side by side with ONNX Runtime's CUDA EP.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaConvTranspose*:CudaResize*' > $OUT/b/new_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|OK \]" $OUT/b/new_tests.txt | head -30
  grep -B3 -A12 "Failure" $OUT/b/new_tests.txt | head -60
  echo "NEW_TESTS_DONE at $((SECONDS-start)) s"
  for i in $(seq 1 100); do [[ -f /tmp/models/READY ]] && break; sleep 2; done
  build-gpu/tessera partition /tmp/models/default.onnx --ep cuda 2>&1 | grep -v CUDAExecutionProvider | head -12
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  EXTRA_MODELS=/tmp/models RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh default
  echo "SBS_DONE at $((SECONDS-start)) s"
  timeout 420 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/b/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/b/cuda_tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
