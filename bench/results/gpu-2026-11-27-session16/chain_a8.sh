#!/usr/bin/env bash
# Session 16, lease 8: how close four threads get to the device's ceiling (four graph sessions replaying at once).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a8
{
  start=$SECONDS
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  wait $EXPORT
  echo "READY at $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  for m in bert_base_s128 resnet50_fp16 mobilenet_v2_fp16 resnet50 mobilenet_v2; do
    timeout 120 build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --concurrency 4 \
      --modes host,concurrent,concurrent-graph --runs 2000 --warmup 50 --time-budget 6 > $OUT/a8/$m.txt 2>&1
    echo "== $m"; grep -E "^host tensors|4 threads|graph sessions|concurrent" $OUT/a8/$m.txt | grep -v "^\[" | head -6
  done
  echo "DONE_AT $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a8_logs.tgz chain.log a8
touch $OUT/DONE
