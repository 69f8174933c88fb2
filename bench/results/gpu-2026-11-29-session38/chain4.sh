#!/usr/bin/env bash
# Session 38, lease 4: host feeds of 512 KB or more uploaded in 2-4 pieces ahead of the replay (each queued once the
# host has copied it into the pinned block) -- the CUDA tests, A/B of host-tensor runs against the session's starting
# code (404b460) built beside it.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 gpt2_past16_fp16 bert_base_s128 resnet50 resnet50_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  mkdir -p /tmp/old && tar xzf out/old.tar.gz -C /tmp/old && cp -r .deps /tmp/old/
  ( cd /tmp/old && export OUT=$OUT/old && mkdir -p $OUT && source scripts/gpu_host/build_gpu.sh && build_gpu tessera_cuda tessera_cli && echo OLD_BUILT ) > $OUT/old_build.txt 2>&1 &
  OLD=$!
  timeout 300 build-gpu/tessera_tests --gtest_brief=1 --gtest_filter='CudaAutomaticGraphs*:CudaGraph*:CudaGeneration*:CudaPipelines*:CudaStream*:CudaCopy*:AutomaticGraphs*:CudaEp*' > $OUT/tests.txt 2>&1
  tail -4 $OUT/tests.txt; grep -E "FAILED|Failure" $OUT/tests.txt | head -10
  echo "TESTS at $((SECONDS-start)) s"
  wait $OLD; tail -2 $OUT/old_build.txt
  echo "OLD at $((SECONDS-start)) s"
  wait $EXPORT
  for round in 1 2 3; do
    for m in gpt2_past16 gpt2_past16_fp16 resnet50; do
      for v in new old; do
        T=build-gpu/tessera; [[ $v == old ]] && T=/tmp/old/build-gpu/tessera
        echo "== $m $v round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 600 --warmup 20 --time-budget 2 2>&1 | grep -E "^host tensors|^io binding" | head -3
      done
    done
  done
  for m in bert_base_s128 resnet50_fp16; do
    for v in new old; do
      T=build-gpu/tessera; [[ $v == old ]] && T=/tmp/old/build-gpu/tessera
      echo "== $m $v"
      timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes host,io,graph --runs 400 --warmup 20 --time-budget 2 2>&1 | grep -E "^host tensors|^io binding" | head -3
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE; cp $OUT/chain.log $OUT/tests.txt /tmp/ 2>/dev/null
