#!/usr/bin/env bash
# Session 17, lease 1: SkipLayerNormMatMul (normalization inside the decoding step's products): CUDA tests, then
# GPT-2 generation with and without the fusion (session.disabled_optimizers), alternating.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b1
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/b1/export.log 2>&1 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_tests tessera tessera_generation_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 200 build-gpu/tessera_tests --gtest_filter='CudaSkipLayerNorm*:CudaGenerationLoop*:CudaAttention*' > $OUT/b1/tests_new.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|Expected|Which is|error" $OUT/b1/tests_new.txt | head -60
  wait $EXPORT
  tail -3 $OUT/b1/export.log
  build-gpu/tessera partition /tmp/gen/gpt2_decode_fp16.onnx --ep cuda > $OUT/b1/partition_fp16.txt 2>&1
  echo "partition op counts (fp16 decode step):"
  grep -oE "(SkipLayerNormMatMul|SkipLayerNormalization|FusedMatMul|MatMul|Attention)\b" $OUT/b1/partition_fp16.txt | sort | uniq -c
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  OFF="--config session.disabled_optimizers=skip_layer_norm_matmul_fusion"
  for round in 1 2; do
    for mode in on off; do
      X=""; [[ $mode == off ]] && X="$OFF"
      echo "== round $round fusion $mode fp16"; $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 $X 2>&1 | grep -v "^tokens "
      echo "== round $round fusion $mode fp32"; $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 $X 2>&1 | grep -v "^tokens "
    done
  done
  echo "GEN_DONE at $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/b1/cuda_all.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/b1/cuda_all.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b1_logs.tgz chain.log b1 build.log
touch $OUT/DONE
