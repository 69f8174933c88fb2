#!/usr/bin/env bash
# Session 39, lease 1: the depthwise kernel with compile-time windows (DepthwiseWindow) -- the CUDA tests, MobileNetV2
# fp16 / fp32 with the session's starting plugin (old) and the new one alternating, the in-graph kernel profiles,
# and GPT-2 past 16's host-tensor run on the device timeline (issue 14: host tensors 1.36x the own graph).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  mkdir -p /tmp/old && cp -r $(ls -A | grep -v '^build-gpu$') /tmp/old/ && cp out/old_depthwise_conv.cu /tmp/old/src/providers/cuda/kernels/depthwise_conv.cu
  ( cd /tmp/old && export OUT=$OUT/old && mkdir -p $OUT && source scripts/gpu_host/build_gpu.sh && build_gpu tessera_cuda tessera_cli tessera_python && echo OLD_BUILT ) > $OUT/old_build.txt 2>&1 &
  OLD=$!
  timeout 300 build-gpu/tessera_tests --gtest_filter='CudaNhwc*:CudaKernels*:CudaConv*:CudaAutomaticGraphs*:CudaGraph*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  tail -6 $OUT/a/cuda_tests_summary.txt; head -40 $OUT/a/cuda_test_failures.txt
  echo "TESTS at $((SECONDS-start)) s"
  wait $EXPORT
  TESSERA_BENCH_MODELS=/tmp/tessera-bench timeout 200 build-gpu/tessera_tests --gtest_filter='CudaModelsTest.*' > $OUT/a/models_test.txt 2>&1
  grep -E "MODEL|OK \]|FAILED|PASSED" $OUT/a/models_test.txt | grep -v "run 1\|run 2" | tail -14
  wait $OLD; tail -2 $OUT/old_build.txt
  echo "OLD at $((SECONDS-start)) s"
  for round in 1 2 3; do
    for m in mobilenet_v2_fp16 mobilenet_v2; do
      for v in new old; do
        echo "== $m $v round $round"
        T=build-gpu/tessera; [[ $v == old ]] && T=/tmp/old/build-gpu/tessera
        export TESSERA_CACHE_DIR=/tmp/cache_$v
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --runs 400 --warmup 20 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "^host tensors|^io binding" | head -3
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --ep-option automatic_cuda_graphs=0 --runs 400 --warmup 20 --time-budget 2 --modes io 2>&1 | grep -E "^io binding" | sed 's/^/eager /' | head -1
      done
    done
  done
  echo "BENCH at $((SECONDS-start)) s"
  for v in new old; do
    P=$PWD/build-gpu/python; [[ $v == old ]] && P=/tmp/old/build-gpu/python
    for m in mobilenet_v2_fp16 mobilenet_v2; do
      TESSERA_CACHE_DIR=/tmp/cache_$v PYTHONPATH=$P timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/$m.onnx --runs 60 --top 30 --sequence 70 > $OUT/a/profile_${m}_$v.txt 2>&1
      echo "== profile $m $v"; sed -n 3,16p $OUT/a/profile_${m}_$v.txt | cut -c1-130
    done
  done
  TESSERA_CACHE_DIR=/tmp/cache_new PYTHONPATH=$PWD/build-gpu/python timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/gpt2_past16.onnx --runs 60 --top 30 --sequence 400 --trace $OUT/a/gpt2_host_trace.json > $OUT/a/profile_gpt2_host.txt 2>&1
  echo "== profile gpt2 host"; sed -n 3,20p $OUT/a/profile_gpt2_host.txt | cut -c1-130
  gzip -f $OUT/a/gpt2_host_trace.json
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
