"""Tessera vs ONNX Runtime on the CPU, side by side in one Python process (for hosts where ONNX Runtime
is a Python package, e.g. the GPU host: onnxruntime 1.30 CPU). Same model, same inputs, same thread
count, alternating rounds; prints the median of each, p10/p90 and the ratio Tessera/ONNX Runtime.

  PYTHONPATH=build/python python3 bench/compare_ort.py MODEL --threads 16 [--dim batch=1] [--rounds 10]
"""
import argparse
import os
import statistics
import time

import numpy as np
import onnxruntime
import tessera


def make_inputs(session, dims, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in session.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in arg.shape]
        if arg.type == "tensor(float)":
            feeds[arg.name] = rng.uniform(-1, 1, shape).astype(np.float32)
        elif arg.type == "tensor(int64)":
            # attention masks all ones, ids in a small range
            feeds[arg.name] = (np.ones(shape, np.int64) if "mask" in arg.name
                               else rng.integers(0, 100, shape).astype(np.int64))
        else:
            raise SystemExit(f"unsupported input type {arg.type} for {arg.name}")
    return feeds


def timed(run, k):
    out = []
    for _ in range(k):
        t = time.perf_counter()
        run()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--dim", action="append", default=[], help="symbolic dim NAME=VALUE (default 1)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--runs", type=int, default=10, help="runs per side per round")
    args = p.parse_args()
    dims = {k: int(v) for k, v in (d.split("=") for d in args.dim)}

    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort = onnxruntime.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    to = tessera.SessionOptions()
    to.intra_op_num_threads = args.threads
    tes = tessera.InferenceSession(args.model, to, providers=["CPUExecutionProvider"])

    feeds = make_inputs(ort, dims, seed=0)
    a, b = ort.run(None, feeds), tes.run(None, feeds)
    diff = max(float(np.max(np.abs(x.astype(np.float64) - y))) for x, y in zip(a, b))
    for _ in range(3):  # warm-up
        ort.run(None, feeds)
        tes.run(None, feeds)
    t_ort, t_tes = [], []
    for r in range(args.rounds):
        first, second = ((t_tes, tes), (t_ort, ort)) if r % 2 == 0 else ((t_ort, ort), (t_tes, tes))
        for sink, s in (first, second):
            sink += timed(lambda: s.run(None, feeds), args.runs)

    def q(v, f):
        return statistics.quantiles(v, n=10)[0] if f == 0.1 else statistics.quantiles(v, n=10)[-1]
    mt, mo = statistics.median(t_tes), statistics.median(t_ort)
    print(f"model {os.path.basename(args.model)} dims {dims or '{}'} threads {args.threads} "
          f"load {os.getloadavg()[0]:.1f} max_abs_diff {diff:.2e}")
    print(f"{'runtime':12} {'median ms':>10} {'p10':>9} {'p90':>9} {'runs':>5}")
    print(f"{'tessera':12} {mt:10.3f} {q(t_tes, 0.1):9.3f} {q(t_tes, 0.9):9.3f} {len(t_tes):5}")
    print(f"{'onnxruntime':12} {mo:10.3f} {q(t_ort, 0.1):9.3f} {q(t_ort, 0.9):9.3f} {len(t_ort):5}")
    print(f"ratio tessera/onnxruntime {mt / mo:.3f}")


if __name__ == "__main__":
    main()
