#!/usr/bin/env bash
# Session 31, lease 1: the float16 register-softmax attention kernel (attention_flash.cu) against the tensor-core
# and FMA kernels (tessera_attention_kernels), the CUDA tests, BERT with and without packed_qkv_attention (A/B,
# alternating), the in-graph kernel profile of BERT fp16, then the side by side against ONNX Runtime's CUDA EP.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 gpt2_past16 gpt2_past16_fp16 ) &
  EXPORT=$!
  build_gpu tessera_attention_kernels || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "== attention kernels at $((SECONDS-start)) s"
  timeout 60 build-gpu/tessera_attention_kernels 2>&1 | tee $OUT/a/attention_kernels.txt
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:PackedQkv*:AttentionFusion*:SplitConcat*:SharedInput*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/a/cuda_tests.txt | head -20
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -80
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  wait $EXPORT
  echo "== bert fp16 on cuda: steps by op"
  build-gpu/tessera partition /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN 2>&1 | awk 'NR>4 {print $3}' | sort | uniq -c | sort -rn | head -20
  python3 -c "
import onnx, numpy as np
from onnx import numpy_helper
m = onnx.load('/tmp/tessera-bench/bert_base_s128_fp16.onnx')
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in m.graph.node if n.op_type == 'Constant' and n.attribute and n.attribute[0].name == 'value'}
for n in [n for n in m.graph.node if n.op_type == 'Reshape'][:5]:
    print(n.name, n.input[1], inits.get(n.input[1], consts.get(n.input[1], 'computed')))
"
  OFF="--config session.disabled_optimizers=packed_qkv_attention"
  for round in 1 2; do
    for packed in 0 1; do
      for m in bert_base_s128_fp16 bert_base_s128; do
        echo "== $m round $round packed=$packed"
        build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph $([[ $packed == 0 ]] && echo $OFF) 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
      done
    done
  done
  export PYTHONPATH=$PWD/build-gpu/python
  echo "== profile bert_base_s128_fp16"
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/bert_base_s128_fp16.onnx --runs 60 --top 25 --sequence 40 > $OUT/a/profile_bert_fp16.txt 2>&1
  head -70 $OUT/a/profile_bert_fp16.txt
  echo "PROFILES_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "== side by side at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=3 bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 > $OUT/sbs.log 2>&1
  tail -80 $OUT/sbs.log
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a sbs.log side_by_side ort_build.log 2>/dev/null
touch $OUT/DONE
