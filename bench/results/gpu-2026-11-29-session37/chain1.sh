#!/usr/bin/env bash
# Session 37, lease 1: overlapped copies in automatic graphs -- CUDA tests, then A/B of host-tensor runs.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 gpt2_past16_fp16 bert_base_s128 resnet50 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='CudaAutomaticGraphs*:CudaGraph*:CudaGeneration*:CudaPipelines*:CudaStream*:CudaCopy*:AutomaticGraphs*' > $OUT/tests.txt 2>&1
  tail -5 $OUT/tests.txt
  echo "TESTS at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2 3; do
    for m in gpt2_past16 gpt2_past16_fp16; do
      for ov in 1 0; do
        echo "== $m overlapped=$ov round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 400 --warmup 20 --time-budget 2 --config session.automatic_graph_overlapped_copies=$ov 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
      done
    done
  done
  echo "BENCH1 at $((SECONDS-start)) s"
  for m in bert_base_s128 resnet50; do
    for ov in 1 0; do
      echo "== $m overlapped=$ov"
      timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 300 --warmup 20 --time-budget 2 --config session.automatic_graph_overlapped_copies=$ov 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
