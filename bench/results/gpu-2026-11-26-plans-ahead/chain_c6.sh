#!/usr/bin/env bash
# Session 15, lease 6: exhaustive searches build their own candidates; creation and steady state, plan tests.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/c6
{
  set -x
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 120 build-gpu/tessera_tests --gtest_filter='CudaConvTuning*' > $OUT/c6/cuda_tests_focus.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/c6/cuda_tests_focus.txt | head
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  wait $EXPORT
  B=/tmp/tessera-bench
  T="build-gpu/tessera bench"
  for m in resnet50 mobilenet_v2; do
    for round in 1 2; do
      for threads in auto 0; do
        opt=""; [[ $threads != auto ]] && opt="--ep-option plan_build_threads=$threads"
        export TESSERA_CACHE_DIR=/tmp/tc6_${m}_$threads; [[ $round == 1 ]] && rm -rf $TESSERA_CACHE_DIR
        timeout 300 $T $B/$m.onnx --ep cuda $opt --modes host --runs 200 > $OUT/c6/${m}_${threads}_$round.txt 2>&1
      done
    done
  done
  echo "BENCH_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/c6_logs.tgz chain.log c6
touch $OUT/DONE
