#!/usr/bin/env bash
# Session 32, lease 1: where BERT-base fp16's non-GEMM kernels spend their time (ncu of the bias+GELU epilogue,
# SkipLayerNormalization, the split-K GEMM and its reduction inside the automatic graph) and the baseline bench.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128_fp16 gpt2_past16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $EXPORT
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  B="build-gpu/tessera bench /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN"
  for round in 1 2; do
    $B --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
  done
  NCU="ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats --section ComputeWorkloadAnalysis"
  for k in MatMulEpilogueWordKernel SkipLayerNormWarpKernel splitKreduce splitK_NNT FlashAttention; do
    echo "== ncu $k at $((SECONDS-start)) s"
    timeout 120 $NCU --kernel-name regex:$k --launch-skip 300 --launch-count 2 $B --runs 40 --time-budget 1 --modes graph > $OUT/a/ncu_$k.txt 2>&1
    grep -E "Duration|Grid Size|Block Size|Registers Per|Warp Cycles Per Issued|Memory Throughput|DRAM Throughput|L2 Hit|Achieved Occupancy|Compute \(SM\)|Stall|Issued Ipc" $OUT/a/ncu_$k.txt | head -30
  done
  echo "== gpt2 host/io/graph"
  build-gpu/tessera bench /tmp/tessera-bench/gpt2_past16.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "host tensors|io binding" | head -4
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease1_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
