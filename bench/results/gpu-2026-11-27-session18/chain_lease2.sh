#!/usr/bin/env bash
# Session 18, lease 2: every Cuda* and Vulkan* test on the session's later code (blocked Split, the C2f NHWC test, int16 GEMM, casts).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/b
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_vulkan tessera_cli tessera_tests || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 300 build-gpu/tessera_tests --gtest_filter='Cuda*' > $OUT/b/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/b/cuda_tests.txt | head -20
  grep -E "Swish|SplitConcat" $OUT/b/cuda_tests.txt | head -8
  echo "CUDA_DONE at $((SECONDS-start)) s"
  unset TESSERA_PLUGIN
  if [[ ! -f /usr/share/vulkan/icd.d/nvidia_icd.json && ! -f /etc/vulkan/icd.d/nvidia_icd.json && \
        -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  fi
  timeout 200 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/b/vulkan_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|SKIPPED" $OUT/b/vulkan_tests.txt | head -20
  echo "VULKAN_DONE at $((SECONDS-start)) s"
  lscpu | grep -E "Model name|Flags" | sed 's/Flags:.*\(avx512_vnni\|amx_int8\).*/Flags include \1/' | head -3
  timeout 300 build-gpu/tessera_tests --gtest_filter='-Cuda*:Vulkan*' > $OUT/b/cpu_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/b/cpu_tests.txt | head -20
  for isa in native avx2 generic; do
    TESSERA_CPU_EXACT_INT8_GEMM=1 TESSERA_CPU_INT16_GEMM=$isa timeout 100 build-gpu/tessera_tests \
      --gtest_filter='*MatMulInteger*:*QLinear*:*ConvInteger*:*DynamicQuantizeLstm*:*IntegerMatMulFusion*' 2>&1 | tail -1
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/b_logs.tgz chain.log b build.log
touch $OUT/DONE
