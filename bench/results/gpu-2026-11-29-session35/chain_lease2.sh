#!/usr/bin/env bash
# Session 35, lease 2: each legacy convolution geometry's first call, serially and with calls made ahead on threads.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_legacy_conv_first_calls || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  P=build-gpu/tessera_legacy_conv_first_calls
  for round in 1 2 3; do
    for mode in "serial" "ahead 4" "ahead 8" "other-handle"; do
      echo "== $mode round $round"
      timeout 60 $P $mode
    done
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
