#!/usr/bin/env bash
# Session 15, lease 1: where session creation of the conv nets goes (verbose timeline, cold and warm tuning cache,
# HEURISTIC, automatic graphs off), ONNX Runtime's creation beside it.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/c1
{
  set -x
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench || echo ORT_BENCH_BUILD_FAILED
  wait $EXPORT
  B=/tmp/tessera-bench
  T="build-gpu/tessera bench"
  for m in mobilenet_v2 resnet50 mobilenet_v2_fp16 resnet50_fp16; do
    ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 300 /tmp/ort/ort_cuda_bench $B/$m.onnx 50 \
      > $OUT/c1/${m}_ort.txt 2>&1
    export TESSERA_CACHE_DIR=/tmp/tc_$m; rm -rf $TESSERA_CACHE_DIR
    timeout 300 $T $B/$m.onnx --ep cuda --modes host --runs 50 --verbose --profile $OUT/c1/${m}_cold.json > $OUT/c1/${m}_cold.txt 2> $OUT/c1/${m}_cold.log
    timeout 300 $T $B/$m.onnx --ep cuda --modes host --runs 50 --verbose --profile $OUT/c1/${m}_warm.json > $OUT/c1/${m}_warm.txt 2> $OUT/c1/${m}_warm.log
    export TESSERA_CACHE_DIR=/tmp/tch_$m; rm -rf $TESSERA_CACHE_DIR
    timeout 300 $T $B/$m.onnx --ep cuda --modes host --runs 50 --ep-option cudnn_conv_algo_search=HEURISTIC --verbose > $OUT/c1/${m}_heur.txt 2> $OUT/c1/${m}_heur.log
    timeout 300 $T $B/$m.onnx --ep cuda --modes host --runs 50 --ep-option automatic_cuda_graphs=0 --verbose > $OUT/c1/${m}_eager_warmh.txt 2> $OUT/c1/${m}_eager_warmh.log
    timeout 300 $T $B/$m.onnx --ep cuda --modes host --runs 50 --config session.prepare_static_shapes=0 > $OUT/c1/${m}_noprep.txt 2>&1
  done
  echo "BENCH_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/c1_logs.tgz chain.log c1
touch $OUT/DONE
