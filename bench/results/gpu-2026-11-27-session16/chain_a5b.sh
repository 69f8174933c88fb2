#!/usr/bin/env bash
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
rm -f $OUT/DONE
{
  source scripts/gpu_host/build_gpu.sh >/dev/null 2>&1
  python3 out/export_eager.py /tmp > $OUT/a5/export.txt 2>&1; tail -3 $OUT/a5/export.txt
  export PYTHONPATH=$PWD/build-py/python
  export LD_LIBRARY_PATH="$CUDNN_ROOT/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  for v in attention mha; do
    timeout 300 python3 out/ort_optimized_check.py /tmp/bert_eager.onnx /tmp/bert_opt_$v.onnx bert 4 256 $v > $OUT/a5/bert_$v.txt 2>&1
    grep -v "^input" $OUT/a5/bert_$v.txt | tail -8
  done
  timeout 300 python3 out/ort_optimized_check.py /tmp/gpt2_eager.onnx /tmp/gpt2_opt.onnx gpt2 4 256 > $OUT/a5/gpt2.txt 2>&1
  grep -v "^input" $OUT/a5/gpt2.txt | tail -8
} > $OUT/chain_b.log 2>&1
cd $OUT && tar czf $OUT/a5b_logs.tgz chain_b.log a5
touch $OUT/DONE
