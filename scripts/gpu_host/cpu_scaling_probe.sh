#!/usr/bin/env bash
# Why does BERT-base (sequence 128, batch 1) scale worse than ONNX Runtime on the host's CPU cores? One pass, under
# 4 minutes, on an already built tree and already exported models (run_python_and_cpu_bench.sh makes both):
#   - Tessera's median under OpenMP variants (default, OMP_WAIT_POLICY=ACTIVE / PASSIVE, OMP_PROC_BIND=close with
#     OMP_PLACES=cores, half the threads), two rounds alternating so drift shows;
#   - ONNX Runtime against Tessera side by side in one process (bench/compare_ort.py) in the same window;
#   - Tessera's profile by op type (top 10) and oneDNN's own primitive time per run (ONEDNN_VERBOSE) against the
#     host time of the steps that run those primitives: the difference is time lost outside the primitives;
#   - how many threads the process creates per run (strace, when installed): should be about 0.
#
#   bash scripts/gpu_host/cpu_scaling_probe.sh            (logs to $OUT, else out/cpu_probe)
#
# Environment: BUILD_DIR (build-py: needs tessera CLI, and python/ for compare_ort.py), MODELS_DIR
# (/tmp/tessera-cpu-bench: <name>/model.onnx), MODEL (bert_base), THREADS (16), PYTHON (python3).
# Needs no GPU. Prints the summary last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1

BUILD_DIR=${BUILD_DIR:-build-py}
MODELS_DIR=${MODELS_DIR:-/tmp/tessera-cpu-bench}
MODEL_NAME=${MODEL:-bert_base}
THREADS=${THREADS:-16}
PYTHON=${PYTHON:-python3}
LOG_DIR=${OUT:-$PWD/out/cpu_probe}
MODEL=$MODELS_DIR/$MODEL_NAME/model.onnx
TESSERA=$BUILD_DIR/tessera
DIMS=(--dim batch=1 --dim sequence=128)
# prefer_cpu: the CUDA plugin beside the CLI must not take the model.
SESSION_ARGS=(--policy prefer_cpu "${DIMS[@]}")
mkdir -p "$LOG_DIR"
SUMMARY=()
note() { SUMMARY+=("$*"); }
load() { cut -d' ' -f1-3 /proc/loadavg; }

[[ -x $TESSERA ]] || { echo "no $TESSERA (set BUILD_DIR)"; exit 1; }
[[ -f $MODEL ]] || { echo "no $MODEL (set MODELS_DIR)"; exit 1; }
note "host: nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(load)"
note "model $MODEL, threads $THREADS, build $BUILD_DIR"

# One `tessera bench` (Run(feeds) with host tensors) under `env` settings; prints "median p10 p90" in ms.
bench_once() {
  local log=$1 threads=$2
  shift 2
  timeout 60 env "$@" "$TESSERA" bench "$MODEL" "${SESSION_ARGS[@]}" --threads "$threads" --runs 40 --warmup 5 \
    --time-budget 8 >"$LOG_DIR/$log" 2>&1 || { echo "failed(rc=$?)"; return; }
  awk '/^host tensors/ {print $4, $5, $6}' "$LOG_DIR/$log"
}

# Variants: label|threads|environment.
VARIANTS=(
  "default|$THREADS|"
  "OMP_WAIT_POLICY=ACTIVE|$THREADS|OMP_WAIT_POLICY=ACTIVE"
  "OMP_WAIT_POLICY=PASSIVE|$THREADS|OMP_WAIT_POLICY=PASSIVE"
  "PROC_BIND=close PLACES=cores|$THREADS|OMP_PROC_BIND=close OMP_PLACES=cores"
  "threads $((THREADS / 2))|$((THREADS / 2))|"
)
declare -A RESULT
start=$SECONDS
for round in 1 2; do
  for v in "${VARIANTS[@]}"; do
    IFS='|' read -r label threads envs <<<"$v"
    # shellcheck disable=SC2086  # envs is a list of NAME=VALUE words
    RESULT[$label,$round]=$(bench_once "bench_${round}_${label//[^A-Za-z0-9]/_}.log" "$threads" $envs)
  done
done
note "$(grep -m1 '^Providers:' "$LOG_DIR/bench_1_default.log" 2>/dev/null || echo 'Providers: unknown')"
note ""
note "Tessera \`tessera bench\`, Run(feeds), ms: median (p10/p90) per round, rounds alternate variants ($((SECONDS - start)) s, load now $(load))"
for v in "${VARIANTS[@]}"; do
  IFS='|' read -r label _ _ <<<"$v"
  row=$(printf '  %-30s' "$label")
  for round in 1 2; do
    read -r med p10 p90 <<<"${RESULT[$label,$round]}"
    row+=$(printf '  %9s (%s/%s)' "$med" "${p10:--}" "${p90:--}")
  done
  note "$row"
done

# ONNX Runtime and Tessera (Python binding) side by side, same inputs, alternating rounds.
note ""
if PYTHONPATH="$BUILD_DIR/python" timeout 20 "$PYTHON" -c "import onnxruntime, numpy, tessera" 2>"$LOG_DIR/ort_import.log"; then
  start=$SECONDS
  PYTHONPATH="$BUILD_DIR/python" timeout 90 "$PYTHON" bench/compare_ort.py "$MODEL" --threads "$THREADS" \
    "${DIMS[@]}" --rounds 6 --runs 10 >"$LOG_DIR/compare_ort.log" 2>&1
  rc=$?
  note "bench/compare_ort.py --threads $THREADS --rounds 6 --runs 10 (rc=$rc, $((SECONDS - start)) s):"
  while IFS= read -r line; do note "  $line"; done < <(grep -E "^(model|runtime|tessera|onnxruntime|ratio)" \
    "$LOG_DIR/compare_ort.log")
