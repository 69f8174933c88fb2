#!/usr/bin/env bash
# Session 38, lease 5: session creation with large raw_data kept out of the parse (ee9ebf4): creation and its phases
# for BERT-base s128 and GPT-2 past 16 (lease 1: load 334 / 439 ms, creation 532-545 / 684-688 ms).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 gpt2_past16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2 3; do
    for m in bert_base_s128 gpt2_past16; do
      rm -f /tmp/p_${m}_*.json
      c=$(timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep cuda --modes io --runs 20 --profile /tmp/p_$m 2>&1 | grep -E "creation")
      echo "== $m round $round: $c | $($T profile-summary /tmp/p_${m}_*.json 2>&1 | sed -n 2,7p | tr -s ' ' | tr '\n' ' ')"
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE; cp $OUT/chain.log /tmp/chain5.log
