#!/usr/bin/env bash
# Session 34, lease 5: split-K products and convolutions finished by the last workgroup of each tile (one dispatch,
# split_fixup.glsl) against the separate reduce dispatches before (out/old_splitk: the previous commit's files of the
# plugin, built into a second copy), alternating; outputs against the CPU; the Vulkan tests on the GPU.
cd /tmp/tw
export OUT=/tmp/tw/out/gpu
mkdir -p $OUT/a
{
  for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
  [[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source scripts/gpu_host/build_gpu.sh || { echo BUILD_SETUP_FAILED; exit 1; }
  start=$SECONDS
  M16="resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16"
  M32="resnet50 mobilenet_v2 bert_base_s128"
  ( LOG_DIR=$OUT/a export_bench_models /tmp/tessera-bench $M16 $M32 ) &
  EXPORT=$!
  build_gpu tessera_vulkan tessera_cli || { echo BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "BUILT in $((SECONDS-start)) s"
  cp build-gpu/libtessera_vulkan.so /tmp/vk_new.so
  rm -rf /tmp/keep_vk && cp -r src/providers/vulkan /tmp/keep_vk
  cp -r out/old_splitk/src/. src/ && ninja -C build-gpu tessera_vulkan > $OUT/a/old_build.log 2>&1 && cp build-gpu/libtessera_vulkan.so /tmp/vk_old.so && echo OLD_BUILT
  rm -rf src/providers/vulkan && cp -r /tmp/keep_vk src/providers/vulkan
  ninja -C build-gpu tessera_vulkan >> $OUT/a/old_build.log 2>&1 && cmp -s build-gpu/libtessera_vulkan.so /tmp/vk_new.so && echo NEW_RESTORED
  echo "PLUGINS at $((SECONDS-start)) s"
  wait $EXPORT
  T=build-gpu/tessera
  for round in 1 2; do
    for m in $M16 $M32; do
      for v in new old; do
        echo "== $m $v round $round"
        timeout 60 $T bench /tmp/tessera-bench/$m.onnx --ep vulkan --plugin vulkan=/tmp/vk_$v.so --modes io,graph --runs 100 --warmup 10 --time-budget 2 2>&1 | grep -E "^io|rror" | head -3
      done
    done
    echo "ROUND_DONE $round at $((SECONDS-start)) s"
  done
  for m in resnet50_fp16 mobilenet_v2_fp16 bert_base_s128_fp16 resnet50; do
    mkdir -p /tmp/o/$m/cpu /tmp/o/$m/new /tmp/o/$m/old
    timeout 60 $T run /tmp/tessera-bench/$m.onnx --output-dir /tmp/o/$m/cpu > /dev/null 2>&1
    for v in new old; do timeout 60 $T run /tmp/tessera-bench/$m.onnx --ep vulkan --plugin vulkan=/tmp/vk_$v.so --output-dir /tmp/o/$m/$v > /dev/null 2>&1; done
    python3 - $m <<'PY'
import sys, glob, os, numpy as np
m = sys.argv[1]
for f in sorted(glob.glob(f"/tmp/o/{m}/cpu/*.npy")):
    n = os.path.basename(f); ref = np.load(f).astype(np.float64)
    for v in ("new", "old"):
        g = f"/tmp/o/{m}/{v}/{n}"
        if not os.path.exists(g): print(m, n, v, "MISSING"); continue
        x = np.load(g).astype(np.float64)
        print(m, n, v, "max abs", float(np.max(np.abs(x - ref))), "rel to max|ref|", float(np.max(np.abs(x - ref)) / np.max(np.abs(ref))))
    a, b = np.load(f"/tmp/o/{m}/new/{n}"), np.load(f"/tmp/o/{m}/old/{n}")
    print(m, n, "new == old bitwise:", bool(np.array_equal(a, b)))
PY
  done
  echo "BENCH_DONE at $((SECONDS-start)) s"
  build_gpu tessera_tests || { echo TEST_BUILD_FAILED; tail -30 $OUT/build.log; }
  echo "TESTS_BUILT at $((SECONDS-start)) s"
  timeout 240 build-gpu/tessera_tests --gtest_filter='Vulkan*' > $OUT/a/tests.txt 2>&1; tail -6 $OUT/a/tests.txt
  grep -E "FAILED|Failure" $OUT/a/tests.txt | head -20
  echo "ALL at $((SECONDS-start)) s"
} > $OUT/chain.log 2>&1
touch $OUT/DONE
