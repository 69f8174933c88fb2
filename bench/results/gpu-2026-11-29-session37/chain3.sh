#!/usr/bin/env bash
# Session 37, lease 3: the final code's CUDA tests, a mutation check of the conv step memo's shape key, and a
# phase probe of GPT-2's host-tensor runs through automatic graphs (probe_phases.patch, not committed).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 gpt2_past16_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 420 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='Cuda*:MatMulSkipLayerNorm*:ScaleActivation*' > $OUT/tests.txt 2>&1
  tail -8 $OUT/tests.txt
  echo "TESTS at $((SECONDS-start)) s"
  cp src/providers/cuda/kernels/conv.cc /tmp/conv_final.cc
  sed -i 's|memo->x_shape == x_in.shape() &&|true \&\&|' src/providers/cuda/kernels/conv.cc
  grep -c "true &&" src/providers/cuda/kernels/conv.cc
  ninja -C build-gpu tessera_cuda > $OUT/mutant_build.log 2>&1 || echo MUTANT_BUILD_FAILED
  timeout 120 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='CudaNhwcTest.ConvolutionsFollow*' 2>&1 | grep -E "FAILED|PASSED|Failure" | head -5
  echo "MUTANT at $((SECONDS-start)) s"
  cp /tmp/conv_final.cc src/providers/cuda/kernels/conv.cc
  git apply out/probe_phases.patch && echo PROBE_APPLIED
  ninja -C build-gpu tessera_cuda tessera_cli > $OUT/probe_build.log 2>&1 || echo PROBE_BUILD_FAILED
  echo "PROBE BUILT at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for m in gpt2_past16 gpt2_past16_fp16; do
    for serial in 0 1; do
      echo "== $m serial=$serial"
      if [[ $serial == 1 ]]; then export TESSERA_PROBE_SERIAL=1; else unset TESSERA_PROBE_SERIAL; fi
      timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host --runs 1200 --warmup 20 --time-budget 4 2>&1 | grep -E "PROBE|host tensors" | tail -2
    done
  done
  unset TESSERA_PROBE_SERIAL
  $T bench --help 2>&1 | grep -iE "thread" | head -3
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
