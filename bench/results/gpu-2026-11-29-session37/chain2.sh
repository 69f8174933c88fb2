#!/usr/bin/env bash
# Session 37, lease 2: the convolution's step memo -- CUDA conv tests, then A/B (two plugins alternating) of the
# eager per-step host time (profile) and eager IO-bound run time.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  cp build-gpu/libtessera_cuda.so /tmp/new.so
  timeout 300 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='Cuda*Conv*:CudaNhwc*:CudaStepGraphs*:CudaAutomaticGraphs*:CudaStreamSets*:CudaTuning*' > $OUT/tests.txt 2>&1
  tail -5 $OUT/tests.txt
  echo "TESTS at $((SECONDS-start)) s"
  cp out/conv_old.cc src/providers/cuda/kernels/conv.cc
  ninja -C build-gpu tessera_cuda > $OUT/rebuild_old.log 2>&1 || echo OLD_BUILD_FAILED
  cp build-gpu/libtessera_cuda.so /tmp/old.so
  echo "OLD BUILT at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2 3; do
    for m in resnet50 resnet50_fp16 mobilenet_v2_fp16; do
      for v in new old; do
        rm -f /tmp/p_${m}_*.json
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=/tmp/$v.so --ep-option automatic_cuda_graphs=0 --modes io --runs 200 --time-budget 2 --profile /tmp/p_$m > /dev/null 2>&1
        $T profile-summary /tmp/p_${m}_*.json 2>&1 | sed -n 1,20p > $OUT/a/steps_${m}_${v}_$round.txt
        echo "== $m $v round $round: $(grep -E 'median host time' $OUT/a/steps_${m}_${v}_$round.txt) | $(grep -E '^NchwcConv' $OUT/a/steps_${m}_${v}_$round.txt)"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=/tmp/$v.so --ep-option automatic_cuda_graphs=0 --modes io --runs 400 --warmup 20 --time-budget 2 2>&1 | grep -E "^io binding" | head -1
      done
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
