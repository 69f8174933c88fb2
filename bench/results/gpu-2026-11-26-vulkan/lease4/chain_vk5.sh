#!/usr/bin/env bash
# Session 14, fourth lease: the Vulkan EP after the padded A tile and the pointwise path; Vulkan tests, then the conv
# nets side by side (ONNX Runtime, Tessera CUDA, Tessera Vulkan).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/vk
{
  set -x
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/vk/vulkan_tests.txt 2>&1
  tail -5 $OUT/vk/vulkan_tests.txt
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench || echo ORT_BENCH_BUILD_FAILED
  wait $EXPORT
  B=/tmp/tessera-bench
  for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16; do
    ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 300 /tmp/ort/ort_cuda_bench $B/$m.onnx 200 \
      > $OUT/vk/${m}_ort.txt 2>&1
    timeout 300 build-gpu/tessera bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 \
      --time-budget 6 > $OUT/vk/${m}_cuda.txt 2>&1
    timeout 300 build-gpu/tessera bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 --warmup 10 \
      --time-budget 8 > $OUT/vk/${m}_vulkan.txt 2>&1
  done
  echo "BENCH_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf /tmp/vk_logs.tgz chain.log vk/*.txt
touch $OUT/DONE