else
  note "ONNX Runtime: skipped, cannot import onnxruntime, numpy and tessera (PYTHONPATH=$BUILD_DIR/python):"
  note "  $(tail -1 "$LOG_DIR/ort_import.log")"
fi

# Profile at THREADS with oneDNN's verbose timing of every primitive execution in the same process. The first run
# (primitive creation, weight packing) is left out of both.
note ""
rm -f "$LOG_DIR"/profile_*.json
timeout 60 env ONEDNN_VERBOSE=1 "$TESSERA" bench "$MODEL" "${SESSION_ARGS[@]}" --threads "$THREADS" --runs 20 \
  --warmup 3 --time-budget 6 --profile "$LOG_DIR/profile" >"$LOG_DIR/profile_verbose.log" 2>&1
rc=$?
PROFILE=$(ls -t "$LOG_DIR"/profile_*.json 2>/dev/null | head -1)
note "profile at $THREADS threads with ONEDNN_VERBOSE=1 (rc=$rc; printing slows each primitive step a little):"
if [[ -n $PROFILE ]]; then
  while IFS= read -r line; do note "  $line"; done < <(timeout 60 "$PYTHON" - "$PROFILE" "$LOG_DIR/profile_verbose.log" <<'PY'
import collections, json, sys

with open(sys.argv[1]) as f:
    events = json.load(f)["traceEvents"]
runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "model_run")
if len(runs) < 2:
    sys.exit(print("fewer than 2 runs in the profile"))
later = runs[1:]
host = collections.Counter()
count = collections.Counter()
for e in events:
    if e.get("cat") == "Node" and e["ts"] >= later[0][0]:
        host[e["args"]["op_type"]] += e["dur"] / 1e3
        count[e["args"]["op_type"]] += 1
n = len(later)
run_ms = sorted(b - a for a, b in later)
total = sum(host.values())
print(f"{n} runs after the first: run median {run_ms[n // 2] / 1e3:.2f} ms, steps' host time {total / n:.2f} ms/run")
print(f"{'op type':24} {'steps/run':>9} {'host ms/run':>11} {'%':>5}")
for op, ms in host.most_common(10):
    print(f"{op:24} {count[op] / n:9.0f} {ms / n:11.3f} {100 * ms / total:5.1f}")

# oneDNN verbose lines, in execution order: kind in field 4, milliseconds last. Runs are counted by the most
# frequent kind other than reorder (weight packing adds reorders to the first run only).
execs = []
with open(sys.argv[2]) as f:
    for line in f:
        p = line.strip().split(",")
        if len(p) > 4 and p[0] == "onednn_verbose" and p[1] == "exec":
            execs.append((p[3], float(p[-1])))
kinds = collections.Counter(k for k, _ in execs if k != "reorder")
if not kinds:
    sys.exit(print("no oneDNN executions in the verbose log"))
marker, marker_count = kinds.most_common(1)[0]
per_run = marker_count // len(runs)
seen, start = 0, len(execs)
for i, (k, _) in enumerate(execs):
    seen += k == marker
    if seen == per_run:
        start = i + 1
        break
dnnl = collections.Counter()
for k, ms in execs[start:]:
    dnnl[k] += ms
dnnl_total = sum(dnnl.values())
dnnl_ops = ("MatMul", "FusedMatMul", "Gemm", "Conv", "FusedConv", "NchwcConv", "ConvTranspose", "ReorderToBlocked",
            "ReorderFromBlocked")
steps = sum(host[op] for op in dnnl_ops)
print(f"oneDNN inside its primitives {dnnl_total / n:.2f} ms/run (" +
      ", ".join(f"{k} {ms / n:.2f}" for k, ms in dnnl.most_common()) + ")")
print(f"steps that run them ({'/'.join(op for op in dnnl_ops if host[op])}) {steps / n:.2f} ms/run: "
      f"{(steps - dnnl_total) / n:.2f} ms/run outside the primitives")
PY
  )
else
  note "  no profile written, see $LOG_DIR/profile_verbose.log"
fi

# Threads created: libgomp ends and re-creates pool threads when parallel regions change size.
note ""
if command -v strace >/dev/null; then
  timeout 60 strace -f -qq -c -e trace=clone,clone3 -o "$LOG_DIR/strace_clone.txt" "$TESSERA" bench "$MODEL" \
    "${SESSION_ARGS[@]}" --threads "$THREADS" --runs 10 --warmup 2 --time-budget 10 >"$LOG_DIR/strace_bench.log" 2>&1
  rc=$?
  clones=$(awk '$NF == "clone" || $NF == "clone3" {n += $4} END {print n + 0}' "$LOG_DIR/strace_clone.txt" 2>/dev/null)
  note "threads created by one bench process of ~24 runs (--runs 10 --warmup 2), $((THREADS - 1)) of them OpenMP's" \
    "first team: $clones (rc=$rc; before 2026-11-22 thread pool fix: hundreds per run)"
else
  note "threads created: strace not installed"
fi
note "load at end $(load)"

echo "==== cpu scaling probe summary (logs in $LOG_DIR)"
printf '%s\n' "${SUMMARY[@]}" | tee "$LOG_DIR/summary.txt"
