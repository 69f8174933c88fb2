#!/usr/bin/env bash
# Session 36, lease 3: the final code's CUDA tests, and where eager ResNet-50's host time per step goes (fp16 / fp32).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*:MatMulSkipLayerNorm*:ScaleActivation*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -100 > $OUT/a/cuda_test_failures.txt
  tail -6 $OUT/a/cuda_tests_summary.txt; head -30 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  wait $EXPORT
  echo "TESTS_DONE at $((SECONDS-start)) s"
  for m in resnet50_fp16 resnet50; do
    rm -f /tmp/p_${m}_*
    timeout 60 build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --ep-option automatic_cuda_graphs=0 --modes io --runs 200 --time-budget 2 --profile /tmp/p_$m > /dev/null 2>&1
    echo "== $m eager"
    build-gpu/tessera profile-summary /tmp/p_${m}_*.json 2>&1 | sed -n 1,40p > $OUT/a/steps_$m.txt
    cat $OUT/a/steps_$m.txt | tail -22
    cp /tmp/p_${m}_*.json $OUT/a/profile_$m.json
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
