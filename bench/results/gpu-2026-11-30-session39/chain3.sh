#!/usr/bin/env bash
# Session 39, lease 3: the session's final code -- the CUDA tests (the simulated device's floating side-stream work
# is exercised by the unit tests, not here), MobileNetV2 and the default model on CUDA, GPT-2 with 3 and 4 upload
# pieces, and the copy-bound tile pipeline (tone curve, pinned) over tile sizes and ring depths.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 gpt2_past16_fp16 ) &
  EXPORT=$!
  python3 bench/tile_pipeline/make_models.py /tmp/tilem > $OUT/a/tile_models.log 2>&1 &
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_tile_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 240 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='Cuda*:AutomaticGraphs*:TilePipeline*:Pipeline*:Generation*:Staged*:CopyTensor*:-CudaModelsTest*' > $OUT/a/cuda_tests.txt 2>&1
  echo "tests rc=$?"
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B3 -A12 "Failure" $OUT/a/cuda_tests.txt | head -120 > $OUT/a/cuda_test_failures.txt
  tail -6 $OUT/a/cuda_tests_summary.txt; head -30 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  echo "TESTS at $((SECONDS-start)) s"
  wait $EXPORT
  TESSERA_BENCH_MODELS=/tmp/tessera-bench timeout 150 build-gpu/tessera_tests --gtest_filter='CudaModelsTest.*' > $OUT/a/models_test.txt 2>&1
  grep -E "MODEL|OK \]|FAILED|PASSED" $OUT/a/models_test.txt | grep -v "run 1\|run 2" | tail -14
  echo "MODELS at $((SECONDS-start)) s"
  for m in mobilenet_v2_fp16 mobilenet_v2; do
    echo "== $m"
    timeout 60 build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --runs 400 --warmup 20 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "^host tensors|^io binding" | head -3
  done
  echo "== default (PP-OCRv4 det, 640x640)"
  timeout 60 build-gpu/tessera bench .models/default.onnx --ep cuda --runs 200 --warmup 10 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "^host tensors|^io binding|Graphs" | head -4
  for round in 1 2; do
    for m in gpt2_past16 gpt2_past16_fp16; do
      for p in 3 4; do
        echo "== $m pieces $p round $round"
        timeout 60 build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --config session.automatic_graph_upload_pieces=$p --runs 600 --warmup 20 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "^host tensors|^io binding \+" | head -2
      done
    done
  done
  echo "BENCH at $((SECONDS-start)) s"
  for spec in "1024 4" "1024 6" "2048 4" "2048 6"; do
    set -- $spec
    echo "== tone curve pinned tile $1 depth $2"
    timeout 60 build-gpu/tessera_tile_bench /tmp/tilem/tone_curve.onnx ep=CUDAExecutionProvider size=8192x8192 tile=$1 halo=0 depth=$2 threads=8 repeat=5 pinned=1 2>&1 | tail -7
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
