#!/usr/bin/env bash
# Session 16, lease 4: ONNX Runtime-optimized BERT and GPT-2 (contrib ops) through Tessera's CPU and CUDA EPs.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a4
{
  set -x
  start=$SECONDS
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  export_bench_models /tmp/tessera-bench bert_base_s128 gpt2_past16 &
  EXPORT=$!
  CPU_BENCH=0 timeout 400 bash scripts/gpu_host/run_python_and_cpu_bench.sh > $OUT/a4/python.txt 2>&1
  tail -8 $OUT/a4/python.txt
  wait $EXPORT
  echo "READY at $((SECONDS-start)) s"
  export PYTHONPATH=$PWD/build-py/python
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  timeout 300 python3 out/ort_optimized_check.py /tmp/tessera-bench/bert_base_s128.onnx /tmp/bert_opt.onnx bert 12 768 > $OUT/a4/bert_opt.txt 2>&1
  cat $OUT/a4/bert_opt.txt | tail -12
  timeout 300 python3 out/ort_optimized_check.py /tmp/tessera-bench/gpt2_past16.onnx /tmp/gpt2_opt.onnx gpt2 12 768 > $OUT/a4/gpt2_opt.txt 2>&1
  cat $OUT/a4/gpt2_opt.txt | tail -12
  grep -E "passed|failed" $OUT/a4/python.txt $OUT/pytest.log | tail -3
  echo "DONE_AT $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a4_logs.tgz chain.log a4 pytest.log
touch $OUT/DONE
