#!/usr/bin/env bash
# Session 32, lease 3: programmatic dependent launches for the elementwise / Cast / Gather / logic / Transpose kernels
# on top of lease 2's epilogues and SkipLayerNormalization; the CUDA tests, the bench models against PyTorch, the five
# models' bench, BERT fp16's in-graph profile and its mask subgraph, then the side by side against ONNX Runtime.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 gpt2_past16_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*:PackedQkv*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  tail -4 $OUT/a/cuda_tests_summary.txt; head -30 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  wait $EXPORT
  TESSERA_BENCH_MODELS=/tmp/tessera-bench timeout 200 build-gpu/tessera_tests --gtest_filter='CudaModelsTest.*' > $OUT/a/models_test.txt 2>&1
  grep -E "MODEL|OK|FAILED|PASSED" $OUT/a/models_test.txt | tail -12
  echo "TESTS_DONE at $((SECONDS-start)) s"
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128 gpt2_past16 mobilenet_v2_fp16 resnet50_fp16; do
      echo "== $m round $round"
      build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
    done
  done
  export PYTHONPATH=$PWD/build-gpu/python
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/bert_base_s128_fp16.onnx --runs 60 --top 25 --sequence 40 > $OUT/a/profile_bert_fp16.txt 2>&1
  head -30 $OUT/a/profile_bert_fp16.txt
  python3 - > $OUT/a/bert_mask_nodes.txt 2>&1 <<'PY'
import onnx
from onnx import numpy_helper, shape_inference
m = onnx.load('/tmp/tessera-bench/bert_base_s128_fp16.onnx', load_external_data=False)
inits = {t.name: t for t in m.graph.initializer}
small = lambda t: numpy_helper.to_array(t).tolist() if t.ByteSize() < 4000 else f'<{list(t.dims)}>'
for n in m.graph.node:
    if n.name.startswith('/m/') and '/encoder/' not in n.name and '/embeddings/' not in n.name:
        ins = [f'{i}={small(inits[i])}' if i in inits else i for i in n.input]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        for k, v in list(attrs.items()):
            if isinstance(v, onnx.TensorProto): attrs[k] = small(v)
        print(n.op_type, n.name, ins, '->', list(n.output), attrs)
PY
  head -60 $OUT/a/bert_mask_nodes.txt
  echo "PROFILES_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "== side by side at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=3 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 > $OUT/sbs.log 2>&1
  tail -80 $OUT/sbs.log
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease3_all.tgz chain.log a sbs.log side_by_side ort_build.log 2>/dev/null
touch $OUT/DONE
