#!/usr/bin/env bash
# Session 17, lease 6: the six-model side-by-side on the session's final code (ba995ae; its CUDA EP and executor are
# unchanged from the session's start), then the Vulkan EP on the same files with ONNX Runtime's CUDA EP beside it.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/g
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  RUNS=200 TIME_BUDGET=6 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16
  echo "SBS_DONE at $((SECONDS-start)) s"
  unset TESSERA_PLUGIN
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  B=/tmp/tessera-bench
  for m in bert_base_s128_fp16 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16; do
    echo "== $m ort"
    ( export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
      ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 200 /tmp/ort/ort_bench $B/$m.onnx cuda 200 2>&1 | tail -5 )
    echo "== $m vulkan"
    timeout 200 build-gpu/tessera bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 200 --warmup 20 --time-budget 6 \
      > $OUT/g/${m}_vulkan.txt 2>&1
    grep -E "^(host|io|session|first)|not measured" $OUT/g/${m}_vulkan.txt
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/g_logs.tgz chain.log g side_by_side side_by_side.md 2>/dev/null
touch $OUT/DONE
