#!/usr/bin/env bash
# Session 26, lease 1: where session creation goes. Library floors (bench/gpu/library_init_costs.cc), then
# verbose creation logs (phases, conv choices, timestamps) of ResNet-50 fp16 and MobileNetV2 fp32, cold and warm.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2 resnet50_fp16 resnet50 ) &
  EXPORT=$!
  g++ -O2 -std=c++20 bench/gpu/library_init_costs.cc -I/usr/local/cuda/include -I$CUDNN_ROOT/include \
     -L/usr/local/cuda/lib64 -L$CUDNN_ROOT/lib -l:libcudnn.so.9 -lcublasLt -lcublas -lcudart -o /tmp/init_costs
  for i in 1 2; do echo "== probe $i"; /tmp/init_costs; echo "== probe background $i"; /tmp/init_costs background; done > $OUT/a/init_costs.txt 2>&1
  cat $OUT/a/init_costs.txt
  echo "PROBE_DONE at $((SECONDS-start)) s"
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  wait $EXPORT
  T=build-gpu/tessera
  for m in resnet50_fp16 mobilenet_v2 resnet50; do
    export TESSERA_CACHE_DIR=/tmp/probe_cache_$m; rm -rf $TESSERA_CACHE_DIR
    for round in cold warm warm2; do
      $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 20 --warmup 2 --time-budget 1 --verbose > $OUT/a/verbose_${m}_$round.txt 2>&1
      echo "== $m $round: $(grep -i "creation" $OUT/a/verbose_${m}_$round.txt | tr '\n' ' ' | cut -c1-600)"
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
