#!/usr/bin/env bash
# Session 39, lease 2: the depthwise kernel with compile-time windows, now with the input activation a template
# argument (lease 1's version inlined the general activation at every input: 400-700 KB kernels, 22-32 us each), and
# host feeds uploaded in pieces (session.automatic_graph_upload_pieces) -- the tests, MobileNetV2 fp16 / fp32 against
# the session's starting code (old, built beside it) alternating, GPT-2 past 16 fp32 / fp16 with 1 / 2 / 3 upload
# pieces alternating, the in-graph kernel profile of MobileNetV2 fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 gpt2_past16_fp16 ) &
  EXPORT=$!
  mkdir -p /tmp/old && cp -r $(ls -A | grep -v '^build-gpu$') /tmp/old/ && cp -r out/old/src /tmp/old/
  ( cd /tmp/old && export OUT=$OUT/old && mkdir -p $OUT && source scripts/gpu_host/build_gpu.sh && JOBS=6 build_gpu tessera_cuda tessera_cli tessera_python && echo OLD_BUILT ) > $OUT/old_build.txt 2>&1 &
  OLD=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_tests --gtest_filter='CudaNhwc*:CudaKernels*:CudaConv*:CudaAutomaticGraphs*:CudaGraph*:AutomaticGraphs*:CudaGeneration*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  tail -6 $OUT/a/cuda_tests_summary.txt; head -30 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
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
  echo "BENCH1 at $((SECONDS-start)) s"
  export TESSERA_CACHE_DIR=/tmp/cache_new
  for round in 1 2 3; do
    for m in gpt2_past16 gpt2_past16_fp16; do
      for p in 1 3 2; do
        echo "== $m pieces $p round $round"
        timeout 60 build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --config session.automatic_graph_upload_pieces=$p --runs 600 --warmup 20 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "^host tensors|^io binding" | head -3
      done
      echo "== $m old round $round"
      TESSERA_CACHE_DIR=/tmp/cache_old timeout 60 /tmp/old/build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --runs 600 --warmup 20 --time-budget 2 --modes host 2>&1 | grep -E "^host tensors" | head -1
    done
  done
  echo "BENCH2 at $((SECONDS-start)) s"
  export PYTHONPATH=$PWD/build-gpu/python
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/mobilenet_v2_fp16.onnx --runs 60 --top 30 --sequence 70 > $OUT/a/profile_mobilenet_v2_fp16_new.txt 2>&1
  echo "== profile mobilenet_v2_fp16 new"; sed -n 3,14p $OUT/a/profile_mobilenet_v2_fp16_new.txt | cut -c1-130
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/gpt2_past16.onnx --runs 60 --top 12 --sequence 60 > $OUT/a/profile_gpt2_host_pieces3.txt 2>&1
  echo "== profile gpt2 host, 3 pieces"; sed -n 3,8p $OUT/a/profile_gpt2_host_pieces3.txt | cut -c1-130
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
