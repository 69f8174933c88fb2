#!/usr/bin/env bash
# Session 27, lease 4 (short): per-step host time of eager CUDA runs of the default model (profile), and verbose
# creations of the default model with an empty and a warm tuning cache.
cd "$(dirname "$0")/.."
mkdir -p $OUT
start=$SECONDS
source scripts/gpu_host/build_gpu.sh > $OUT/setup.log 2>&1 || { echo BUILD_SETUP_FAILED; exit 1; }
timeout 200 bash -c 'source scripts/gpu_host/build_gpu.sh >/dev/null 2>&1; build_gpu tessera_cuda tessera_cli' > $OUT/build_out.log 2>&1 || { echo BUILD_FAILED; tail -5 $OUT/build_out.log; }
echo "BUILT in $((SECONDS-start)) s"
export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
T=build-gpu/tessera
M=out/models/default.onnx
export TESSERA_CACHE_DIR=/tmp/cache_default; rm -rf $TESSERA_CACHE_DIR
for round in cold warm; do
  $T bench $M --shape x=1x3x640x640 --ep cuda --modes io --runs 20 --warmup 2 --time-budget 1 --verbose > $OUT/verbose_default_$round.txt 2>&1
  echo "== default $round: $(grep -i "session creation" $OUT/verbose_default_$round.txt | sed 's/\[tessera V [0-9.]*\] session creation: //' | tr '\n' ' ')"
done
rm -f /tmp/pd_*.json
$T bench $M --shape x=1x3x640x640 --ep cuda --ep-option automatic_cuda_graphs=0 --modes host,io --runs 100 --warmup 20 --time-budget 6 --profile /tmp/pd 2>&1 | grep -E "^ *(host|io)"
$T profile-summary "$(ls -t /tmp/pd_*.json | head -1)" --top 12 > $OUT/profile_summary_default_eager.txt 2>&1
head -40 $OUT/profile_summary_default_eager.txt
echo "ALL at $((SECONDS-start)) s"
