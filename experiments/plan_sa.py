"""Plan-based scheduling (PLAN 1/2/3) vs FCFS + EASY, measured as the plan paper measured it
(Table II, Figs. 4-6): whole traces, and the trade-off against load.

    .venv/bin/python experiments/plan_sa.py [PART ...] [--traces DIR] [--names N ...]
        [--max-jobs J] [--loads L ...] [--load-jobs J] [--load-seeds S] [--bins B]
        [--workers W] [--scheduler ADDR] [--cache DIR] [--tabulate-only]
        [--out FILE] [--png FILE]

PART is `traces` and/or `load` (default both):

* traces: each trace of --names (default lublin_256, KTH-SP2-1996-2, theta_2023), WHOLE
  (`--max-jobs J` runs the first J jobs instead and every table says so), on a node pool of
  its MaxNodes: `easy`, then `plan-sa` with metric=wait (PLAN 1), wait2 (PLAN 2) and util
  (PLAN 3) at the paper's SA parameters (1, 0.0001, 100, 0.9), seed 0, the full annealing
  schedule at every pass (simulate has no wall clock). Mean wait, response and bounded
  slowdown (tau = 10 s) with their ratio to easy; utilisation over the makespan (first
  submit to last end) and over the submission window (`utilization_window`: busy
  node-seconds inside [first submit, last submit] over the nodes x that span, which
  leaves out the drain after the last arrival; docs/metrics.md); the target (PLAN 2 wait <=
  0.6x easy with windowed utilisation >= easy's); and, as Fig. 6(c)(f)(i), PLAN 2 / easy
  mean wait in B x B logarithmic bins of job size and runtime.
* load: Lublin-Feitelson workloads (`schedd workload lublin --load L --pe 0 --pr 0`: the
  LOS paper's model, 320 processors in units of 32, exact estimates, no elastic commands)
  of --load-jobs jobs at each --loads value, seeds 1..--load-seeds: easy vs PLAN 2, mean
  wait and windowed utilisation per load (seed means), as a table and (--png) a figure.

Runs go through `schedd.sweep.tasks` (docs/sweep.md): a local Dask cluster of --workers
processes (0: in this process) or an existing one (--scheduler), submitted longest first;
each finished run is logged as it ends. With --cache DIR every run is kept as it finishes,
so a long sweep can be stopped and resumed, and --tabulate-only prints the tables of the
runs already there.
"""

from __future__ import annotations

import argparse
import heapq
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.cluster import NodePool  # noqa: E402
from schedd.policies import make_policy  # noqa: E402
from schedd.sim import simulate  # noqa: E402
from schedd.sweep.tasks import TaskRunner, add_task_arguments  # noqa: E402
from schedd.traces import normalize, read_trace  # noqa: E402
from schedd.traces.lublin import LublinParams, generate  # noqa: E402
from schedd.traces.normalize import select  # noqa: E402

TRACES = ("lublin_256.swf", "KTH-SP2-1996-2.swf", "theta_2023.swf")
RUNS = {"easy": ("easy", []), "PLAN 1 (wait)": ("plan-sa", ["metric=wait"]),
        "PLAN 2 (wait2)": ("plan-sa", ["metric=wait2"]),
        "PLAN 3 (util)": ("plan-sa", ["metric=util"]),
        # not run unless --also names it: the queue policy closest to a plan's decoding
        "conservative": ("conservative", [])}
LOAD_RUNS = ("easy", "PLAN 2 (wait2)")
LOADS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
WAIT_TARGET = 0.6  # PLAN 2 mean wait <= 0.6 x easy's (issue 18)
KEYS = ("jobs", "total_nodes", "mean_wait_s", "mean_response_s", "mean_bounded_slowdown",
        "utilization", "utilization_window", "makespan_s")


def run_trace(path: str, label: str, max_jobs: int | None, scale: float = 1.0
              ) -> tuple[str, str, dict[str, Any], dict[str, np.ndarray], float]:
    policy, opts = RUNS[label]
    trace = normalize(read_trace(path))
    if max_jobs is not None:
        trace = select(trace, limit=max_jobs)
    if scale != 1.0:  # every inter-arrival x scale: the offered load / scale
        submit = trace.columns["submit"]
        t0 = float(submit.min())
        trace = replace(trace, columns=dict(trace.columns, submit=t0 + (submit - t0) * scale))
    cluster = NodePool(trace.max_nodes)
    started = time.perf_counter()
    chosen = make_policy(policy, opts, cluster)
    result = simulate(trace, cluster, chosen)
    summary = {k: result.summary[k] for k in KEYS}
    summary["max_jobs"] = max_jobs
    summary["arrival_scale"] = scale
    summary["idle_fit"] = idle_while_a_job_fit(result.results, trace.max_nodes)
    cols_t = trace.columns
    span = float(cols_t["submit"].max() - cols_t["submit"].min())
    summary["offered_load"] = (float((cols_t["nodes"] * np.minimum(
        cols_t["runtime"], cols_t["walltime"])).sum()) / (trace.max_nodes * span)
        if span > 0 else None)
    summary["policy_stats"] = chosen.stats() if hasattr(chosen, "stats") else {}
    cols = {k: result.results[k] for k in ("id", "wait", "alloc_nodes", "executed")}
    return path, label, summary, cols, time.perf_counter() - started


