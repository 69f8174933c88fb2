#!/usr/bin/env bash
# Issue 19 on a host with two or more GPUs, after the CUDA build (build-gpu): the multi-GPU tests, the peer copy
# bandwidth (bare CUDA against Environment::CopyTensors), ResNet-50 batch 8 data-parallel throughput on one GPU and
# on all (`tessera bench --modes data-parallel`), and the pipeline example with ResNet-50 split over two GPUs.
#
#   bash scripts/gpu_host/multi_gpu_probe.sh        (logs in $OUT, else out/gpu; models in /tmp/tessera-multi-gpu)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LOG_DIR=${OUT:-$PWD/out/gpu}
mkdir -p "$LOG_DIR"
source scripts/gpu_host/build_gpu.sh || exit 1
[[ ${SKIP_BUILD:-0} == 1 ]] || build_gpu tessera_cli tessera_cuda tessera_tests tessera_peer_copy_bench \
  example_data_parallel example_pipeline_parallel || exit 1
nvidia-smi topo -m 2>&1 | head -8
echo "==== multi-GPU tests"
build-gpu/tessera_tests --gtest_filter='CudaMultiGpu*' 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Skipped" | head -20
echo "==== peer copies"
build-gpu/tessera_peer_copy_bench build-gpu/libtessera_cuda.so 256
DIR=/tmp/tessera-multi-gpu
[[ -f $DIR/resnet50_b8_second.onnx ]] || python3 scripts/gpu_host/multi_gpu_models.py "$DIR" 2>&1 | tail -2
echo "==== ResNet-50 batch 8, data parallel"
build-gpu/tessera bench "$DIR/resnet50_b8.onnx" --ep cuda --modes data-parallel --concurrency "${PER_DEVICE:-2}" \
  --runs 3000 --warmup 10 --time-budget "${DP_BUDGET:-45}" 2>&1 | grep -E "^(session|first|mode|---|data)"
echo "==== pipeline example, ResNet-50 batch 8 split over two GPUs"
TESSERA_PLUGIN=build-gpu/libtessera_cuda.so build-gpu/examples/example_pipeline_parallel "$DIR/resnet50_b8_first.onnx" \
  "$DIR/resnet50_b8_second.onnx" CUDAExecutionProvider 200
echo "==== data-parallel example"
TESSERA_PLUGIN=build-gpu/libtessera_cuda.so build-gpu/examples/example_data_parallel "$DIR/resnet50_b8.onnx" \
  CUDAExecutionProvider 400
