#!/bin/bash
# The CPU bench table: Tessera vs ONNX Runtime (onnxruntime-node 1.30.0) on ResNet-50, MobileNetV2 and
# BERT-base (sequence 128) at batch 1 and 8, plus the default model (x 1x3x640x640), at one thread count.
# Writes bench/results/<host>-<date>.md (and the raw JSON lines beside it).
#
#   bash bench/run_cpu_bench.sh [THREADS]          # THREADS defaults to nproc
#   ONLY="resnet50 bert_base" BATCHES=1 bash bench/run_cpu_bench.sh 2
#
# Environment: ONLY (models: resnet50 mobilenet_v2 bert_base default), BATCHES ("1 8"), ROUNDS (10),
# BUDGET (seconds of timed runs per row, 60), OPT_LEVEL (all), MODELS_DIR (build/bench_models).
# Needs build/tessera (scripts/build.sh) and ONNX Runtime (scripts/fetch_onnxruntime.sh, run on demand).
set -euo pipefail

cd "$(dirname "$0")/.."
THREADS=${1:-$(nproc)}
ONLY=${ONLY:-"resnet50 mobilenet_v2 bert_base default"}
BATCHES=${BATCHES:-"1 8"}
ROUNDS=${ROUNDS:-10}
BUDGET=${BUDGET:-60}
OPT_LEVEL=${OPT_LEVEL:-all}
MODELS_DIR=${MODELS_DIR:-build/bench_models}

[ -x build/tessera ] || { echo "run_cpu_bench.sh: build/tessera is missing (bash scripts/build.sh)" >&2; exit 1; }
[ -f .deps/ort-node/node_modules/onnxruntime-node/dist/index.js ] || bash scripts/fetch_onnxruntime.sh

# Full-size models, exported once (random weights, seed 0); build/models_full is reused when present.
model_path() {
  local name=$1
  [ "$name" = default ] && { echo .models/default.onnx; return; }
  [ -f "build/models_full/$name/model.onnx" ] && { echo "build/models_full/$name/model.onnx"; return; }
  [ -f "$MODELS_DIR/$name/model.onnx" ] ||
    /usr/bin/python3 scripts/export_models.py --only "$name" --out "$MODELS_DIR" >&2
  echo "$MODELS_DIR/$name/model.onnx"
}

mkdir -p bench/results
STEM="bench/results/$(hostname)-$(date +%Y-%m-%d)-t$THREADS"
RAW="$STEM.jsonl"
: > "$RAW"
for name in $ONLY; do
  model=$(model_path "$name")
  for batch in $BATCHES; do
    case $name in
      default) [ "$batch" = 1 ] || continue; shape_args=(--shape x=1x3x640x640) ;;
      bert_base) shape_args=(--dim batch="$batch" --dim sequence=128) ;;
      *) shape_args=(--dim batch="$batch") ;;
    esac
    node bench/compare_ort.mjs --model "$model" --label "$name" --threads "$THREADS" --rounds "$ROUNDS" \
      --budget "$BUDGET" --opt-level "$OPT_LEVEL" --json "$RAW" "${shape_args[@]}"
  done
done
node bench/render_results.mjs "$RAW" "bash bench/run_cpu_bench.sh $THREADS (ONLY=\"$ONLY\" BATCHES=\"$BATCHES\")" \
  > "$STEM.md"
cat "$STEM.md"
echo "run_cpu_bench.sh: wrote $STEM.md"
