#!/usr/bin/env bash
# Session 24, lease 1: CUDA Resize (tests against the CPU EP), the layout pass's blocked Resize on CUDA, then the
# side-by-side bench against ONNX Runtime's CUDA EP: the six standard models, BERT-base with dynamic axes, and the
# corpus detectors (YOLO11s fp16, ddddocr det, RetinaFace) and the default model (PP-OCRv4 det).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 mobilenet_v2 bert_base_s128 gpt2_past16 resnet50_fp16 mobilenet_v2_fp16 bert_base_dynamic ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='CudaResize*:CudaNhwc*:CudaOps*:CudaAutomaticGraphs*:CudaModels*:NchwcLayout*' > $OUT/a/new_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED \]" $OUT/a/new_tests.txt | head -30
  echo "TESTS_DONE at $((SECONDS-start)) s"
  for i in $(seq 1 200); do [[ -f /tmp/models/READY ]] && break; sleep 2; done
  T=build-gpu/tessera
  for m in yolo11s_mushroom_fp16 ddddocr_det retinaface_mnet25; do
    echo "== partition $m"; $T partition /tmp/models/$m.onnx --ep cuda 2>&1 | grep -v CUDAExecutionProvider | head -12
  done
  echo "== partition default"; $T partition /tmp/models/default.onnx --ep cuda --dim p2o.DynamicDimension.0=1 2>&1 | grep -v CUDAExecutionProvider | head -12
  wait $EXPORT
  echo "EXPORTED at $((SECONDS-start)) s"
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  EXTRA_MODELS=/tmp/models RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 bert_base_dynamic yolo11s_mushroom_fp16 ddddocr_det retinaface_mnet25 default
  echo "SBS_DONE at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md build.log ort_build.log 2>/dev/null
touch $OUT/DONE
