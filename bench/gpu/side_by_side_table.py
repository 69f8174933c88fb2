"""Turns bench/gpu/side_by_side.sh's raw outputs into one Markdown table: per model and mode, ONNX Runtime's and
Tessera's value (the mean of the two alternating rounds) and their ratio. Session creation is two rows for
Tessera: round 1 starts with an empty tuning cache (CUDA EP option tuning_cache_file), round 2 finds what round
1 wrote, as a process finds it after an earlier one on the same machine; ONNX Runtime keeps nothing between
processes, so both rows compare against the mean of its two rounds. Tessera's default runs use automatic CUDA graphs
(automatic_cuda_graphs = 1); the "eager" rows come from round 2's run with automatic_cuda_graphs = 0 (every step
queued by the host, as before automatic graphs), and "host tensors / own IO + graph" is issue 14's target ratio.

    python3 bench/gpu/side_by_side_table.py DIR MODEL...

Latencies are medians in ms (ratio = Tessera / ORT: below 1 is faster); throughput rows are runs per second of
4 threads over 1 thread on one session (ratio = Tessera's scaling / ORT's scaling is not printed: each runtime's
own scaling is)."""
import pathlib
import re
import sys


def ort_values(text):
    v = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("session_create_ms", "first_run_ms", "threads1_runs_per_s",
                                            "threads4_runs_per_s"):
            v[parts[0]] = float(parts[1])
        elif len(parts) == 4 and parts[0] in ("host_io", "bound", "bound_cuda_graph"):
            v[parts[0]] = float(parts[1])
    return v


def tessera_values(text):
    v = {}
    m = re.search(r"session creation: ([\d.]+) ms", text)
    if m:
        v["session_create_ms"] = float(m.group(1))
    m = re.search(r"first run \(host tensors\): ([\d.]+) ms", text)
    if m:
        v["first_run_ms"] = float(m.group(1))
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != 7:
            continue
        mode, median, rate = cells[0], cells[2], cells[6]
        try:
            median, rate = float(median), float(rate)
        except ValueError:
            continue
        if mode == "host tensors":
            v["host_io"], v["threads1_runs_per_s"] = median, rate
        elif mode == "host tensors, 4 threads":
            v["threads4_runs_per_s"] = rate
        elif mode == "io binding":
            v["bound"] = median
        elif mode == "io binding + cuda graph":
            v["bound_cuda_graph"] = median
    return v


def mean(values):
    values = [x for x in values if x is not None]
    return sum(values) / len(values) if values else None


def fmt(x, digits=3):
    return "n/a" if x is None else f"{x:.{digits}f}"


def main():
    folder, models = pathlib.Path(sys.argv[1]), sys.argv[2:]
    # (label, key, digits, Tessera's run, Tessera's rounds)
    rows = [("host tensors (ms)", "host_io", 3, "tessera", (0, 1)),
            ("IO-bound, no graph (ms)", "bound", 3, "tessera", (0, 1)),
            ("IO-bound + CUDA graph (ms)", "bound_cuda_graph", 3, "tessera", (0, 1)),
            ("host tensors, eager: automatic graphs off (ms)", "host_io", 3, "tessera_eager", (1,)),
            ("IO-bound, eager: automatic graphs off (ms)", "bound", 3, "tessera_eager", (1,)),
            ("session creation, empty tuning cache (ms)", "session_create_ms", 1, "tessera", (0,)),
            ("session creation, tuning cache of an earlier process (ms)", "session_create_ms", 1, "tessera", (1,)),
            ("first run (ms)", "first_run_ms", 1, "tessera", (0, 1))]
    print("| model | mode | ONNX Runtime 1.29 | Tessera | Tessera / ORT |")
    print("|---|---|---:|---:|---:|")
    for model in models:
        runs = {"ort": [], "tessera": [], "tessera_eager": []}
        for who, parse in (("ort", ort_values), ("tessera", tessera_values), ("tessera_eager", tessera_values)):
            for r in (1, 2):
                f = folder / f"{model}_{who}_{r}.txt"
                runs[who].append(parse(f.read_text()) if f.exists() else {})
        for label, key, digits, who, rounds in rows:
            o = mean([r.get(key) for r in runs["ort"]])
            t = mean([runs[who][i].get(key) for i in rounds])
            ratio = fmt(t / o, 2) if o and t else "n/a"
            print(f"| {model} | {label} | {fmt(o, digits)} | {fmt(t, digits)} | {ratio} |")
        own_host = mean([r.get("host_io") for r in runs["tessera"]])
        own_graph = mean([r.get("bound_cuda_graph") for r in runs["tessera"]])
        print(f"| {model} | Tessera host tensors / own IO + graph (target <= 1.3) | | "
              f"{fmt(own_host / own_graph, 2) if own_host and own_graph else 'n/a'} | |")
        for who, label in (("tessera", "4 threads, runs/s (x one thread)"),
                           ("tessera_eager", "4 threads, eager, runs/s (x one thread)")):
            scale = {}
            for w in ("ort", who):
                one = mean([r.get("threads1_runs_per_s") for r in runs[w]])
                four = mean([r.get("threads4_runs_per_s") for r in runs[w]])
                scale[w] = (one, four, four / one if one and four else None)
            print(f"| {model} | {label} | {fmt(scale['ort'][1], 0)} ({fmt(scale['ort'][2], 2)}x) | "
                  f"{fmt(scale[who][1], 0)} ({fmt(scale[who][2], 2)}x) | "
                  f"{fmt(scale[who][1] / scale['ort'][1], 2) if scale['ort'][1] and scale[who][1] else 'n/a'} |")


if __name__ == "__main__":
    main()
