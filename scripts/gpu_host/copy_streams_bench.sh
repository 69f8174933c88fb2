#!/usr/bin/env bash
# do_copy_in_default_stream A/B on the GPU host: `tessera bench --concurrency 2` (Run(feeds) with host tensors
# from two threads on one session) with copies on the compute stream (1) and on copy streams (0), alternating.
# Models: a copy-bound one made here (Relu over 4096x4096 float32: 64 MiB up and 64 MiB down per run, a few
# microseconds of GPU work) and, when present, ResNet-50 from scripts/gpu_host/export_models.py.
#
#   bash scripts/gpu_host/copy_streams_bench.sh [BUILD_DIR] [BENCH_DIR]     (after run_gpu_tests.sh built it)
set -uo pipefail
BUILD_DIR=${1:-build-gpu}
BENCH_DIR=${2:-/tmp/tessera-bench}
mkdir -p "$BENCH_DIR"
python3 - "$BENCH_DIR/copy_bound.onnx" <<'PY'
import sys
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4096, 4096])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4096, 4096])
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "copy_bound", [x], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), sys.argv[1])
PY
for model in copy_bound resnet50; do
  [[ -f $BENCH_DIR/$model.onnx ]] || continue
  for round in 1 2; do
    for setting in 1 0; do
      echo "==== $model do_copy_in_default_stream=$setting round $round"
      timeout 120 "$BUILD_DIR/tessera" bench "$BENCH_DIR/$model.onnx" --ep cuda \
        --ep-option do_copy_in_default_stream=$setting --concurrency 2 --runs 400 --warmup 10 --time-budget 9 |
        grep -E 'host tensors|io binding |not measured'
    done
  done
done
