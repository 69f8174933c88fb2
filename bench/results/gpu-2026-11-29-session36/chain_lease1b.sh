#!/usr/bin/env bash
# Session 36, lease 1b (the fix): ai.tessera::MatMulSkipLayerNormalization on the CUDA EP (depth chunks whose float32 partial
# sums the normalization adds up): the CUDA tests, the bench models against PyTorch, BERT-base fp16 / fp32 with the
# fusion off and on (alternating), the in-graph kernel profile of BERT fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu2
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  EXPORT=
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*:MatMulSkipLayerNorm*:SkipLayerNorm*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  tail -6 $OUT/a/cuda_tests_summary.txt; head -40 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  TESSERA_BENCH_MODELS=/tmp/tessera-bench timeout 200 build-gpu/tessera_tests --gtest_filter='CudaModelsTest.*' > $OUT/a/models_test.txt 2>&1
  grep -E "MODEL bert|MODEL gpt|OK|FAILED|PASSED" $OUT/a/models_test.txt | tail -14
  echo "TESTS_DONE at $((SECONDS-start)) s"
  build-gpu/tessera partition /tmp/tessera-bench/bert_base_s128_fp16.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN > $OUT/a/partition_bert_fp16.txt 2>&1
  head -16 $OUT/a/partition_bert_fp16.txt
  OFF="--config session.disabled_optimizers=matmul_skip_layer_norm_fusion"
  for round in 1 2; do
    for fused in 0 1; do
      for m in bert_base_s128_fp16 bert_base_s128; do
        echo "== $m round $round fused=$fused"
        build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph $([[ $fused == 0 ]] && echo $OFF) 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
      done
    done
  done
  export PYTHONPATH=$PWD/build-gpu/python
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/bert_base_s128_fp16.onnx --runs 60 --top 25 --sequence 40 > $OUT/a/profile_bert_fp16.txt 2>&1
  head -40 $OUT/a/profile_bert_fp16.txt
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/bert_base_s128.onnx --runs 60 --top 25 --sequence 40 > $OUT/a/profile_bert_fp32.txt 2>&1
  head -30 $OUT/a/profile_bert_fp32.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
