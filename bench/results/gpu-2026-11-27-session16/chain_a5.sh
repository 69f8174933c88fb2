#!/usr/bin/env bash
# Session 16, lease 5: eager-attention BERT / GPT-2 optimized by ONNX Runtime (Attention, MultiHeadAttention,
# EmbedLayerNormalization, ...) through Tessera's CPU and CUDA EPs against ONNX Runtime's CPU EP.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a5
{
  set -x
  start=$SECONDS
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  python3 out/export_eager.py /tmp > $OUT/a5/export.txt 2>&1 &
  EXPORT=$!
  CPU_BENCH=0 timeout 400 bash scripts/gpu_host/run_python_and_cpu_bench.sh > $OUT/a5/python.txt 2>&1
  wait $EXPORT; tail -3 $OUT/a5/export.txt
  export PYTHONPATH=$PWD/build-py/python
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  for v in attention mha; do
    timeout 300 python3 out/ort_optimized_check.py /tmp/bert_eager.onnx /tmp/bert_opt_$v.onnx bert 4 256 $v > $OUT/a5/bert_$v.txt 2>&1
    cat $OUT/a5/bert_$v.txt | grep -v "^input" | tail -8
  done
  timeout 300 python3 out/ort_optimized_check.py /tmp/gpt2_eager.onnx /tmp/gpt2_opt.onnx gpt2 4 256 > $OUT/a5/gpt2.txt 2>&1
  cat $OUT/a5/gpt2.txt | grep -v "^input" | tail -8
  echo "DONE_AT $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/a5_logs.tgz chain.log a5
touch $OUT/DONE
