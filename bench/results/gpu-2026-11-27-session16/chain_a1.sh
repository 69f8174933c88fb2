#!/usr/bin/env bash
# Session 16, lease 1: the six-model side-by-side on the session's starting code (12c0416), CUDA tests, the Vulkan EP
# on fp16 BERT (does it record now?) and the Vulkan creation / first-run / concurrent modes, then the Python
# suite's CUDA cases.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a1
{
  set -x
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  RUNS=200 TIME_BUDGET=6 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16
  echo "SBS_DONE at $((SECONDS-start)) s"
  timeout 120 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/a1/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/a1/cuda_tests.txt | head
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  B=/tmp/tessera-bench
  unset TESSERA_PLUGIN
  for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16; do
    timeout 300 build-gpu/tessera bench $B/$m.onnx --ep vulkan --verbose --runs 100 --warmup 10 --concurrency 4 \
      --time-budget 6 > $OUT/a1/${m}_vulkan.txt 2>&1
    echo "== $m"; grep -iE "record|median|creation|first run|runs/s" $OUT/a1/${m}_vulkan.txt | grep -v "^\[tessera V" | tail -12
    grep -iE "not record|cannot record|fall|cpu" $OUT/a1/${m}_vulkan.txt | head -8
  done
  echo "VULKAN_DONE at $((SECONDS-start)) s"
  CPU_BENCH=0 timeout 400 bash scripts/gpu_host/run_python_and_cpu_bench.sh > $OUT/a1/python.txt 2>&1
  tail -30 $OUT/a1/python.txt
  echo "PY_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a1_logs.tgz chain.log a1 side_by_side side_by_side.md pytest.log 2>/dev/null
touch $OUT/DONE
