#!/usr/bin/env bash
# Runs every corpus model (bench/corpus/models.tsv, fetched by scripts/fetch_corpus.sh) through Tessera and
# ONNX Runtime 1.30 (onnxruntime-node, scripts/fetch_onnxruntime.sh) on the same inputs with
# bench/compare_ort.mjs, and prints one table: loads, max relative difference of the outputs (largest
# |Tessera - ORT| over the largest |ORT|), medians and the time ratio.
#
#   bash bench/corpus/run_corpus.sh [--threads N] [--budget SECONDS] [--out FILE.jsonl] [NAME...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

THREADS=2 BUDGET=8 OUT=build/corpus.jsonl
names=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
bash scripts/fetch_corpus.sh "${names[@]}" >/dev/null
[[ -f .deps/ort-node/node_modules/onnxruntime-node/dist/index.js ]] || bash scripts/fetch_onnxruntime.sh >/dev/null
rm -f "$OUT"
wanted=" ${names[*]} "
while IFS=$'\t' read -r name package file sha256 license kind args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ ${#names[@]} -gt 0 && "$wanted" != *" $name "* ]] && continue
  echo "== $name ($kind)" >&2
  # shellcheck disable=SC2086  # the manifest's arguments are split on purpose
  if ! node bench/compare_ort.mjs --model ".models/corpus/$name.onnx" --label "$name" --threads "$THREADS" \
        --rounds 4 --budget "$BUDGET" --warmup 2 --json "$OUT" $args 2> "$OUT.err" >&2; then
    reason=$(tail -1 "$OUT.err" | tr '\t"\\' '   ')
    echo "{\"model\": \"$name\", \"error\": \"$reason\"}" >> "$OUT"
    echo "   failed: $reason" >&2
  fi
done < bench/corpus/models.tsv
rm -f "$OUT.err"
node bench/corpus/corpus_table.mjs "$OUT"
