#!/usr/bin/env python3
"""Summarizes a host_sampler.cc sample file: where the process's CPU time went.

    python3 scripts/gpu_host/host_sampler_report.py SAMPLES [--top N] [--focus SUBSTRING]

Prints, as shares of all samples: time per module (the innermost frame's library), the functions with the most
self time, the functions with the most inclusive time (on the stack at all), and for every library without
symbols (libcuda, ...) the first symbolized caller outside it, and the hottest call paths (innermost --depth frames). --focus keeps only samples whose stack holds a
function whose name contains SUBSTRING (e.g. a kernel's Compute) and reports shares of those.
Symbols come from addr2line (binutils); modules without symbols show as their file name.
"""
import argparse
import collections
import os
import subprocess
import sys


def symbolize(frames_by_module):
    names = {}
    for module, offsets in frames_by_module.items():
        base = os.path.basename(module)
        offsets = sorted(offsets)
        resolved = []
        if os.path.exists(module):
            try:
                proc = subprocess.run(["addr2line", "-f", "-C", "-e", module],
                                      input="\n".join(hex(o) for o in offsets), capture_output=True, text=True,
                                      timeout=600)
                lines = proc.stdout.splitlines()
                resolved = [lines[2 * i] for i in range(len(lines) // 2)]
            except (OSError, subprocess.SubprocessError):
                resolved = []
        for i, o in enumerate(offsets):
            fn = resolved[i] if i < len(resolved) else "??"
            names[(module, o)] = f"[{base}]" if fn in ("??", "") else shorten(fn)
    return names


def shorten(name):
    # Drops argument lists and template arguments so one function is one row.
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            depth += 1
            if depth == 1:
                out.append("<>" if ch == "<" else "()")
            continue
        if ch in ">)":
            depth = max(depth - 1, 0)
            continue
        if depth == 0:
            out.append(ch)
    return "".join(out).replace("()", "").replace("<>", "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("samples")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--focus", default="")
    parser.add_argument("--depth", type=int, default=4, help="frames per call path in the last table")
    args = parser.parse_args()
    stacks = []
    with open(args.samples) as f:
        header = f.readline().strip()
        for line in f:
            frames = []
            for token in line.split():
                module, _, offset = token.rpartition("+")
                frames.append((module, int(offset, 16)))
            if frames:
                stacks.append(frames)
    by_module = collections.defaultdict(set)
    for s in stacks:
        for fr in s:
            by_module[fr[0]].add(fr[1])
    names = symbolize(by_module)
    named = [[(names[fr], os.path.basename(fr[0])) for fr in s] for s in stacks]
    if args.focus:
        named = [s for s in named if any(args.focus in n for n, _ in s)]
    total = len(named)
    print(header, f"; reported {total}" + (f" with '{args.focus}' on the stack" if args.focus else ""))
    if total == 0:
        return
    module_self = collections.Counter(s[0][1] for s in named)
    self_time = collections.Counter(s[0][0] for s in named)
    inclusive = collections.Counter()
    unsymbolized_callers = collections.Counter()
    paths = collections.Counter()
    for s in named:
        paths[" <- ".join(n for n, _ in s[:args.depth])] += 1
        inclusive.update(set(n for n, _ in s))
        if s[0][0].startswith("["):
            lib = s[0][0]
            caller = next((n for n, _ in s if not n.startswith("[")), "?")
            unsymbolized_callers[f"{lib} <- {caller}"] += 1

    def table(title, counter, n):
        print(f"\n{title}")
        for name, count in counter.most_common(n):
            print(f"{100.0 * count / total:6.2f}%  {name}")

    table("self time by module", module_self, 15)
    table("self time by function", self_time, args.top)
    table("inclusive time by function", inclusive, args.top)
    table("unsymbolized libraries by first symbolized caller", unsymbolized_callers, args.top)
    table(f"innermost {args.depth} frames", paths, args.top)


if __name__ == "__main__":
    sys.exit(main())
