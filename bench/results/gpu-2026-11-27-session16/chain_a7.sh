#!/usr/bin/env bash
# Session 16, lease 7: the Python suite on the GPU with the session's final code (mirrored cudagraph tests included).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a7
{
  start=$SECONDS
  CPU_BENCH=0 timeout 500 bash scripts/gpu_host/run_python_and_cpu_bench.sh > $OUT/a7/python.txt 2>&1
  tail -12 $OUT/a7/python.txt
  CUDNN_ROOT=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn
  eval "$(bash scripts/gpu_host/setup_prefix.sh env /tmp/tessera-deps)"
  LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:$LD_LIBRARY_PATH" PYTHONPATH=$PWD/build-py/python \
    TESSERA_TESTING_EP_PATH=$PWD/build-py/libtessera_testing_ep.so \
    timeout 200 python3 -m pytest -v -p no:cacheprovider tests/python/test_ort_cudagraph.py \
    tests/python/test_ort_global_threadpool.py > $OUT/a7/cudagraph_verbose.txt 2>&1
  grep -E "PASSED|FAILED|SKIPPED|ERROR" $OUT/a7/cudagraph_verbose.txt | head -20
  echo "DONE_AT $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cp $OUT/pytest.log $OUT/a7/ 2>/dev/null
cd $OUT && tar czf $OUT/a7_logs.tgz chain.log a7
touch $OUT/DONE
