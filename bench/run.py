"""Simulator benchmark: whole-process `schedd simulate` throughput and peak memory.

    make bench                  # or: .venv/bin/python bench/run.py [--repeat 3] [--skip-million]

Runs `schedd simulate --policy easy` as a separate process (so start-up, reading, metrics
and writing all count) on lublin_256.swf and KTH-SP2-1996-2.swf from ../shared/traces, and
on a synthetic 1,000,000-job trace generated here (seeded). Reports jobs per second of the
whole process (best and median of --repeat runs) and its peak resident memory, measured
with wait4() on the child. Writes the table to bench/results/latest.md; copy it into
docs/benchmarks.md together with the machine line it prints.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
RESULTS = ROOT / "bench" / "results"


def synthetic_trace(path: Path, jobs: int, nodes: int = 1024, seed: int = 1) -> None:
    """A deterministic SWF of `jobs` jobs on `nodes` nodes at about 85% offered load:
    Poisson arrivals, log-uniform sizes, exponential runtimes, requests 1-3x the runtime."""
    rng = np.random.default_rng(seed)
    size = np.minimum(np.exp2(rng.uniform(0, np.log2(nodes) - 1, jobs)).astype(np.int64), nodes)
    runtime = np.maximum(rng.exponential(3600.0, jobs), 1.0).astype(np.int64)
    mean_area = float(np.mean(size * runtime))
    gap = mean_area / (0.85 * nodes)
    submit = np.cumsum(rng.exponential(gap, jobs)).astype(np.int64)
    requested = (runtime * rng.uniform(1.0, 3.0, jobs)).astype(np.int64) + 1
    with open(path, "w") as out:
        out.write(f"; Synthetic benchmark trace: {jobs} jobs, seed {seed}\n; MaxNodes: {nodes}\n")
        for lo in range(0, jobs, 100_000):
            hi = min(lo + 100_000, jobs)
            out.writelines(
                f"{i + 1} {s} -1 {r} {n} -1 -1 {n} {q} -1 1 1 1 -1 0 -1 -1 -1\n"
                for i, s, r, n, q in zip(range(lo, hi), submit[lo:hi].tolist(),
                                         runtime[lo:hi].tolist(), size[lo:hi].tolist(),
                                         requested[lo:hi].tolist(), strict=True)
            )


def calibration() -> float:
    """Seconds for a fixed pure-Python loop (best of 3): compare figures taken on
    different days of a shared machine by this ratio, not by the raw seconds."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        sum(i * i for i in range(3_000_000))
        best = min(best, time.perf_counter() - start)
    return best


def run_once(trace: Path, out: Path) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MiB, kept jobs) of one whole `schedd simulate` process."""
    cmd = [sys.executable, "-m", "schedd", "simulate", "--trace", str(trace), "--policy",
           "easy", "--out", str(out), "--no-progress"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark run failed: {' '.join(cmd)}\n{proc.stderr.read().decode()}")
    import json

    jobs = json.loads((out / "summary.json").read_text())["jobs"]
    return wall, usage.ru_maxrss // 1024, jobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-million", action="store_true")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    cases = [("lublin_256.swf", TRACES / "lublin_256.swf", args.repeat),
             ("KTH-SP2-1996-2.swf", TRACES / "KTH-SP2-1996-2.swf", args.repeat)]
    if not args.skip_million:
        million = RESULTS / "synthetic-1M.swf"
        if not million.exists():
            print("generating the synthetic 1,000,000-job trace ...", flush=True)
            synthetic_trace(million, 1_000_000)
        cases.append(("synthetic 1,000,000 jobs", million, 1))
    machine = (f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, "
               f"{platform.platform()}")
    lines = [f"Machine: {machine}", f"Calibration loop: {calibration():.3f} s", "",
             "| trace | jobs | runs | best s | median s | jobs/s (best) | jobs/s (median) "
             "| peak RSS MiB |", "|---|---|---|---|---|---|---|---|"]
    for name, path, repeat in cases:
        if not path.exists():
            print(f"skipping {name}: {path} not found")
            continue
        runs = [run_once(path, RESULTS / "out") for _ in range(repeat)]
        walls = [w for w, _, _ in runs]
        jobs = runs[0][2]
        best, median = min(walls), statistics.median(walls)
        rss = max(r for _, r, _ in runs)
        lines.append(f"| {name} | {jobs:,} | {repeat} | {best:.2f} | {median:.2f} | "
                     f"{jobs / best:,.0f} | {jobs / median:,.0f} | {rss} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    (RESULTS / "latest.md").write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
