#!/usr/bin/env bash
# Session 33, lease 3: where a host-tensor replay of GPT-2 spends its time (a diagnostic patch, out/diag_host_run.patch,
# applied to this build only: phase times printed when TESSERA_DIAG_HOST_RUN is set), with the intra-op pool's size
# and libgomp's wait policy varied; and the Vulkan EP's per-step device times (profiles kept as JSON).
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  (git apply out/diag_host_run.patch || patch -p1 < out/diag_host_run.patch) && echo PATCHED
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench gpt2_past16 gpt2_past16_fp16 mobilenet_v2_fp16 resnet50_fp16 ) &
  EXPORT=$!
  build_gpu tessera_cuda tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  T=build-gpu/tessera
  wait $EXPORT
  G="$T bench /tmp/tessera-bench/gpt2_past16.onnx --ep cuda --runs 4000 --time-budget 3"
  for variant in "" "--threads 1" "--threads 2" "--threads 4" "--threads 8"; do
    echo "== gpt2 fp32 host $variant"
    TESSERA_DIAG_HOST_RUN=1 timeout 60 $G --modes host $variant 2>&1 | grep -E "^host|DIAG" | tail -2
  done
  for policy in active passive; do
    echo "== gpt2 fp32 host OMP_WAIT_POLICY=$policy"
    OMP_WAIT_POLICY=$policy TESSERA_DIAG_HOST_RUN=1 timeout 60 $G --modes host 2>&1 | grep -E "^host|DIAG" | tail -2
  done
  echo "== gpt2 fp32 io,graph"
  timeout 60 $G --modes io,graph 2>&1 | grep -E "^io" | tail -2
  echo "== gpt2 fp16 host"
  TESSERA_DIAG_HOST_RUN=1 timeout 60 $T bench /tmp/tessera-bench/gpt2_past16_fp16.onnx --ep cuda --runs 4000 --time-budget 3 --modes host,io,graph 2>&1 | grep -E "^(host|io)|DIAG" | tail -4
  echo "GPT2_DONE at $((SECONDS-start)) s"
  for m in mobilenet_v2_fp16 resnet50_fp16; do
    rm -f /tmp/vkprof_*.json
    timeout 100 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --modes io --runs 20 --warmup 3 --time-budget 2 --profile /tmp/vkprof > /dev/null 2>&1
    f=$(ls -t /tmp/vkprof_*.json 2>/dev/null | head -1)
    [[ -n $f ]] && cp $f $OUT/a/vkprof_$m.json && echo "profile $m saved"
  done
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
cd $OUT && tar czf $OUT/lease3_all.tgz chain.log a 2>/dev/null
touch $OUT/DONE
