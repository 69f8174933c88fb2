#!/usr/bin/env bash
# Session 14: the Vulkan EP on the H100 (NVIDIA's Vulkan driver): tests, conformance, the shared-queue example,
# outputs against the CPU EP, then latency side by side with Tessera's CUDA EP and ONNX Runtime's CUDA EP.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/vk
{
  set -x
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests tessera_conformance example_vulkan_shared_queue \
    tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  ldconfig -p | grep -i vulkan
  ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d 2>&1
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  timeout 300 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/vk/vulkan_tests.txt 2>&1
  tail -5 $OUT/vk/vulkan_tests.txt
  timeout 300 build-gpu/tessera_conformance --ep vulkan --data $TESSERA_ONNX_TESTDATA \
    --expect tests/conformance/expected_vulkan.txt > $OUT/vk/conformance_vulkan.txt 2>&1
  tail -12 $OUT/vk/conformance_vulkan.txt
  timeout 300 build-gpu/tessera_conformance --ep vulkan --precision float16 --data $TESSERA_ONNX_TESTDATA \
    --expect tests/conformance/expected_vulkan_float16.txt > $OUT/vk/conformance_vulkan_float16.txt 2>&1
  tail -12 $OUT/vk/conformance_vulkan_float16.txt
  TESSERA_PLUGIN=$PWD/build-gpu/libtessera_vulkan.so timeout 120 build-gpu/examples/example_vulkan_shared_queue \
    examples/tiled_inference/tone_curve.onnx 1920 1080 > $OUT/vk/shared_queue.txt 2>&1
  cat $OUT/vk/shared_queue.txt
  echo "TESTS_DONE at $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench || echo ORT_BENCH_BUILD_FAILED
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  ls /tmp/tessera-bench
  B=/tmp/tessera-bench
  # Outputs: Vulkan and CUDA EPs against the CPU EP on the same random inputs.
  for m in resnet50 mobilenet_v2 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16; do
    for ep in cpu cuda vulkan; do
      timeout 300 build-gpu/tessera run $B/$m.onnx --ep $ep --output-dir $OUT/vk/out_${m}_$ep > $OUT/vk/run_${m}_$ep.txt 2>&1
    done
  done
  python3 - "$OUT/vk" > $OUT/vk/accuracy.txt 2>&1 <<'PY'
import sys, glob, os, numpy as np
root = sys.argv[1]
for m in ["resnet50", "mobilenet_v2", "bert_base_s128", "resnet50_fp16", "mobilenet_v2_fp16"]:
    for ep in ["cuda", "vulkan"]:
        ref_files = sorted(glob.glob(f"{root}/out_{m}_cpu/*.npy"))
        for f in ref_files:
            g = f.replace("_cpu/", f"_{ep}/")
            if not os.path.exists(g):
                print(m, ep, os.path.basename(f), "MISSING"); continue
            a, b = np.load(f).astype(np.float64), np.load(g).astype(np.float64)
            rel = np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)
            print(f"{m:20s} {ep:7s} {os.path.basename(f):30s} max rel diff vs CPU {rel:.3e}")
PY
  cat $OUT/vk/accuracy.txt
  echo "ACCURACY_DONE at $((SECONDS-start)) s"
  for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128; do
    ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 300 /tmp/ort/ort_cuda_bench $B/$m.onnx 200 \
      > $OUT/vk/${m}_ort.txt 2>&1
    timeout 300 build-gpu/tessera bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 \
      --time-budget 6 > $OUT/vk/${m}_cuda.txt 2>&1
    timeout 300 build-gpu/tessera bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 --warmup 10 \
      --time-budget 8 > $OUT/vk/${m}_vulkan.txt 2>&1
    echo "== $m"; tail -4 $OUT/vk/${m}_ort.txt; tail -4 $OUT/vk/${m}_cuda.txt; tail -4 $OUT/vk/${m}_vulkan.txt
  done
  m=bert_base_s128_fp16  # ONNX Runtime rejects this export (mixed-precision LayerNormalization): Tessera's two EPs only
  timeout 300 build-gpu/tessera bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 \
    --time-budget 6 > $OUT/vk/${m}_cuda.txt 2>&1
  timeout 300 build-gpu/tessera bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 --warmup 10 \
    --time-budget 8 > $OUT/vk/${m}_vulkan.txt 2>&1
  echo "== $m"; tail -4 $OUT/vk/${m}_cuda.txt; tail -4 $OUT/vk/${m}_vulkan.txt
  echo "BENCH_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
