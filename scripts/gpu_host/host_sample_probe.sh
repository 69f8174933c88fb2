#!/usr/bin/env bash
# Where eager CUDA runs spend host (CPU) time, by function (issue 13): builds the CLI and the CUDA EP, then runs
# `tessera bench --ep cuda` one mode at a time under the sampling profiler of host_sampler.cc and summarizes each
# run with host_sampler_report.py (the GPU host has no perf).
#
#   MODELS="gpt2_past16 resnet50" MODES="io concurrent" bash scripts/gpu_host/host_sample_probe.sh
#
# Reports land in $OUT (else out/gpu) as sample_<model>_<mode>.txt; models are exported to /tmp/tessera-bench
# when missing. MODES: io (IO binding, one thread), host (host tensors), concurrent (host tensors from 4 threads).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LOG_DIR=${OUT:-$PWD/out/gpu}
mkdir -p "$LOG_DIR"
source scripts/gpu_host/build_gpu.sh || exit 1
build_gpu tessera_cli tessera_cuda || exit 1
g++ -O2 -shared -fPIC -o build-gpu/libhost_sampler.so scripts/gpu_host/host_sampler.cc -ldl || exit 1
BENCH_DIR=/tmp/tessera-bench
MODELS=${MODELS:-gpt2_past16 bert_base_s128 mobilenet_v2 resnet50}
MODES=${MODES:-io concurrent}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-12}
export_bench_models "$BENCH_DIR" $MODELS
for m in $MODELS; do
  for mode in $MODES; do
    extra=()
    [[ $mode == concurrent ]] && extra=(--concurrency 4)
    samples=/tmp/samples_${m}_${mode}.txt
    report=$LOG_DIR/sample_${m}_${mode}.txt
    # The first 3 s of process CPU time (loading, plans, algorithm searches) are not sampled.
    HOST_SAMPLER_OUT=$samples HOST_SAMPLER_START_S=${START_S:-3} LD_PRELOAD=$PWD/build-gpu/libhost_sampler.so \
      build-gpu/tessera bench "$BENCH_DIR/$m.onnx" --ep cuda --modes "$mode" "${extra[@]}" --runs 1000000 --warmup 20 \
      --time-budget $((3 * SECONDS_PER_RUN)) >"$report.bench" 2>&1
    {
      echo "# $m, mode $mode: tessera bench $m.onnx --ep cuda --modes $mode ${extra[*]}"
      grep -E "^(host|io)" "$report.bench"
      python3 scripts/gpu_host/host_sampler_report.py "$samples" --top ${TOP:-45}
    } >"$report"
    echo "==== $m $mode"
    head -40 "$report"
  done
done
# The raw samples too (re-read them with host_sampler_report.py --focus/--depth while the binaries are there).
tar czf "$LOG_DIR/samples.tgz" -C /tmp $(cd /tmp && ls samples_*.txt) 2>/dev/null
