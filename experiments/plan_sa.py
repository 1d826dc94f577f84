"""Plan-based scheduling (PLAN 1/2/3) vs FCFS + EASY on Theta and KTH (the plan paper's
Table II, Figs. 4-6).

    .venv/bin/python experiments/plan_sa.py [--traces DIR] [--out FILE] [--bins B] [--jobs J]

For each trace: `easy`, then `plan-sa` with metric=wait (PLAN 1), wait2 (PLAN 2) and util
(PLAN 3) at the paper's SA parameters (1, 0.0001, 100, 0.9), seed 0, the full annealing
schedule at every pass (simulate has no wall clock). Prints Markdown tables (also written to
--out): mean wait, mean response, utilisation and mean bounded slowdown with their ratio to
easy, the search counters; then, as the paper's Fig. 6(c)(f)(i), the ratio of PLAN 2's mean
wait to easy's in B x B logarithmic bins of job size and runtime. Runs use --jobs processes.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.cluster import NodePool  # noqa: E402
from schedd.policies import make_policy  # noqa: E402
from schedd.sim import simulate  # noqa: E402
from schedd.traces import normalize, read_trace  # noqa: E402

TRACES = ("theta_2023.swf", "KTH-SP2-1996-2.swf")
RUNS = {"easy": ("easy", []), "PLAN 1 (wait)": ("plan-sa", ["metric=wait"]),
        "PLAN 2 (wait2)": ("plan-sa", ["metric=wait2"]),
        "PLAN 3 (util)": ("plan-sa", ["metric=util"])}


def run(path: str, label: str) -> tuple[str, str, dict, dict[str, np.ndarray], float]:
    policy, opts = RUNS[label]
    trace = normalize(read_trace(path))
    cluster = NodePool(trace.max_nodes)
    started = time.perf_counter()
    chosen = make_policy(policy, opts, cluster)
    result = simulate(trace, cluster, chosen)
    result.summary["policy_stats"] = chosen.stats()
    cols = {k: result.results[k] for k in ("id", "wait", "alloc_nodes", "executed")}
    return path, label, result.summary, cols, time.perf_counter() - started


def summary_table(name: str, runs: dict[str, tuple[dict, float]], jobs: int, nodes: int
                  ) -> list[str]:
    base = runs["easy"][0]
    head = ("run", "mean wait (s)", "vs easy", "mean response (s)", "vs easy", "utilisation",
            "bounded slowdown", "searches", "evaluations", "improved", "sim time (s)")
    out = ["", f"**{name}** ({jobs:,} jobs on {nodes} nodes)", "",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for label, (s, seconds) in runs.items():
        stats = s.get("policy_stats") or {}
        cells = [label, f"{s['mean_wait_s']:,.0f}", f"{s['mean_wait_s'] / base['mean_wait_s']:.1%}",
                 f"{s['mean_response_s']:,.0f}",
                 f"{s['mean_response_s'] / base['mean_response_s']:.1%}",
                 f"{s['utilization']:.4f}", f"{s['mean_bounded_slowdown']:.2f}",
                 f"{stats.get('searches', '-'):,}" if stats else "-",
                 f"{stats.get('evaluations', 0):,}" if stats else "-",
                 f"{stats.get('improved_passes', 0):,}" if stats else "-", f"{seconds:.0f}"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def log_edges(values: np.ndarray, bins: int) -> np.ndarray:
    lo, hi = max(float(values.min()), 1.0), float(values.max())
    edges = np.geomspace(lo, hi * (1 + 1e-9), bins + 1)
    edges[0] = 0.0  # zero-second runs go in the first bin
    return edges


def binned_ratio(easy: dict[str, np.ndarray], plan: dict[str, np.ndarray], bins: int
                 ) -> list[str]:
    """PLAN 2 mean wait / easy mean wait per (size, runtime) bin, as Fig. 6(c)(f)(i)."""
    by_id = {int(j): i for i, j in enumerate(plan["id"])}
    plan_wait = np.array([plan["wait"][by_id[int(j)]] for j in easy["id"]])
    size_edges = log_edges(easy["alloc_nodes"].astype(float), bins)
    time_edges = log_edges(easy["executed"], bins)
    si = np.clip(np.searchsorted(size_edges, easy["alloc_nodes"], side="right") - 1, 0, bins - 1)
    ti = np.clip(np.searchsorted(time_edges, easy["executed"], side="right") - 1, 0, bins - 1)
    head = ["size \\ runtime"] + [f"<= {_dur(time_edges[k + 1])}" for k in range(bins)]
    out = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for s in range(bins - 1, -1, -1):
        cells = [f"<= {size_edges[s + 1]:,.0f} nodes"]
        for t in range(bins):
            mask = (si == s) & (ti == t)
            count = int(mask.sum())
            if not count:
                cells.append("")
                continue
            e, p = float(easy["wait"][mask].mean()), float(plan_wait[mask].mean())
            ratio = "-" if e == 0 and p == 0 else ("inf" if e == 0 else f"{p / e:.2f}")
            cells.append(f"{ratio} ({count})")
        out.append("| " + " | ".join(cells) + " |")
    return out


def _dur(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    ap.add_argument("--out", default=None, help="also write the tables here")
    ap.add_argument("--bins", type=int, default=6, help="logarithmic bins per axis (Fig. 6)")
    ap.add_argument("--jobs", type=int, default=2, help="runs in parallel")
    args = ap.parse_args()
    started = time.perf_counter()
    paths = [str(Path(args.traces) / name) for name in TRACES]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run, path, label) for path in paths for label in RUNS]
        done = [f.result() for f in futures]
    lines: list[str] = []
    for path, name in zip(paths, TRACES, strict=True):
        mine = {label: (summary, seconds) for p, label, summary, _, seconds in done if p == path}
        cols = {label: c for p, label, _, c, _ in done if p == path}
        summary = mine["easy"][0]
        lines += summary_table(name, mine, summary["jobs"], summary["total_nodes"])
        lines += ["", f"PLAN 2 / easy mean wait by job size and runtime ({name}; "
                      "cell: ratio (jobs); below 1 PLAN 2 waits less):", ""]
        lines += binned_ratio(cols["easy"], cols["PLAN 2 (wait2)"], args.bins)
    lines += ["", f"({time.perf_counter() - started:.0f} s with {args.jobs} processes)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
