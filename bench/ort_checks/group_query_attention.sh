#!/usr/bin/env bash
# Tessera's CPU GroupQueryAttention against ONNX Runtime 1.30 (onnxruntime-node) on the one-node models of
# group_query_attention_models.py: prints each model's max abs / relative output differences (compare_ort.mjs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
DIR=${DIR:-build/gqa_check}
mkdir -p "$DIR"
/usr/bin/python3 bench/ort_checks/group_query_attention_models.py "$DIR"
[[ -f .deps/ort-node/node_modules/onnxruntime-node/dist/index.js ]] || bash scripts/fetch_onnxruntime.sh >/dev/null
for model in "$DIR"/*.onnx; do
  printf '%-28s ' "$(basename "$model" .onnx)"
  node bench/compare_ort.mjs --model "$model" --threads 1 --budget 0.2 --rounds 1 2>&1 | grep -oE "max abs diff: .*\); ORT" | sed 's/; ORT$//'
done
