#!/usr/bin/env bash
# Session 27, lease 1: the CUDA libraries' warm-up at EP creation (provider option library_warmup) and the
# executor's initializers read from the plan: every Cuda* test, conformance on the CUDA EP, creation A/B
# (library_warmup=0 / 1 alternating, warm tuning cache), the side-by-side bench on the six models and the default model.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_cli tessera_tests tessera_conformance || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  export TESSERA_PLUGIN=$PWD/build-gpu/libtessera_cuda.so
  timeout 150 build-gpu/tessera_tests --gtest_filter='CudaEpTest.LibraryWarmup*' > $OUT/a/new_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure|OK \]" $OUT/a/new_tests.txt | head -10
  timeout 420 build-gpu/tessera_tests --gtest_filter='Cuda*:AutomaticGraphs*:GraphCapture*:*GenerationLoop*' > $OUT/a/cuda_tests.txt 2>&1
  grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" $OUT/a/cuda_tests.txt | head -20
  echo "CUDA_TESTS_DONE at $((SECONDS-start)) s"
  timeout 300 build-gpu/tessera_conformance --ep CUDAExecutionProvider --plugin cuda="$PWD/build-gpu/libtessera_cuda.so" \
    --ep-option use_tf32=0 --data "$TESSERA_ONNX_TESTDATA" --expect tests/conformance/expected_cuda.txt \
    --list-failures > $OUT/a/conformance_cuda.log 2>&1
  tail -4 $OUT/a/conformance_cuda.log
  echo "TESTS_DONE at $((SECONDS-start)) s"
  wait $EXPORT
  for i in $(seq 1 150); do [[ -f /tmp/ort/part03 && -f /tmp/ort/part00 && -f /tmp/ort/part01 && -f /tmp/ort/part02 ]] && break; sleep 2; done
  bash .ort-cuda/cpu/on_device.sh build .ort-cuda > $OUT/ort_build.log 2>&1 || tail -5 $OUT/ort_build.log
  echo "ORT_BUILT at $((SECONDS-start)) s"
  RUNS=200 TIME_BUDGET=4 EXTRA_MODELS=$PWD/out/models bash bench/gpu/side_by_side.sh resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128 gpt2_past16 default
  echo "SBS_DONE at $((SECONDS-start)) s"
  cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md 2>/dev/null; cd /tmp/tw
  # Creation with the tuning cache of an earlier process, library warm-up off / on, alternating, fresh processes.
  T=build-gpu/tessera
  for m in resnet50 resnet50_fp16 mobilenet_v2 mobilenet_v2_fp16 bert_base_s128; do
    export TESSERA_CACHE_DIR=$OUT/side_by_side/tuning_cache_$m
    for round in 1 2 3; do
      for w in 0 1; do
        r=$($T bench /tmp/tessera-bench/$m.onnx --ep cuda --ep-option library_warmup=$w --modes io --runs 5 --warmup 1 --time-budget 0.2 2>&1 | grep -E "session creation|first run" | tr '\n' ' ')
        echo "CREATE $m warmup=$w round $round: $r"
      done
    done
  done
  unset TESSERA_CACHE_DIR
  $T bench /tmp/tessera-bench/resnet50_fp16.onnx --ep cuda --modes io --runs 5 --warmup 1 --time-budget 0.2 --verbose > $OUT/a/verbose_rn50fp16_warm.txt 2>&1
  grep -i "creation\|warm-up" $OUT/a/verbose_rn50fp16_warm.txt | head -12
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a_logs.tgz chain.log a side_by_side side_by_side.md build.log 2>/dev/null
touch $OUT/DONE
