#!/usr/bin/env bash
# Session 15, lease 3: cuDNN plans built ahead and shared (plan_build_threads): CUDA tests, creation cold/warm with
# and without the workers, ONNX Runtime beside it.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/c3
{
  set -x
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_tests --gtest_filter='CudaConvTuning*:KernelSettings*:NchwcLayout*' > $OUT/c3/cuda_tests_focus.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/c3/cuda_tests_focus.txt | head -20
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench || echo ORT_BENCH_BUILD_FAILED
  wait $EXPORT
  B=/tmp/tessera-bench
  T="build-gpu/tessera bench"
  for m in mobilenet_v2 resnet50 mobilenet_v2_fp16 resnet50_fp16; do
    python3 -c "import onnx; m=onnx.load('$B/$m.onnx', load_external_data=False); print('$m value_info', len(m.graph.value_info))"
    for round in 1 2; do
      ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 300 /tmp/ort/ort_cuda_bench $B/$m.onnx 50 \
        > $OUT/c3/${m}_ort_$round.txt 2>&1
      for threads in auto 0; do
        opt=""; [[ $threads != auto ]] && opt="--ep-option plan_build_threads=$threads"
        export TESSERA_CACHE_DIR=/tmp/tc3_${m}_$threads; [[ $round == 1 ]] && rm -rf $TESSERA_CACHE_DIR
        timeout 300 $T $B/$m.onnx --ep cuda $opt --modes host --runs 100 --verbose > $OUT/c3/${m}_${threads}_$round.txt 2> $OUT/c3/${m}_${threads}_$round.log
      done
    done
  done
  echo "BENCH_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/c3_logs.tgz chain.log c3; cd /tmp/tw
  touch $OUT/BENCH_DONE
  timeout 900 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/c3/cuda_tests_all.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/c3/cuda_tests_all.txt | head -30
  echo "TESTS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/c3_logs.tgz chain.log c3
touch $OUT/DONE
