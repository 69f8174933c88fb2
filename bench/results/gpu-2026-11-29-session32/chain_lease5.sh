#!/usr/bin/env bash
# Session 32, lease 5: the ONNX backend conformance suite on the CUDA EP (the dependent launches now cover the
# elementwise, Cast, Gather, logic, Where and Transpose kernels) against tests/conformance/expected_cuda.txt.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  build_gpu tessera_cuda tessera_conformance || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_conformance --ep CUDAExecutionProvider --plugin cuda="$PWD/build-gpu/libtessera_cuda.so" \
    --ep-option use_tf32=0 --data "$TESSERA_ONNX_TESTDATA" --expect tests/conformance/expected_cuda.txt \
    --list-failures > $OUT/a/conformance_cuda.log 2>&1
  tail -6 $OUT/a/conformance_cuda.log
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease5_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