def idle_while_a_job_fit(res: dict[str, np.ndarray], total: int) -> float | None:
    """Share of the submission window's capacity that stood idle while a waiting job would
    have fitted in the idle nodes: node-seconds free x duration, counted only while the
    smallest waiting job needs no more than the free nodes (a policy that never holds back
    a job that fits, as a greedy backfill tends to, keeps this near zero; a plan may not).
    For runs without preemptions (each job waits once, then holds its nodes to its end)."""
    sub, start, end = res["submit"], res["first_start"], res["end"]
    nodes = res["alloc_nodes"]
    lo, hi = float(sub.min()), float(sub.max())
    if hi <= lo:
        return None
    ran = start >= 0
    # (time, kind, job): kind 0 = end (frees), 1 = start (leaves the queue), 2 = submit.
    rows = np.flatnonzero(ran)
    events = sorted([(float(end[j]), 0, int(j)) for j in rows]
                    + [(float(start[j]), 1, int(j)) for j in rows]
                    + [(float(t), 2, j) for j, t in enumerate(sub)])
    busy = 0
    queued: list[tuple[int, int]] = []  # heap of (nodes, job); started ones removed lazily
    gone: set[int] = set()
    idle = 0.0
    for k, (t, kind, j) in enumerate(events):
        if kind == 0:
            busy -= int(nodes[j])
        elif kind == 1:
            busy += int(nodes[j])
            gone.add(j)
        else:
            heapq.heappush(queued, (int(nodes[j]), j))
        nxt = events[k + 1][0] if k + 1 < len(events) else t
        a, b = max(t, lo), min(nxt, hi)
        if b <= a:
            continue
        while queued and queued[0][1] in gone:
            heapq.heappop(queued)
        free = total - busy
        if queued and queued[0][0] <= free:
            idle += free * (b - a)
    return idle / (total * (hi - lo))


def run_load(load: float, seed: int, jobs: int, label: str
             ) -> tuple[float, int, str, dict[str, Any], float]:
    params = LublinParams(jobs=jobs, load=load, p_extend=0.0, p_reduce=0.0)
    work = generate(params, seed=seed)
    trace = normalize(work.trace)
    cluster = NodePool(trace.max_nodes)
    policy, opts = RUNS[label]
    started = time.perf_counter()
    result = simulate(trace, cluster, make_policy(policy, opts, cluster))
    summary = {k: result.summary[k] for k in KEYS}
    summary["offered_load"] = work.load
    summary["requested_jobs"] = jobs
    summary["idle_fit"] = idle_while_a_job_fit(result.results, trace.max_nodes)
    return load, seed, label, summary, time.perf_counter() - started


# ----------------------------------------------------------------------------- tables


def ratio(v: float, base: float) -> str:
    return f"{v / base:.2f}x" if base else "-"


