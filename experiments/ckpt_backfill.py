"""Checkpoint-based backfilling vs EASY on the shared traces: the trade-off of mean wait,
share of jobs checkpointed and waste over p and the threshold (the checkpoint paper's
§4-§5), each beside the ceiling (EASY with actual runtimes as estimates).

    .venv/bin/python experiments/ckpt_backfill.py [--traces DIR] [--out FILE]
        [--figure PNG] [--json FILE] [--workers 2] [--scheduler ADDR] [--cache DIR]
        [--jobs N] [--slices 4]

For each trace on its own `nodes:MaxNodes`: `easy` with the users' estimates (the
baseline); `easy` on the trace rewritten at alpha = 0 (the paper's "classical, actual": the
ceiling of what better estimates alone could give); `ckpt-backfill` over p x threshold (the
paper's fixed 1,800 s and online quantiles of the requested times) with Intrepid's
checkpoint overhead (T_delay = 215 s per write and per restart read, T_extend = 430 s);
the documented defaults under the paper's Fig. 7 overheads; and the defaults on
consecutive slices of each trace (how much the figures move with the period). Writes
Markdown tables (--out) and a figure (--figure): wait vs share checkpointed, and wait vs
waste. The runs go through `schedd.sweep.tasks` (docs/sweep.md): a local Dask cluster of
--workers processes or --scheduler, and with --cache DIR a rerun simulates nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.checkpoint import CheckpointPolicy  # noqa: E402
from schedd.core.cluster import NodePool  # noqa: E402
from schedd.core.engine import EngineOptions  # noqa: E402
from schedd.policies import make_policy  # noqa: E402
from schedd.sim import simulate  # noqa: E402
from schedd.sweep.tasks import add_task_arguments, run_tasks  # noqa: E402
from schedd.traces import normalize, read_trace  # noqa: E402
from schedd.traces.normalize import NormalizedTrace  # noqa: E402
from schedd.traces.workload import with_estimate_accuracy  # noqa: E402

TRACES = ("lublin_256.swf", "KTH-SP2-1996-2.swf", "theta_2023.swf")
P_VALUES = (0.1, 0.2, 0.3, 0.5, 0.7)
# Thresholds: the paper's fixed 1,800 s, and online quantiles of the requests seen so far.
THRESHOLDS = {"1800 s": ["t_thr=1800"], "q 0": ["t_thr_q=0"], "q 0.25": ["t_thr_q=0.25"],
              "q 0.5": ["t_thr_q=0.5"], "q 0.75": ["t_thr_q=0.75"]}
SWEEP_T_DELAY = 215.0  # Intrepid (§5.1): T_extend = 2 x 215 = 430 s
# The paper's Fig. 7: T_extend = checkpoint write + restart read, each T_delay = T_extend / 2.
OVERHEADS = {"none": 0.0, "T_extend 120 s": 60.0, "T_extend 430 s": 215.0,
             "T_extend 1200 s": 600.0, "T_extend 3600 s": 1800.0}


def load(traces: Path, name: str, rows: tuple[int, int] | None,
         alpha: float | None = None) -> NormalizedTrace:
    """The trace in queue order, or only its jobs rows[0]:rows[1] (a labelled slice)."""
    raw = read_trace(traces / name)
    if alpha is not None:
        raw = with_estimate_accuracy(raw, alpha)
    trace = normalize(raw)
    if rows is not None:
        lo, hi = rows
        trace = NormalizedTrace(trace.header, trace.max_nodes,
                                {k: v[lo:hi] for k, v in trace.columns.items()},
                                trace.dropped, [])
    return trace


Task = tuple[str, str, "tuple[int, int] | None", str, tuple[str, ...], float, bool]


def run(task: Task) -> dict:
    traces, name, rows, policy, opts, t_delay, actual = task
    trace = load(Path(traces), name, rows, 0.0 if actual else None)
    cluster = NodePool(trace.max_nodes)
    options = EngineOptions(checkpoint=CheckpointPolicy(periodic="none", cost_model="fixed",
                                                         fixed_s=t_delay))
    result = simulate(trace, cluster, make_policy(policy, list(opts), cluster),
                      engine_options=options)
    s = result.summary
    stats = result.engine.policy.stats()
    return {
        "trace": name, "rows": list(rows) if rows else None, "jobs": s["jobs"],
        "policy": policy, "opts": list(opts),
        "t_delay": t_delay, "actual": actual,
        "wait": s["mean_wait_s"], "wait_all": s["mean_wait_all_segments_s"],
        "bsld": s["mean_bounded_slowdown"], "ckpt_share": s["preemption_ratio"],
        "waste": s["wasted_ratio"], "cnum": s["checkpoints_per_node_day"],
        "bratio": s["backfill_ratio"], "util": s["utilization"],
        "preemptions": stats.get("preemptions", 0),
        "cascade": stats.get("cascade_preemptions", 0),
        "preempting_res": stats.get("preempting_reservations", 0),
        "cascade_res": stats.get("cascade_reservations", 0),
        "t_thr_final": stats.get("t_thr_final_s"),
        "scaled_starts": stats.get("scaled_starts", 0),
    }


def tasks_for(traces: str, name: str, jobs: tuple[int, int] | None) -> list[Task]:
    out: list[Task] = [(traces, name, jobs, "easy", (), 0.0, False),
                       (traces, name, jobs, "easy", (), 0.0, True)]
    for thr in THRESHOLDS.values():
        for p in P_VALUES:
            out.append((traces, name, jobs, "ckpt-backfill", (f"p={p}", *thr),
                        SWEEP_T_DELAY, False))
    for t_delay in OVERHEADS.values():
        out.append((traces, name, jobs, "ckpt-backfill", (), t_delay, False))
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


TITLE = ("# ckpt-backfill vs easy: tables\n\nWritten by `experiments/ckpt_backfill.py` "
         "(the command and the discussion: [ckpt_backfill_experiments.md]"
         "(ckpt_backfill_experiments.md)).\n")
HEADER = ("| run | wait_s | wait / easy | paper's wait / easy | ceiling | checkpointed | "
          "waste | cascade | cNum | bsld / easy | util |")


def table_row(label: str, r: dict, base: dict, ceiling: float) -> str:
    cascade = f"{r['cascade']:,} / {r['preemptions']:,}" if r["preemptions"] else "0"
    return (f"| {label} | {r['wait']:,.0f} | {r['wait'] / base['wait']:.3f} | "
            f"{r['wait_all'] / base['wait']:.3f} | {ceiling:.3f} | {_pct(r['ckpt_share'])} | "
            f"{_pct(r['waste'])} | {cascade} | {r['cnum']:.3f} | "
            f"{r['bsld'] / base['bsld']:.3f} | {r['util']:.4f} |")


def label_of(r: dict) -> str:
    opts = r["opts"]
    if r["policy"] == "easy":
        return "easy, actual runtimes (ceiling)" if r["actual"] else "easy (baseline)"
    p = next((o[2:] for o in opts if o.startswith("p=")), "0.2 (default)")
    thr = next((k for k, v in THRESHOLDS.items() if v and v[0] in opts), "q 0.5 (default)")
    return f"p {p}, threshold {thr}"


def tables(rows: list[dict], label: str) -> list[str]:
    out: list[str] = []
    for name in dict.fromkeys(r["trace"] for r in rows):
        mine = [r for r in rows if r["trace"] == name]
        base = next(r for r in mine if r["policy"] == "easy" and not r["actual"])
        ceil_run = next(r for r in mine if r["policy"] == "easy" and r["actual"])
        ceiling = ceil_run["wait"] / base["wait"]
        sweep = [r for r in mine if r["policy"] != "easy" and r["opts"]]
        defaults = [r for r in mine if r["policy"] != "easy" and not r["opts"]]
        out += ["", f"**{name}** ({base['jobs']:,} jobs{label}); ceiling = easy with actual "
                f"runtimes: wait {ceil_run['wait']:,.0f} s = {ceiling:.3f} x easy", "",
                "Sweep, Intrepid's overhead (T_delay 215 s, T_extend 430 s):", "", HEADER,
                "|---" * 11 + "|", table_row(label_of(base), base, base, ceiling),
                table_row(label_of(ceil_run), ceil_run, base, ceiling)]
        out += [table_row(label_of(r), r, base, ceiling) for r in sweep]
        out += ["", "Defaults (p 0.2, threshold q 0.5) under the paper's Fig. 7 overheads:", "",
                HEADER, "|---" * 11 + "|"]
        names = {v: k for k, v in OVERHEADS.items()}
        out += [table_row(f"defaults, overhead {names[r['t_delay']]}", r, base, ceiling)
                for r in defaults]
    return out


def figure(rows: list[dict], path: Path, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["trace"] for r in rows))
    fig, axes = plt.subplots(2, len(names), figsize=(5.2 * len(names), 8.5), squeeze=False)
    markers = dict(zip(THRESHOLDS, "sovD^", strict=True))
    colors = dict(zip(P_VALUES, plt.cm.viridis([0.0, 0.25, 0.5, 0.7, 0.9]), strict=True))
    for col, name in enumerate(names):
        mine = [r for r in rows if r["trace"] == name]
        base = next(r for r in mine if r["policy"] == "easy" and not r["actual"])
        ceiling = next(r for r in mine if r["policy"] == "easy" and r["actual"])["wait"]
        for row, (key, xlabel) in enumerate((("ckpt_share", "share of jobs checkpointed"),
                                             ("waste", "wasted share of busy node-time"))):
            ax = axes[row][col]
            for r in mine:
                if r["policy"] == "easy" or not r["opts"]:
                    continue
                p = float(r["opts"][0][2:])
                thr = next(k for k, v in THRESHOLDS.items() if v[0] in r["opts"])
                ax.scatter(r[key] * 100, r["wait"] / base["wait"], marker=markers[thr],
                           color=colors[p], s=40, edgecolor="black", linewidth=0.4)
            ax.axhline(1.0, color="grey", linestyle=":", label="easy")
            ax.axhline(ceiling / base["wait"], color="tab:red", linestyle="--",
                       label="ceiling: easy, actual runtimes")
            ax.axhline(0.85, color="tab:green", linestyle="-.", linewidth=0.8,
                       label="target: wait 0.85, 5% checkpointed, 1.5% waste")
            ax.axvline(5.0 if row == 0 else 1.5, color="tab:green", linestyle="-.",
                       linewidth=0.8)
            ax.set_xlabel(xlabel + " (%)")
            ax.set_ylabel("mean wait / easy")
            ax.set_title(f"{name}{label}" if row == 0 else "")
            ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=c, label=f"p {p}")
               for p, c in colors.items()]
    handles += [plt.Line2D([], [], marker=m, linestyle="", color="white",
                           markeredgecolor="black", label=f"threshold {t}")
                for t, m in markers.items()]
    handles += axes[0][0].get_legend_handles_labels()[0]
    fig.legend(handles=handles, loc="lower center", ncol=7, fontsize=8, frameon=False)
    fig.suptitle("ckpt-backfill: mean wait vs checkpoints and waste over p and threshold "
                 "(T_extend 430 s)")
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    fig.savefig(path, dpi=90)


def slice_tasks(traces: str, name: str, count: int) -> list[Task]:
    """easy, its ceiling and the defaults (Intrepid's overhead) on `count` consecutive
    equal slices of the trace: how much one trace's figures move with the period taken."""
    n = len(load(Path(traces), name, None))
    size = n // count
    out: list[Task] = []
    for k in range(count):
        rows = (k * size, (k + 1) * size)
        out += [(traces, name, rows, "easy", (), 0.0, False),
                (traces, name, rows, "easy", (), 0.0, True),
                (traces, name, rows, "ckpt-backfill", (), SWEEP_T_DELAY, False)]
    return out


def slice_table(rows: list[dict]) -> list[str]:
    out = ["", "Defaults (Intrepid's overhead) on consecutive slices of each trace:", "",
           "| trace | jobs | easy wait_s | easy util | ceiling | wait / easy | checkpointed "
           "| waste |", "|---" * 8 + "|"]
    for k in range(0, len(rows), 3):
        base, ceil_run, r = rows[k:k + 3]
        lo, hi = r["rows"]
        out.append(f"| {r['trace']} | {lo:,}-{hi:,} | {base['wait']:,.0f} | "
                   f"{base['util']:.3f} | {ceil_run['wait'] / base['wait']:.3f} | "
                   f"{r['wait'] / base['wait']:.3f} | {_pct(r['ckpt_share'])} | "
                   f"{r['waste']:.2%} |")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    ap.add_argument("--out", default=None, help="write the Markdown tables here")
    ap.add_argument("--figure", default=None, help="write the PNG figure here")
    ap.add_argument("--json", default=None, help="write every run's figures here")
    add_task_arguments(ap)
    ap.add_argument("--jobs", type=int, default=None,
                    help="only the first N jobs of each trace (a labelled prefix)")
    ap.add_argument("--slices", type=int, default=4,
                    help="also run the defaults on this many consecutive slices of each "
                    "trace (0: none)")
    args = ap.parse_args()
    started = time.perf_counter()
    prefix = (0, args.jobs) if args.jobs else None
    tasks = [t for name in TRACES for t in tasks_for(args.traces, name, prefix)]
    cut = [t for name in TRACES for t in slice_tasks(args.traces, name, args.slices)
           ] if args.slices > 0 else []
    rows = run_tasks(run, [(t,) for t in tasks + cut], cache=args.cache,
                     workers=args.workers, scheduler=args.scheduler, prog="ckpt_backfill",
                     what="runs", depends_on=[Path(args.traces) / n for n in TRACES])
    rows, sliced = rows[:len(tasks)], rows[len(tasks):]
    label = f", first {args.jobs:,} jobs" if args.jobs else ""
    lines = tables(rows, label) + (slice_table(sliced) if sliced else [])
    print("\n".join(lines))
    print(f"\n({len(rows)} runs of whole traces and {len(sliced)} on slices, "
          f"{time.perf_counter() - started:.0f} s with {args.workers} workers)")
    if args.out:
        Path(args.out).write_text(TITLE + "\n".join(lines) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(rows + sliced, indent=1) + "\n")
    if args.figure:
        figure(rows, Path(args.figure), label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
