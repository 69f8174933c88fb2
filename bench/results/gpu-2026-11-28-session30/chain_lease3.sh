#!/usr/bin/env bash
# Session 30, lease 3 (lease 2's machine was released mid-run): depthwise_input_activation on the GPU. CUDA tests,
# then an A/B on MobileNetV2 fp16 / fp32 in one lease (--config session.disabled_optimizers=depthwise_input_activation
# as "before", alternating, 3 rounds).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*:DepthwiseInputActivation*:NchwcLayout*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/a/cuda_tests.txt | head -20
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -60
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|^\[       OK \] (CudaNhwc|DepthwiseInput)" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  rm -f $OUT/a/cuda_tests.txt
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  OFF="--config session.disabled_optimizers=depthwise_input_activation"
  for round in 1 2 3; do
    for moved in 0 1; do
      for m in mobilenet_v2_fp16 mobilenet_v2; do
        echo "== $m round $round moved=$moved"
        build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph $([[ $moved == 0 ]] && echo $OFF) 2>&1 | grep -E "host tensors|io binding|graph" | head -3
      done
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null
touch $OUT/DONE
