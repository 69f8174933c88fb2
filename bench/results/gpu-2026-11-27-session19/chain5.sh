#!/usr/bin/env bash
# Session 19, lease 6: where BERT-base fp16's graph time goes after the Q/K/V merge (ncu per-kernel summary).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/models bert_base_s128_fp16 ) &
  MODELS=$!
  build_gpu tessera_cuda tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  wait $MODELS
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  echo "ncu: $NCU"
  timeout 150 $NCU --clock-control none --launch-skip 3000 --launch-count 300 --print-summary per-kernel \
    build-gpu/tessera bench /tmp/models/bert_base_s128_fp16.onnx --ep cuda --modes io --runs 400 --warmup 20 \
    > $OUT/a/ncu.txt 2>&1
  echo "NCU rc $? at $((SECONDS-start)) s"
  grep -E "^\s+[A-Za-z_].*\(|Duration|Invocations" $OUT/a/ncu.txt | head -5
  python3 - <<'PY'
import re
text = open('/tmp/tw/out/gpu/a/ncu.txt').read()
# per-kernel summary blocks: a kernel name line, then metric rows; collect "gpu__time_duration.sum" averages
blocks = re.split(r'\n(?=  \S)', text)
rows = []
for b in blocks:
    lines = b.strip().splitlines()
    if not lines: continue
    name = lines[0].strip()
    inv = re.search(r'Invocations\s+(\d+)', b) or re.search(r'(\d+) invocations', b)
    dur = re.search(r'Duration\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)', b)
    if dur and inv:
        rows.append((name[:110], int(inv.group(1)), dur.group(1), dur.group(2), dur.group(3)))
for r in rows[:60]: print(r)
PY
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cp $OUT/a/ncu.txt $OUT/ncu.txt 2>/dev/null
touch $OUT/DONE
