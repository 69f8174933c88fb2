#!/usr/bin/env bash
# Session 30, lease 1: the CUDA tests on the current code (QueueCopies), device-side kernel profiles of the
# automatic graphs (bench/cuda/graph_kernel_profile.py, CUPTI through PyTorch's profiler), and the owed
# same-lease generation comparison against ONNX Runtime's CUDA EP (IO binding, and its CUDA graphs).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  export TESSERA_GPU_CMAKE_ARGS="-DTESSERA_BUILD_PYTHON=ON -DPython_EXECUTABLE=$(command -v python3) -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)"
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16 gpt2_past16_fp16 ) &
  EXPORT=$!
  ( python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/a/export_generation.log 2>&1 ) &
  GEN=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_generation_bench tessera_python || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 400 build-gpu/tessera_tests --gtest_filter='Cuda*:TilePipeline*:CopyTensor*:*GenerationLoop*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  grep -E "^\[==========\]|^\[  PASSED|^\[  FAILED|^\[  SKIPPED" $OUT/a/cuda_tests.txt > $OUT/a/cuda_tests_summary.txt
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  wait $EXPORT
  export PYTHONPATH=$PWD/build-gpu/python
  for m in bert_base_s128_fp16 resnet50_fp16 mobilenet_v2_fp16 gpt2_past16_fp16; do
    echo "== profile $m"
    timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/$m.onnx --runs 60 --top 25 --sequence 70 > $OUT/a/profile_$m.txt 2>&1
    head -32 $OUT/a/profile_$m.txt
  done
  echo "== profile bert_base_s128_fp16 eager"
  timeout 120 python3 bench/cuda/graph_kernel_profile.py /tmp/tessera-bench/bert_base_s128_fp16.onnx --runs 40 --top 25 --no-graph > $OUT/a/profile_bert_fp16_eager.txt 2>&1
  head -8 $OUT/a/profile_bert_fp16_eager.txt
  echo "PROFILES_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null; cd /tmp/tw
  wait $GEN
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  g++ -O2 -std=c++17 bench/generation/ort_generation_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_generation_bench 2>&1 | head -5
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  run_tessera() {
    echo "== tessera fp16 decode"; $G /tmp/gen/gpt2_decode_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 --prompt-model /tmp/gen/gpt2_prompt_fp16.onnx 2>&1 | grep -v "^tokens "
    echo "== tessera fp32 decode"; $G /tmp/gen/gpt2_decode.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 --prompt-model /tmp/gen/gpt2_prompt.onnx 2>&1 | grep -v "^tokens "
  }
  run_tessera
  (
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  export ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so
  for mode in static static_graph; do
    echo "== ort fp16 $mode blend"; timeout 200 /tmp/ort/ort_generation_bench $mode /tmp/gen/gpt2_decode_blend_fp16.onnx /tmp/gen/tokens_prompt.txt 128 5 /tmp/gen/tokens_fp16_cuda.txt 2>&1 | grep -v "^tokens "
    echo "== ort fp32 $mode blend"; ORT_USE_TF32=0 timeout 200 /tmp/ort/ort_generation_bench $mode /tmp/gen/gpt2_decode_blend.onnx /tmp/gen/tokens_prompt.txt 128 5 /tmp/gen/tokens_fp32_cuda.txt 2>&1 | grep -v "^tokens "
  done
  )
  echo "== torch fp16"; timeout 200 python3 bench/generation/torch_generation.py fp16 128 5 2>&1 | grep -v "^tokens "
  run_tessera
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a build.log ort_build.log 2>/dev/null
touch $OUT/DONE
