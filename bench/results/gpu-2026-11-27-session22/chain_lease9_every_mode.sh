#!/usr/bin/env bash
# Session 22, lease 9: every mode side by side on the final code: bench/gpu/side_by_side.sh (ONNX Runtime 1.29's CUDA
# EP and Tessera's CUDA EP alternating: host tensors, IO binding, graphs, 4 threads, creation, first run) and the
# Vulkan EP's modes (host tensors, IO binding, recorded, 4 threads, creation, first run) on the same files.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/v
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  M="resnet50_fp16 mobilenet_v2_fp16 bert_base_s128"
  ( LOG_DIR=$OUT/v export_bench_models /tmp/tessera-bench $M ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_READY at $((SECONDS-start)) s"
  RUNS=100 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh $M > $OUT/side_by_side.txt 2>&1
  tail -12 $OUT/side_by_side.txt
  echo "SIDE_BY_SIDE_DONE at $((SECONDS-start)) s"
  for m in $M; do
    echo "== vulkan $m"
    timeout 150 build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep vulkan --concurrency 4 \
      --modes host,io,graph,concurrent --runs 100 --warmup 10 --time-budget 4 2>&1 | grep -vE "^\s*$" | tail -9
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
