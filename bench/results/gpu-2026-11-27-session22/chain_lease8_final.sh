#!/usr/bin/env bash
# Session 22, final lease: the Vulkan EP's final code of the session (barriers naming only what they order, split-K
# without empty splits): tests, conformance, outputs against the CPU EP, then latency side by side with Tessera's CUDA
# EP and ONNX Runtime 1.29's CUDA EP; Vulkan profiles.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/e
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/e export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests tessera_conformance tessera_testing_ep || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/e/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/e/vulkan_tests.txt | head -20
  timeout 300 build-gpu/tessera_conformance --ep vulkan --data $TESSERA_ONNX_TESTDATA \
    --expect tests/conformance/expected_vulkan.txt > $OUT/e/conformance_vulkan.txt 2>&1
  tail -4 $OUT/e/conformance_vulkan.txt
  timeout 300 build-gpu/tessera_conformance --ep vulkan --precision float16 --data $TESSERA_ONNX_TESTDATA \
    --expect tests/conformance/expected_vulkan_float16.txt > $OUT/e/conformance_vulkan_float16.txt 2>&1
  tail -4 $OUT/e/conformance_vulkan_float16.txt
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  B=/tmp/tessera-bench
  for m in resnet50 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16; do
    for ep in cpu vulkan; do
      timeout 300 $T run $B/$m.onnx --ep $ep --output-dir $OUT/e/out_${m}_$ep > $OUT/e/run_${m}_$ep.txt 2>&1
    done
  done
  python3 - "$OUT/e" > $OUT/e/accuracy.txt 2>&1 <<'PY'
import sys, glob, os, numpy as np
root = sys.argv[1]
for m in ["resnet50", "bert_base_s128", "resnet50_fp16", "mobilenet_v2_fp16"]:
    for f in sorted(glob.glob(f"{root}/out_{m}_cpu/*.npy")):
        g = f.replace("_cpu/", "_vulkan/")
        if not os.path.exists(g):
            print(m, os.path.basename(f), "MISSING"); continue
        a, b = np.load(f).astype(np.float64), np.load(g).astype(np.float64)
        rel = np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)
        print(f"{m:20s} vulkan {os.path.basename(f):30s} max rel diff vs CPU {rel:.3e}")
PY
  cat $OUT/e/accuracy.txt
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench || echo ORT_BENCH_BUILD_FAILED
  echo "ORT_READY at $((SECONDS-start)) s"
  for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 bert_base_s128_fp16; do
    [[ $m == bert_base_s128_fp16 ]] || ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 200 \
      /tmp/ort/ort_cuda_bench $B/$m.onnx 200 > $OUT/e/${m}_ort.txt 2>&1
    timeout 200 $T bench $B/$m.onnx --ep cuda --modes host,io,graph --runs 200 --warmup 20 --time-budget 4 > $OUT/e/${m}_cuda.txt 2>&1
    timeout 200 $T bench $B/$m.onnx --ep vulkan --modes host,io,graph --runs 100 --warmup 10 --time-budget 5 > $OUT/e/${m}_vulkan.txt 2>&1
    echo "== $m"; grep -E "^(host_io|bound|graph)" $OUT/e/${m}_ort.txt 2>/dev/null
    grep -E "^(host|io)" $OUT/e/${m}_cuda.txt; grep -E "^(host|io)" $OUT/e/${m}_vulkan.txt
    echo "MODEL_DONE at $((SECONDS-start)) s"
  done
  for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16; do
    rm -f /tmp/vkprof_*.json
    timeout 120 $T bench $B/$m.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
    f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
    echo "== profile $m"
    [[ -n $f ]] && $T profile-summary $f --top 14 --run 12 2>&1 | sed -n '9,30p'
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/e_logs.tgz chain.log e build.log ort_build.log 2>/dev/null
touch $OUT/DONE
