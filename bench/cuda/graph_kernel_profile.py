"""Device time of a Tessera CUDA session, kernel by kernel, as the GPU ran it.

`tessera bench --profile` times nodes from the host; inside a CUDA graph (automatic graphs, the default for
capturable models) there is no node boundary the host sees. This script records what the device itself ran
with CUPTI, through PyTorch's profiler (the GPU host has PyTorch; any CUDA activity of the process is
recorded, so Tessera's kernels, cuBLAS's and cuDNN's inside its graphs are all there), and prints per run:

  - the span from the first to the last device activity, the busy time (sum of kernel and copy durations) and
    the idle time between them (launch bubbles: the device waiting between two activities);
  - one row per kernel name: launches per run, mean duration, total per run, and the mean idle time before it
    (the gap a kernel pays after the one before it ends; a programmatic dependent launch can make it negative).

    python3 bench/cuda/graph_kernel_profile.py MODEL.onnx [--runs 50] [--warmup 20] [--no-graph]
        [--shape name=1x128 ...] [--top 30] [--sequence 40] [--trace out.json]

Inputs are random (float) or zeros (integers), host tensors through `InferenceSession.run`, so a capturable
model replays its automatic graph (`--no-graph` sets automatic_cuda_graphs=0: the eager path).
"""
import argparse
import collections
import json
import os
import statistics
import sys
import tempfile

import numpy as np

NUMPY_TYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(uint8)": np.uint8,
}


def make_feeds(session, shapes):
    rng = np.random.default_rng(0)
    feeds = {}
    for arg in session.get_inputs():
        dims = shapes.get(arg.name) or [d if isinstance(d, int) and d > 0 else 1 for d in arg.shape]
        dtype = NUMPY_TYPES[arg.type]
        if np.issubdtype(dtype, np.floating):
            feeds[arg.name] = rng.standard_normal(dims).astype(dtype)
        else:
            feeds[arg.name] = np.zeros(dims, dtype=dtype)
    return feeds


def device_events(trace_path):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kinds = {"kernel", "gpu_memcpy", "gpu_memset"}
    out = [e for e in events if e.get("cat") in kinds and e.get("ph") == "X"]
    out.sort(key=lambda e: e["ts"])
    return out


def split_runs(events, runs):
    """Splits the device timeline into `runs` groups at its `runs - 1` largest idle gaps (the host's work between
    two `run` calls: copies back, Python, the next call's setup)."""
    if runs <= 1 or len(events) < runs:
        return [events]
    gaps = sorted(range(1, len(events)),
                  key=lambda i: events[i]["ts"] - (events[i - 1]["ts"] + events[i - 1]["dur"]), reverse=True)
    cuts = sorted(gaps[:runs - 1])
    groups, start = [], 0
    for c in cuts:
        groups.append(events[start:c])
        start = c
    groups.append(events[start:])
    return groups


def short(name, width=70):
    name = name.replace("void ", "").replace("tessera::", "").replace("(anonymous namespace)::", "")
    return name if len(name) <= width else name[:width - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--shape", action="append", default=[], help="name=1x128")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--trace", help="keep PyTorch's Chrome trace here")
    ap.add_argument("--sequence", type=int, default=0, help="also list one run's first N activities in order")
    ap.add_argument("--provider-option", action="append", default=[], help="key=value for the CUDA EP")
    args = ap.parse_args()

    import tessera
    from torch.profiler import ProfilerActivity, profile

    options = dict(kv.split("=", 1) for kv in args.provider_option)
    if args.no_graph:
        options["automatic_cuda_graphs"] = "0"
    session = tessera.InferenceSession(args.model, providers=[("CUDAExecutionProvider", options)])
    shapes = {k: [int(d) for d in v.split("x")] for k, v in (s.split("=", 1) for s in args.shape)}
    feeds = make_feeds(session, shapes)
    for _ in range(args.warmup):
        session.run(None, feeds)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.runs):
            session.run(None, feeds)
    trace = args.trace or tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(trace)
    events = device_events(trace)
    if not args.trace:
        os.unlink(trace)
    if not events:
        sys.exit("no device activity recorded (is CUPTI available to PyTorch here?)")
    groups = split_runs(events, args.runs)
    # The first and last groups may be cut by the profiler's start and stop; use the middle ones.
    middle = groups[1:-1] if len(groups) > 4 else groups
    spans, busys = [], []
    per_name = collections.defaultdict(lambda: {"count": 0, "dur": 0.0, "gap": 0.0})
    for g in middle:
        spans.append(g[-1]["ts"] + g[-1]["dur"] - g[0]["ts"])
        busys.append(sum(e["dur"] for e in g))
        for i, e in enumerate(g):
            row = per_name[e["name"]]
            row["count"] += 1
            row["dur"] += e["dur"]
            if i:
                row["gap"] += e["ts"] - (g[i - 1]["ts"] + g[i - 1]["dur"])
    n = len(middle)
    span, busy = statistics.median(spans), statistics.median(busys)
    print(f"model {os.path.basename(args.model)}  graph={'off' if args.no_graph else session.get_graph_status()}")
    print(f"runs analysed {n}; device activities per run {len(middle[0])}; span {span:.1f} us, busy {busy:.1f} us, "
          f"idle between activities {span - busy:.1f} us")
    rows = sorted(per_name.items(), key=lambda kv: -kv[1]["dur"])
    print(f"{'per run us':>10} {'n/run':>6} {'mean us':>8} {'gap us':>7}  kernel")
    for name, r in rows[:args.top]:
        print(f"{r['dur'] / n:10.1f} {r['count'] / n:6.1f} {r['dur'] / r['count']:8.2f} {r['gap'] / r['count']:7.2f}  "
              f"{short(name)}")
    if args.sequence:
        g = middle[len(middle) // 2]
        print(f"one run, in order ({'start us':>8} {'dur us':>7} {'gap us':>7}):")
        for i, e in enumerate(g[:args.sequence]):
            gap = e["ts"] - (g[i - 1]["ts"] + g[i - 1]["dur"]) if i else 0.0
            print(f"  {e['ts'] - g[0]['ts']:8.1f} {e['dur']:7.2f} {gap:7.2f}  {short(e['name'])}")


if __name__ == "__main__":
    main()
