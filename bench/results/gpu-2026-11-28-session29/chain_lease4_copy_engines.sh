#!/usr/bin/env bash
# Session 29, lease 4: why the copy-bound tone curve's pipelined uploads run slower than in the copies-only bound:
# the automatic graph's device-to-device input / output copies (copy engines) against PCIe transfers?
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( python3 bench/tile_pipeline/make_models.py /tmp/tilem > $OUT/a/tile_models.log 2>&1 ) &
  build_gpu tessera_cuda tessera_tile_bench || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  wait
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  T=build-gpu/tessera_tile_bench
  for round in 1 2; do
    for variant in default eager kernelcopies; do
      opts=""; envs=""
      [[ $variant == eager ]] && opts="ep_options=automatic_cuda_graphs=0"
      [[ $variant == kernelcopies ]] && envs="TESSERA_CUDA_DEVICE_COPIES=kernel"
      echo "== tone_curve depth 4 pinned round $round $variant"
      env $envs $T /tmp/tilem/tone_curve.onnx ep=CUDAExecutionProvider size=8192x8192 tile=1024 halo=0 depth=4 threads=8 repeat=5 pinned=1 $opts 2>&1 | grep -E "^compute|^copies|^pipelined|ratio|max"
    done
  done
  echo "== conv_light depth 5 pinned kernelcopies"
  TESSERA_CUDA_DEVICE_COPIES=kernel $T /tmp/tilem/conv_light.onnx ep=CUDAExecutionProvider size=8192x8192 tile=1024 halo=8 depth=5 threads=8 repeat=5 pinned=1 2>&1 | grep -E "^compute|^copies|^pipelined|max"
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a 2>/dev/null
touch $OUT/DONE
