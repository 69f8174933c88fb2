#!/usr/bin/env bash
# Session 37, lease 4: early downloads in automatic graphs (final code) -- CUDA tests, A/B of host-tensor runs.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 gpt2_past16_fp16 bert_base_s128 resnet50_fp16 mobilenet_v2_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='CudaAutomaticGraphs*:CudaGraph*:CudaGeneration*:CudaPipelines*:CudaStream*:CudaCopy*:AutomaticGraphs*:CudaNhwc*' > $OUT/tests.txt 2>&1
  tail -4 $OUT/tests.txt
  echo "TESTS at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2 3; do
    for m in gpt2_past16 gpt2_past16_fp16; do
      for ev in 1 0; do
        echo "== $m early_downloads=$ev round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 600 --warmup 20 --time-budget 2 --config session.automatic_graph_early_downloads=$ev 2>&1 | grep -E "^host tensors|^io binding" | head -3
      done
    done
  done
  for m in bert_base_s128 resnet50_fp16 mobilenet_v2_fp16; do
    for ev in 1 0; do
      echo "== $m early_downloads=$ev"
      timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 400 --warmup 20 --time-budget 2 --config session.automatic_graph_early_downloads=$ev 2>&1 | grep -E "^host tensors|^io binding" | head -3
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
