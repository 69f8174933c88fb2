#!/usr/bin/env bash
# Issue 13's GPU bench: ONNX Runtime 1.29's CUDA EP and Tessera's CUDA EP on the same .onnx files, alternating
# (ORT, Tessera, ORT, Tessera per model) in one lease, every mode users run: host tensors, IO binding without a
# graph, IO binding + CUDA graph, 4 threads calling Run(feeds) on one session, session creation (round 1 with an
# empty tuning cache, round 2 with round 1's), first run; then Tessera once more with automatic CUDA graphs off (eager rows).
#
#   bash bench/gpu/side_by_side.sh [MODEL...]     (on the GPU host; default: the six models below)
#
# Models with symbolic dimensions get whole input shapes from SHAPES below (both runtimes). A model not exported by
# scripts/gpu_host/export_models.py (the real-model corpus: detectors with Resize and Concat, the default model) is
# taken from $EXTRA_MODELS/NAME.onnx (a folder carried to the host).
#
# Needs: build-gpu/tessera (scripts/gpu_host/build_gpu.sh), ONNX Runtime staged in /tmp/ort by
# ../shared/bench/ort_cuda/on_device.sh (libonnxruntime.so, libonnxruntime_providers_cuda.so, headers), and the
# models in /tmp/tessera-bench (scripts/gpu_host/export_models.py; exported here when missing). Writes the raw
# outputs and the table (bench/gpu/side_by_side_table.py) to $OUT (else out/gpu).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LOG_DIR=${OUT:-$PWD/out/gpu}
BENCH_DIR=/tmp/tessera-bench
RUNS=${RUNS:-300}
TIME_BUDGET=${TIME_BUDGET:-45}  # seconds of timed Tessera runs per model and round, shared by its modes
CUDNN_ROOT=${CUDNN_ROOT:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn}
MODELS=("$@")
((${#MODELS[@]})) || MODELS=(resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16)
EXTRA_MODELS=${EXTRA_MODELS:-$PWD/out/models}
declare -A SHAPES=([bert_base_dynamic]="input_ids=1x128,attention_mask=1x128" [ppocrv4_det]="x=1x3x640x640"
                   [default]="x=1x3x640x640")
mkdir -p "$LOG_DIR/side_by_side"
export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
if [[ ! -x /tmp/ort/ort_cuda_bench ]]; then
  g++ -O2 -std=c++17 bench/gpu/ort_cuda_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_cuda_bench || exit 1
fi
mkdir -p "$BENCH_DIR"
for m in "${MODELS[@]}"; do
  [[ ! -f $BENCH_DIR/$m.onnx && -f $EXTRA_MODELS/$m.onnx ]] && cp "$EXTRA_MODELS/$m.onnx" "$BENCH_DIR/"
  if [[ ! -f $BENCH_DIR/$m.onnx ]]; then
    family=${m%%_fp16}; family=${family%%_s128}; family=${family%%_past16}; family=${family/bert_base/bert}
    python3 scripts/gpu_host/export_models.py "$BENCH_DIR" "$family" >>"$LOG_DIR/export.log" 2>&1
  fi
done
for m in "${MODELS[@]}"; do
  # Tessera's tuning cache (CUDA EP option tuning_cache_file): empty in round 1, round 1's results in round 2.
  export TESSERA_CACHE_DIR="$LOG_DIR/side_by_side/tuning_cache_$m"
  rm -rf "$TESSERA_CACHE_DIR"
  shape_spec=${SHAPES[$m]:-}
  shape_args=()
  for item in ${shape_spec//,/ }; do shape_args+=(--shape "$item"); done
  for round in 1 2; do
    echo "==== $m round $round"
    ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so timeout 300 /tmp/ort/ort_cuda_bench \
      "$BENCH_DIR/$m.onnx" "$RUNS" $shape_spec >"$LOG_DIR/side_by_side/${m}_ort_$round.txt" 2>&1
    timeout 300 build-gpu/tessera bench "$BENCH_DIR/$m.onnx" "${shape_args[@]}" --ep cuda --runs "$RUNS" --warmup 20 \
      --time-budget "$TIME_BUDGET" --concurrency 4 >"$LOG_DIR/side_by_side/${m}_tessera_$round.txt" 2>&1
  done
  # Eager runs (automatic CUDA graphs off), for the rows that show what automatic graphs change.
  timeout 300 build-gpu/tessera bench "$BENCH_DIR/$m.onnx" "${shape_args[@]}" --ep cuda --ep-option automatic_cuda_graphs=0 \
    --modes host,concurrent,io --runs "$RUNS" --warmup 20 --time-budget "$TIME_BUDGET" --concurrency 4 \
    >"$LOG_DIR/side_by_side/${m}_tessera_eager_2.txt" 2>&1
done
python3 bench/gpu/side_by_side_table.py "$LOG_DIR/side_by_side" "${MODELS[@]}" | tee "$LOG_DIR/side_by_side.md"
