#!/usr/bin/env bash
# Session 16, lease 2: where cuDNN's first-use cost goes (sub-library loading?), and the fp16 BERT's mask Casts.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a2
{
  set -x
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  export_bench_models /tmp/tessera-bench bert_base_s128 &
  EXPORT=$!
  build_gpu tessera_cudnn_first_use || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  ls -la $CUDNN_ROOT/lib > $OUT/a2/cudnn_libs.txt
  for dt in fp32 fp16; do
    for mode in plain preload plain preload; do
      timeout 120 build-gpu/tessera_cudnn_first_use $dt 4 $([[ $mode == preload ]] && echo preload) \
        >> $OUT/a2/first_use_${dt}_${mode}.txt 2>&1
      echo "==== end" >> $OUT/a2/first_use_${dt}_${mode}.txt
    done
  done
  grep -E "mapped|dlopen|cudnnCreate|1x1 64->64 @56: graph|7x7 s2 3->64 @224: graph|serial|rebuild" $OUT/a2/first_use_fp32_*.txt | head -80
  wait $EXPORT
  python3 - /tmp/tessera-bench/bert_base_s128_fp16.onnx > $OUT/a2/bert_fp16_casts.txt 2>&1 <<'PY'
import sys, onnx
from onnx import shape_inference
m = shape_inference.infer_shapes(onnx.load(sys.argv[1]))
g = m.graph
types = {v.name: v.type.tensor_type.elem_type for v in list(g.value_info) + list(g.input) + list(g.output)}
prod = {o: n for n in g.node for o in n.output}
cons = {}
for n in g.node:
    for i in n.input: cons.setdefault(i, []).append(n)
seen, frontier = set(), ["attention_mask"]
for depth in range(8):
    nxt = []
    for v in frontier:
        for n in cons.get(v, []):
            if n.name in seen: continue
            seen.add(n.name)
            print(depth, n.op_type, n.name, [ (i, types.get(i)) for i in n.input ], '->', [(o, types.get(o)) for o in n.output],
                  [(a.name, onnx.helper.get_attribute_value(a)) for a in n.attribute if a.name in ('to',)])
            nxt += list(n.output)
    frontier = nxt
PY
  cat $OUT/a2/bert_fp16_casts.txt | head -40
  echo "DONE_AT $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a2_logs.tgz chain.log a2
touch $OUT/DONE
