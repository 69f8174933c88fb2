#!/usr/bin/env bash
# Session 24, lease 4 (final code): every Cuda* test, the ONNX conformance suite on the CUDA EP, and the side-by-side
# bench against ONNX Runtime's CUDA EP on the standard models, the dynamic-axes BERT, the corpus detectors and the
# default model.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/d
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/d export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 bert_base_dynamic ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_conformance || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 420 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/d/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/d/cuda_tests.txt | head -20
  build-gpu/tessera_conformance --ep CUDAExecutionProvider --plugin cuda="$PWD/build-gpu/libtessera_cuda.so" \
    --ep-option use_tf32=0 --data "$TESSERA_ONNX_TESTDATA" --expect tests/conformance/expected_cuda.txt \
    --list-failures > $OUT/d/conformance_cuda.log 2>&1
  tail -4 $OUT/d/conformance_cuda.log
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  for i in $(seq 1 100); do [[ -f /tmp/models/READY2 ]] && break; sleep 2; done
  echo "ORT_BUILT at $((SECONDS-start)) s"
  EXTRA_MODELS=/tmp/models RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 yolo11s_mushroom_fp16 default bert_base_dynamic ddddocr_det retinaface_mnet25
  echo "SBS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/d_logs.tgz chain.log d side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
