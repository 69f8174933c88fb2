#!/usr/bin/env bash
# Session 31, lease 4 (lease 3 was released after its kernel bench: attention_kernels.txt there): attention_flash.cu with mask rows copied with the keys (a row per query: Hugging Face's
# expanded masks), the kernel bench, ncu of its choice at BERT-base s128, the CUDA tests, BERT bench and the
# in-graph kernel profile of BERT fp16.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128 bert_base_s128_fp16 ) &
  EXPORT=$!
  build_gpu tessera_attention_kernels || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "== attention kernels at $((SECONDS-start)) s"
  timeout 90 build-gpu/tessera_attention_kernels > $OUT/a/attention_kernels.txt 2>&1
  cat $OUT/a/attention_kernels.txt
  ( timeout 200 ncu --clock-control none --kernel-name regex:FlashAttention --launch-skip 7208 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats build-gpu/tessera_attention_kernels > $OUT/a/ncu_flash_auto_bert.txt 2>&1 ) &
  NCU=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait $NCU
  grep -E "Duration|Grid Size|Block Size|Registers|Warp Cycles Per Issued" $OUT/a/ncu_flash_auto_bert.txt
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:PackedQkv*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/a/cuda_tests.txt | head -20
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED|FAILED  \]|^\[       OK \] CudaAttention" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  grep -B2 -A12 "Failure" $OUT/a/cuda_tests.txt | head -200 > $OUT/a/cuda_test_failures.txt
  head -60 $OUT/a/cuda_test_failures.txt
  rm -f $OUT/a/cuda_tests.txt
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  for round in 1 2; do
    for m in bert_base_s128_fp16 bert_base_s128; do
      echo "== $m round $round"
      build-gpu/tessera bench /tmp/tessera-bench/$m.onnx --ep cuda --plugin cuda=$TESSERA_PLUGIN --runs 400 --time-budget 2 --modes host,io,graph 2>&1 | grep -E "host tensors|io binding" | grep -v "first run" | head -3
    done
  done
  export PYTHONPATH=$PWD/build-gpu/python
  echo "== profile bert_base_s128_fp16"
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/bert_base_s128_fp16.onnx --runs 60 --top 25 --sequence 40 > $OUT/a/profile_bert_fp16.txt 2>&1
  head -24 $OUT/a/profile_bert_fp16.txt
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease4_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
