#!/usr/bin/env bash
# Session 13 final lease: generation with the cache writes fused into the attention, against ORT and PyTorch.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  python3 scripts/gpu_host/export_generation.py /tmp/gen > $OUT/export.log 2>&1 &
  EXPORT=$!
  build_gpu tessera_cuda tessera_generation_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  g++ -O2 -std=c++17 bench/generation/ort_generation_bench.cc -I/tmp/ort/include -I/usr/local/cuda/include -L/tmp/ort \
    -lonnxruntime -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,/tmp/ort -o /tmp/ort/ort_generation_bench 2>&1 | head -5
  wait $EXPORT
  G=build-gpu/tessera_generation_bench
  P="--prompt /tmp/gen/tokens_prompt.txt"
  run_tessera() {
    echo "== tessera fp16 $1"; $G /tmp/gen/gpt2_${1}_fp16.onnx $P --reference /tmp/gen/tokens_fp16_cuda.txt --runs 10 2>&1 | grep -v "^tokens "
    echo "== tessera fp32 $1"; $G /tmp/gen/gpt2_${1}.onnx $P --reference /tmp/gen/tokens_fp32_cuda.txt --ep-option use_tf32=0 --runs 10 2>&1 | grep -v "^tokens "
  }
  run_tessera decode
  (
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:/tmp/ort:${LD_LIBRARY_PATH:-}"
  export ORT_CUDA_EP_LIB=/tmp/ort/libonnxruntime_providers_cuda.so
  for mode in static static_graph; do
    echo "== ort fp16 $mode blend"; timeout 300 /tmp/ort/ort_generation_bench $mode /tmp/gen/gpt2_decode_blend_fp16.onnx /tmp/gen/tokens_prompt.txt 128 5 /tmp/gen/tokens_fp16_cuda.txt 2>&1 | grep -v "^tokens "
    echo "== ort fp32 $mode blend"; ORT_USE_TF32=0 timeout 300 /tmp/ort/ort_generation_bench $mode /tmp/gen/gpt2_decode_blend.onnx /tmp/gen/tokens_prompt.txt 128 5 /tmp/gen/tokens_fp32_cuda.txt 2>&1 | grep -v "^tokens "
  done
  )
  run_tessera decode_blend
  echo "== torch fp16"; python3 bench/generation/torch_generation.py fp16 128 5 2>&1 | grep -v "^tokens "
  echo "== torch fp32"; python3 bench/generation/torch_generation.py fp32 128 5 2>&1 | grep -v "^tokens "
  run_tessera decode
  echo "GEN_DONE at $((SECONDS-start)) s"
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
