#!/usr/bin/env bash
# Session 27, lease 2: the warm-up covering float16/float32 NHWC fused convolutions and three cuBLASLt precisions.
# Cuda* tests, then creation A/B (library_warmup 0 / 1, ONNX Runtime alternating, tuning cache of an earlier
# process), verbose phase logs and a cuDNN API log of one warm creation.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/b export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 150 build-gpu/tessera_tests --gtest_filter='CudaEpTest.LibraryWarmup*' > $OUT/b/new_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|OK \]" $OUT/b/new_tests.txt | head -10
  timeout 420 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*:*GenerationLoop*' > $OUT/b/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/b/cuda_tests.txt | head -20
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  MODELS="resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16"
  for m in $MODELS; do
    export TESSERA_CACHE_DIR=/tmp/cache_$m; rm -rf $TESSERA_CACHE_DIR
    echo "COLD $m: $($T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 5 --warmup 1 --time-budget 1 2>&1 | grep -E "session creation|first run|^io" | tr '\n' ' ')"
  done
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench
  echo "ORT_BUILT at $((SECONDS-start)) s"
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  for m in $MODELS; do
    export TESSERA_CACHE_DIR=/tmp/cache_$m
    for round in 1 2 3 4; do
      o=$(ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 100 /tmp/ort/ort_cuda_bench /tmp/tessera-bench/$m.onnx 20 2>&1 | grep -i "create\|first" | tr '\n' ' ')
      echo "ORT $m r$round: $o"
      for w in 0 1; do
        r=$($T bench /tmp/tessera-bench/$m.onnx --ep cuda --ep-option library_warmup=$w --modes io --runs 5 --warmup 1 --time-budget 1 2>&1 | grep -E "session creation|first run" | tr '\n' ' ')
        echo "TES $m warmup=$w r$round: $r"
      done
    done
  done
  echo "AB_DONE at $((SECONDS-start)) s"
  for m in resnet50_fp16 mobilenet_v2_fp16; do
    export TESSERA_CACHE_DIR=/tmp/cache_$m
    for w in 0 1; do
      $T bench /tmp/tessera-bench/$m.onnx --ep cuda --ep-option library_warmup=$w --modes io --runs 5 --warmup 1 --time-budget 1 --verbose > $OUT/b/verbose_${m}_$w.txt 2>&1
      echo "== $m warmup=$w: $(grep -i "session creation" $OUT/b/verbose_${m}_$w.txt | sed 's/\[tessera V [0-9.]*\] session creation: //' | tr '\n' ' ')"
    done
  done
  export TESSERA_CACHE_DIR=/tmp/cache_resnet50_fp16
  CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=$OUT/b/cudnn_api.log $T bench /tmp/tessera-bench/resnet50_fp16.onnx --ep cuda --modes io --runs 5 --warmup 1 --time-budget 1 --verbose > $OUT/b/verbose_cudnnlog.txt 2>&1
  echo "cudnn log lines: $(wc -l < $OUT/b/cudnn_api.log)"
  gzip -f $OUT/b/cudnn_api.log
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b 2>/dev/null
touch $OUT/DONE