def summary_table(name: str, runs: dict[str, tuple[dict, float]], prefix: int | None
                  ) -> list[str]:
    base = runs["easy"][0]
    head = ("run", "mean wait (s)", "vs easy", "mean response (s)", "vs easy",
            "bounded slowdown", "vs easy", "utilisation (makespan)",
            "utilisation (window)", "idle while a job fit (window)",
            "idle, no waiting job fit (window)", "makespan (d)",
            "searches", "improved passes", "sim time (s)")
    scope = (f"first {base['jobs']:,} jobs (a prefix, --max-jobs; not the whole trace)"
             if prefix is not None else f"whole trace, {base['jobs']:,} jobs")
    out = ["", f"**{name}** ({scope}, {base['total_nodes']:,} nodes)", "",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for label in RUNS:
        if label not in runs:
            continue
        s, seconds = runs[label]
        stats = s.get("policy_stats") or {}
        cells = [label, f"{s['mean_wait_s']:,.0f}", ratio(s["mean_wait_s"], base["mean_wait_s"]),
                 f"{s['mean_response_s']:,.0f}",
                 ratio(s["mean_response_s"], base["mean_response_s"]),
                 f"{s['mean_bounded_slowdown']:.2f}",
                 ratio(s["mean_bounded_slowdown"], base["mean_bounded_slowdown"]),
                 f"{s['utilization']:.4f}", f"{s['utilization_window']:.4f}",
                 f"{s['idle_fit']:.4f}" if s.get("idle_fit") is not None else "-",
                 # the rest of the window's idle capacity: 1 - utilisation - the above
                 f"{1 - s['utilization_window'] - s['idle_fit']:.4f}"
                 if s.get("idle_fit") is not None else "-",
                 f"{s['makespan_s'] / 86400:.1f}",
                 f"{stats['searches']:,}" if "searches" in stats else "-",
                 f"{stats['improved_passes']:,}" if "improved_passes" in stats else "-",
                 f"{seconds:.0f}"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def target_line(name: str, runs: dict[str, tuple[dict, float]]) -> str:
    if "PLAN 2 (wait2)" not in runs:
        return f"{name}: PLAN 2 did not run."
    e, p = runs["easy"][0], runs["PLAN 2 (wait2)"][0]
    w = p["mean_wait_s"] / e["mean_wait_s"]
    du = p["utilization_window"] - e["utilization_window"]
    ok = w <= WAIT_TARGET and du >= 0
    return (f"{name}: PLAN 2 wait {w:.2f}x easy (target <= {WAIT_TARGET}), windowed "
            f"utilisation {p['utilization_window']:.4f} vs {e['utilization_window']:.4f} "
            f"({100 * du:+.2f} points): {'MET' if ok else 'MISSED'}.")


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
            r = "-" if e == 0 and p == 0 else ("inf" if e == 0 else f"{p / e:.2f}")
            cells.append(f"{r} ({count})")
        out.append("| " + " | ".join(cells) + " |")
    return out


def _dur(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def scaled_table(path: str, name: str, done: list, max_jobs: int | None) -> list[str]:
    """easy vs PLAN 2 on one trace with its inter-arrival times scaled."""
    runs: dict[float, dict[str, dict]] = {}
    for p, label, s, _, _ in done:
        if p == path and label in LOAD_RUNS:
            runs.setdefault(float(s.get("arrival_scale", 1.0)), {})[label] = s
    scope = f"first {max_jobs:,} jobs" if max_jobs is not None else "whole trace"
    head = ("arrivals x", "offered load", "easy wait (s)", "PLAN 2 wait (s)", "PLAN 2 / easy",
            "easy util (window)", "PLAN 2 util (window)", "difference (points)",
            "easy util (makespan)", "PLAN 2 util (makespan)")
    out = ["", f"**{name} ({scope}) with every inter-arrival time scaled: easy vs PLAN 2 "
               "against load**", "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for f in sorted(runs, reverse=True):
        r = runs[f]
        if len(r) < 2:
            continue
        e, p = r["easy"], r["PLAN 2 (wait2)"]
        out.append("| " + " | ".join([
            f"{f:g}", f"{e.get('offered_load') or 0:.3f}", f"{e['mean_wait_s']:,.0f}",
            f"{p['mean_wait_s']:,.0f}", ratio(p["mean_wait_s"], e["mean_wait_s"]),
            f"{e['utilization_window']:.4f}", f"{p['utilization_window']:.4f}",
            f"{100 * (p['utilization_window'] - e['utilization_window']):+.2f}",
            f"{e['utilization']:.4f}", f"{p['utilization']:.4f}"]) + " |")
    return out


def load_rows(done: list[tuple[float, int, str, dict, float]]) -> list[dict[str, float]]:
    """Seed means per load: offered load, wait and windowed utilisation of each run."""
    rows = []
    for load in sorted({d[0] for d in done}):
        row: dict[str, float] = {"load": load}
        mine = [d for d in done if d[0] == load]
        row["offered"] = float(np.mean([d[3]["offered_load"] for d in mine if d[2] == "easy"]))
        row["seeds"] = len({d[1] for d in mine})
        for label in LOAD_RUNS:
            ss = [d[3] for d in mine if d[2] == label]
            for key in ("mean_wait_s", "utilization_window", "utilization"):
                row[f"{label}/{key}"] = float(np.mean([s[key] for s in ss]))
        rows.append(row)
    return rows


def load_table(rows: list[dict[str, float]], jobs: int) -> list[str]:
    e, p = LOAD_RUNS
    head = ("target load", "offered load", "seeds", "easy wait (s)", "PLAN 2 wait (s)",
            "PLAN 2 / easy", "easy util (window)", "PLAN 2 util (window)",
            "difference (points)", "easy util (makespan)", "PLAN 2 util (makespan)")
    out = ["", f"**Lublin-Feitelson workloads, {jobs:,} jobs each, 320 processors (units of "
               "32), exact estimates, no elastic commands: easy vs PLAN 2 against load "
               "(seed means)**", "",
           "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in rows:
        we, wp = r[f"{e}/mean_wait_s"], r[f"{p}/mean_wait_s"]
        ue, up = r[f"{e}/utilization_window"], r[f"{p}/utilization_window"]
        out.append("| " + " | ".join([
            f"{r['load']:.2f}", f"{r['offered']:.3f}", f"{r['seeds']:.0f}", f"{we:,.0f}",
            f"{wp:,.0f}", ratio(wp, we), f"{ue:.4f}", f"{up:.4f}", f"{100 * (up - ue):+.2f}",
            f"{r[f'{e}/utilization']:.4f}", f"{r[f'{p}/utilization']:.4f}"]) + " |")
    return out


def load_figure(rows: list[dict[str, float]], path: str, jobs: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = [r["offered"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for label, style in zip(LOAD_RUNS, ("o-", "s--"), strict=True):
        ax1.plot(loads, [r[f"{label}/mean_wait_s"] / 3600 for r in rows], style, label=label)
        ax2.plot([r[f"{label}/utilization_window"] for r in rows],
                 [r[f"{label}/mean_wait_s"] / 3600 for r in rows], style, label=label)
    ax1.set_xlabel("offered load")
    ax1.set_ylabel("mean wait (h)")
    ax1.set_yscale("log")
    ax1.set_title("wait against load")
    ax2.set_xlabel("utilisation over the submission window")
    ax2.set_ylabel("mean wait (h)")
    ax2.set_yscale("log")
    ax2.set_title("wait against windowed utilisation")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"Lublin-Feitelson, {jobs:,} jobs per run, seed means")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})  # no version stamp: reproducible
    plt.close(fig)


# ----------------------------------------------------------------------------- tasks


def run_task(kind: str, key: tuple) -> tuple:
    """One run of either part: the task the runner sends (and caches under its key)."""
    return run_trace(*key) if kind == "trace" else run_load(*key)


# ----------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", metavar="PART", help="traces and/or load (default both)")
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    ap.add_argument("--names", nargs="+", default=list(TRACES), metavar="SWF",
                    help="trace files in --traces (default: " + ", ".join(TRACES) + ")")
    ap.add_argument("--max-jobs", type=int, default=None, metavar="J",
                    help="run only the first J jobs of each trace (labelled as a prefix)")
    ap.add_argument("--loads", type=float, nargs="+", default=list(LOADS), metavar="L")
    ap.add_argument("--load-jobs", type=int, default=2000, metavar="J",
                    help="jobs per Lublin workload (default 2000)")
    ap.add_argument("--load-seeds", type=int, default=2, metavar="S",
                    help="Lublin seeds 1..S per load (default 2)")
    ap.add_argument("--arrival-scales", type=float, nargs="+", default=[1.0, 0.8, 0.6],
                    metavar="F", help="part scaled: the first --names trace (--max-jobs "
                    "applies) with every inter-arrival x F, easy vs PLAN 2 (default 1 0.8 0.6)")
    ap.add_argument("--also", nargs="+", default=[], choices=["conservative"],
                    help="traces part: also run these (conservative backfilling reserves for "
                    "every waiting job, as decoding a plan does)")
    ap.add_argument("--bins", type=int, default=6, help="logarithmic bins per axis (Fig. 6)")
    add_task_arguments(ap)
    ap.add_argument("--out", default=None, help="also write the tables here")
    ap.add_argument("--png", default=None, help="write the load figure here")
    ap.add_argument("--tabulate-only", action="store_true",
                    help="run nothing: print the tables of the runs already in --cache")
    args = ap.parse_args()
    parts = args.parts or ["traces", "load"]
    bad = [p for p in parts if p not in ("traces", "load", "scaled")]
    if bad:
        ap.error(f"unknown part(s) {', '.join(bad)}; choose from traces, load, scaled")
    if args.max_jobs is not None and args.max_jobs < 1:
        ap.error("--max-jobs must be at least 1")
    if args.tabulate_only and not args.cache:
        ap.error("--tabulate-only reads the runs in --cache DIR: give one")
    started = time.perf_counter()
    paths = [str(Path(args.traces) / name) for name in args.names]
    runner = TaskRunner(cache=args.cache, workers=args.workers, scheduler=args.scheduler,
                        prog="plan_sa")
    lines = ["machine: " + f"{platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, NumPy {np.__version__}; runs on {runner.where()}",
             "",
             "command: `" + " ".join(["python", Path(sys.argv[0]).as_posix()] + sys.argv[1:])
             + "`"]
    trace_done: list = []
    load_done: list = []

    # The order that matters most first: easy and PLAN 2 on the traces (the target), the
    # load curve, then PLAN 1 and PLAN 3 (the slowest); the largest trace first.
    todo: list[tuple[str, tuple]] = []
    by_size = sorted(paths, key=lambda p: -os.path.getsize(p))
    if "traces" in parts:
        todo += [("trace", (path, label, args.max_jobs)) for label in ("PLAN 2 (wait2)", "easy")
                 for path in by_size]
    if "load" in parts:
        todo += [("load", (load, seed, args.load_jobs, label))
                 for load in sorted(args.loads, reverse=True)
                 for seed in range(1, args.load_seeds + 1) for label in LOAD_RUNS[::-1]]
    if "scaled" in parts:
        todo += [("trace", (paths[0], label, args.max_jobs, f))
                 for f in sorted(args.arrival_scales) for label in ("PLAN 2 (wait2)", "easy")
                 if f != 1.0 or "traces" not in parts]
    if "traces" in parts:
        todo += [("trace", (path, label, args.max_jobs)) for label in args.also
                 for path in by_size]
        todo += [("trace", (path, label, args.max_jobs)) for label in ("PLAN 3 (util)",
                                                                        "PLAN 1 (wait)")
                 for path in by_size]
    def one_run(kind: str, key: tuple) -> tuple:
        """A trace run at arrival scale 1 is the plain run (the traces part's)."""
        return key[:3] if kind == "trace" and len(key) == 4 and key[3] == 1.0 else key

    todo = list(dict.fromkeys((kind, one_run(kind, key)) for kind, key in todo))

    def log(i: int, res: tuple) -> None:
        if todo[i][0] == "trace":
            path, label, s, _, sec = res
            print(f"[{time.perf_counter() - started:6.0f} s] {Path(path).name} {label}: "
                  f"wait {s['mean_wait_s']:,.0f} s, util {s['utilization']:.4f}, window "
                  f"{s['utilization_window']:.4f} ({sec:.0f} s)", flush=True)
        else:
            lo, sd, lab, ls, lsec = res
            print(f"[{time.perf_counter() - started:6.0f} s] lublin load {lo} seed "
                  f"{sd} {lab}: wait {ls['mean_wait_s']:,.0f} s, window "
                  f"{ls['utilization_window']:.4f} ({lsec:.0f} s)", flush=True)

    with runner:
        got = runner.map(run_task, todo, what="runs", depends_on=paths, on_result=log,
                         only_cached=args.tabulate_only)
    for (kind, _), res in zip(todo, got, strict=True):
        if res is not None:
            (trace_done if kind == "trace" else load_done).append(res)
    scaled_done = [d for d in trace_done if d[2].get("arrival_scale", 1.0) != 1.0]
    plain = [d for d in trace_done if d[2].get("arrival_scale", 1.0) == 1.0]
    if "scaled" in parts:
        lines += scaled_table(paths[0], args.names[0], plain + scaled_done, args.max_jobs)
    trace_done = plain if "traces" in parts else []
    if trace_done:
        targets = []
        for path, name in zip(paths, args.names, strict=True):
            mine = {label: (s, sec) for p, label, s, _, sec in trace_done if p == path}
            cols = {label: c for p, label, _, c, _ in trace_done if p == path}
            lines += summary_table(name, mine, args.max_jobs)
            targets.append(target_line(name, mine))
            if "PLAN 2 (wait2)" in cols:
                lines += ["", f"PLAN 2 / easy mean wait by job size and runtime ({name}; "
                              "cell: ratio (jobs); below 1 PLAN 2 waits less):", ""]
                lines += binned_ratio(cols["easy"], cols["PLAN 2 (wait2)"], args.bins)
        lines += ["", "Target (PLAN 2 wait <= 0.6x easy, windowed utilisation >= easy's):", ""]
        lines += [f"* {t}" for t in targets]
    if load_done:
        rows = load_rows(load_done)
        lines += load_table(rows, args.load_jobs)
        if args.png:
            load_figure(rows, args.png, args.load_jobs)
    lines += ["", f"({time.perf_counter() - started:.0f} s; {runner.ran} runs simulated now, "
                  "the others read from --cache)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
