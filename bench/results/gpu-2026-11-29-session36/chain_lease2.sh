#!/usr/bin/env bash
# Session 36, lease 2: NHWC pooling in 16-byte words, and NCHW convolution inputs of fewer channels than a word (an
# image's 3) widened with zeros when staged in NHWC: the CUDA tests, the conv nets against PyTorch, ResNet-50 and
# MobileNetV2 (fp16 / fp32) with the widening off and on (alternating), the in-graph kernel profile of ResNet-50 fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*:MatMulSkipLayerNorm*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  tail -6 $OUT/a/cuda_tests_summary.txt; head -40 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  wait $EXPORT
  TESSERA_BENCH_MODELS=/tmp/tessera-bench timeout 200 build-gpu/tessera_tests --gtest_filter='CudaModelsTest.*' > $OUT/a/models_test.txt 2>&1
  grep -E "MODEL|OK \]|FAILED|PASSED" $OUT/a/models_test.txt | grep -v "run 1\|run 2" | tail -14
  echo "TESTS_DONE at $((SECONDS-start)) s"
  for round in 1 2; do
    for pad in 0 1; do
      for m in resnet50_fp16 resnet50 mobilenet_v2_fp16 mobilenet_v2; do
        echo "== $m round $round pad=$pad"
        TESSERA_CUDA_PAD_CONV_CHANNELS=$pad build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
      done
    done
  done
  export PYTHONPATH=$PWD/build-gpu/python
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/$m.onnx --runs 60 --top 25 --sequence 12 > $OUT/a/profile_$m.txt 2>&1
    head -32 $OUT/a/profile_$m.txt | cut -c1-140
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
