#!/usr/bin/env bash
# Session 29, lease 2: TilePipeline's direct region copies (pinned image and output) against the staged ring, in one
# lease; the CUDA tests; then the side by side for GPT-2 (the early constant loads) and MobileNetV2 fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  ( python3 bench/tile_pipeline/make_models.py /tmp/tilem > $OUT/a/tile_models.log 2>&1 ) &
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_tile_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*:TilePipeline*:CopyTensor*:*GenerationLoop*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|^\[       OK \] (CudaPipelines|TilePipeline|CopyTensor)" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  rm $OUT/a/cuda_tests.txt
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  T=build-gpu/tessera_tile_bench
  for spec in "conv_light 8 5" "conv_light_fp16 8 5" "conv_heavy 8 4" "tone_curve 0 4" "tone_curve 0 5"; do
    set -- $spec
    for pinned in 0 1; do
      echo "== $1 halo $2 depth $3 pinned=$pinned"
      $T /tmp/tilem/$1.onnx ep=CUDAExecutionProvider size=8192x8192 tile=1024 halo=$2 depth=$3 threads=8 repeat=7 pinned=$pinned 2>&1 | tail -9
    done
  done
  $T /tmp/tilem/tone_curve.onnx ep=CUDAExecutionProvider size=8192x8192 tile=1024 halo=0 depth=4 threads=8 repeat=3 pinned=1 trace=$OUT/a/trace_tone_curve_pinned_depth4.json png=$OUT/a/timeline_tone_curve_pinned_depth4.png 2>&1 | tail -3
  $T /tmp/tilem/conv_light.onnx ep=CUDAExecutionProvider size=8192x8192 tile=1024 halo=8 depth=5 threads=8 repeat=3 pinned=1 png=$OUT/a/timeline_conv_light_pinned_depth5.png 2>&1 | tail -2
  echo "TILES_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  wait $EXPORT
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=4 bash bench/gpu/side_by_side.sh gpt2_past16 mobilenet_v2_fp16
  echo "SBS_DONE at $((SECONDS-start)) s"
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
