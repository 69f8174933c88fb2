#!/usr/bin/env bash
# Session 28, lease 1: CUDA tests (ConvTranspose folding / fusion changes), conformance on the CUDA EP, the whole
# side-by-side bench on the current code, then GPT-2 fp16 generation (tokens/s and an eager profile of its steps).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 ) &
  EXPORT=$!
  ( python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/a/export_generation.log 2>&1 ) &
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_conformance tessera_generation_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 420 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*:*GenerationLoop*:ConvTranspose*:ConvActivation*:ConvBn*:ConvAffine*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_conformance --ep CUDAExecutionProvider --plugin cuda="$PWD/build-gpu/libtessera_cuda.so" \
    --ep-option use_tf32=0 --data "$TESSERA_ONNX_TESTDATA" --expect tests/conformance/expected_cuda.txt \
    --list-failures > $OUT/a/conformance_cuda.log 2>&1
  tail -4 $OUT/a/conformance_cuda.log
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=4 EXTRA_MODELS=$PWD/out/models bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 default
  echo "SBS_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md 2>/dev/null; cd /tmp/tw
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -v "^tokens " > $OUT/a/generation_fp16.txt
  cat $OUT/a/generation_fp16.txt
  rm -f /tmp/gp_*.json
  $G /tmp/gen/gpt2_decode_fp16.onnx $P --graphs 0 --runs 3 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx --profile /tmp/gp 2>&1 | grep -v "^tokens " > $OUT/a/generation_fp16_eager.txt
  build-gpu/tessera profile-summary "$(ls -t /tmp/gp_*.json | head -1)" --top 25 > $OUT/a/generation_fp16_profile.txt 2>&1
  head -45 $OUT/a/generation_fp16_profile.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
