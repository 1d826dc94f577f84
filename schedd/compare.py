"""`schedd compare`: several policies x real-time percentages on one trace (the real-time
paper's Figs. 3-7 as tables).

For each RTJ percentage and trial, the trace gets its real-time jobs marked (or added) by
`schedd.traces.realtime.make_realtime` with seed `seed_base + trial` (the authors' seeds
1000 + trial), every run simulates that same marked trace, and per-job results are pooled
over the trials (as the authors pool theirs) before means and percentiles are taken.
Whole-run figures (productive utilisation, overhead node-hours, preemptions) are trial
means. It is a preset over `schedd sweep`: each simulation is a sweep cell (trace x run x
percentage x seed) run on Dask with the sweep's cache, kept with the tables in the
`--out` folder (or in `--cache DIR`), so a repeated or extended comparison runs only what
is missing; the output does not depend on the number of workers.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from .sweep.runspec import RunSpec, RunSpecError
from .sweep.runspec import engine_args as _engine_args
from .sweep.runspec import parse_run as _parse_run

# The paper's schemes (§4, §6, §7.1.4): baselines, the high-priority queue, preemption and
# the heuristic under each checkpointing method.
DEFAULT_RUNS: tuple[str, ...] = (
    "easy",
    "easy-wfp2",
    "rt-hpq",
    "rt-preempt ckpt=none",
    "rt-preempt ckpt=sys",
    "rt-preempt ckpt=app --app-overhead 5",
    "rt-preempt ckpt=app --app-overhead 10",
    "rt-preempt ckpt=jit",
    "wcjs ckpt=app --app-overhead 5",
    "wcjs ckpt=app --app-overhead 10",
    "wcjs ckpt=jit",
)
SUMMARY_KEYS = ("productive_utilization", "utilization", "utilization_window", "preemptions")


class CompareError(ValueError):
    """A bad run spec or option: one sentence for the user."""


def parse_run(text: str) -> RunSpec:
    """`POLICY [KEY=VALUE ...] [--engine-flag VALUE ...]` (schedd/sweep/runspec.py)."""
    try:
        return _parse_run(text)
    except RunSpecError as err:
        raise CompareError(str(err)) from None


def engine_args(run: RunSpec) -> argparse.Namespace:
    try:
        return _engine_args(run)
    except RunSpecError as err:
        raise CompareError(str(err)) from None


@dataclass(frozen=True)
class Task:
    """One simulation: what a worker process needs (picklable)."""

    trace_path: str
    cluster: str
    percent: float
    mode: str
    trial_seed: int
    aps_runtimes: str | None
    run: RunSpec
    window: tuple[float, float] | None
    non_checkpointable: float = 0.0
    window_by: str = "run"  # "run": simulated start/end; "log": the trace's recorded ones


def log_window_ids(raw: Any, window: tuple[float, float]) -> np.ndarray:
    """Ids of the jobs whose start and end as recorded in the trace (submit + wait, plus
    the runtime) fall inside `window`: the authors' trimmed set, the same jobs whatever
    the policy (their bqsim.py tests log_start_time / log_end_time)."""
    cols = raw.columns
    start = cols["submit"] + np.maximum(cols["wait"], 0.0)
    end = start + np.maximum(cols["runtime"], 0.0)
    keep = (cols["wait"] >= 0) & (start >= window[0]) & (end <= window[1])
    return np.asarray(cols["job_id"][keep], dtype=np.int64)


def task_cell(task: Task, code: str = "") -> Any:
    """The sweep cell that simulates `task` (the real-time marking as its transform)."""
    from .sweep.cells import Cell, code_version, content_key, file_sha, named_files

    transform: tuple[tuple[str, Any], ...] = ()
    if task.percent > 0:  # --percent 0: the trace as it is, a plain comparison of the runs
        transform = tuple(sorted({"kind": "realtime", "percent": task.percent,
                                  "mode": task.mode, "aps_runtimes": task.aps_runtimes or "",
                                  "non_checkpointable": task.non_checkpointable}.items()))
    cell = Cell(task.trace_path, file_sha(task.trace_path), task.cluster, task.run.label,
                task.trial_seed, transform=transform, code=code or code_version(),
                files=named_files(task.run.label))
    return Cell(**{**cell.__dict__, "key": content_key(cell)})


def _whole(results: dict[str, np.ndarray], task: Task) -> tuple[dict[str, np.ndarray],
                                                                dict[str, float]]:
    """The task's per-job results (the log window applied) and whole-run figures."""
    from .core.cluster_spec import parse_cluster
    from .metrics import MetricOptions, summarize
    from .options import engine_options_from
    from .policies import make_policy

    cluster = parse_cluster(task.cluster)
    engine_options = engine_options_from(
        engine_args(task.run), make_policy(task.run.policy, list(task.run.options), cluster))
    by_run = task.window if task.window_by == "run" else None
    s = summarize(results, total_nodes=cluster.total_nodes,
                  options=MetricOptions(window=by_run, prompt_grace_s=engine_options.warning_s))
    whole = {key: float(s[key] or 0.0) for key in SUMMARY_KEYS}
    whole["overhead_node_h"] = float(s["chr_ckpt_sys"] + s["chr_ckpt_jobs"] + s["chr_pre_sys"])
    if task.window is not None and task.window_by == "log":
        keep = np.isin(results["id"], _log_ids(task.trace_path, task.window))
        results = {name: col[keep] for name, col in results.items()}
    return results, whole


@functools.lru_cache(maxsize=8)
def _log_ids(trace_path: str, window: tuple[float, float]) -> np.ndarray:
    from .traces import read_trace

    return log_window_ids(read_trace(trace_path), window)


def _simulate(task: Task) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Per-job result columns of one run, and its whole-run figures."""
    from .sweep.cell_run import simulate_cell

    results, _ = simulate_cell(task_cell(task))
    return _whole(results, task)


def check_runs(runs: list[RunSpec], cluster: str) -> dict[str, bool]:
    """Fail fast, before any simulation, on a bad policy, option or engine flag; returns
    whether each run's policy applies elastic control commands (`processes_eccs`)."""
    from .core.cluster_spec import parse_cluster
    from .options import engine_options_from
    from .policies import PolicyError, make_policy

    machine = parse_cluster(cluster)
    applies: dict[str, bool] = {}
    for run in runs:
        try:
            policy = make_policy(run.policy, list(run.options), machine)
        except PolicyError as err:
            raise CompareError(f"run {run.label!r}: {err}") from None
        try:
            engine_options_from(engine_args(run), policy)
        except PolicyError as err:
            raise CompareError(f"run {run.label!r}: {err}") from None
        applies[run.label] = bool(policy.processes_eccs)
    return applies


def check_same_eccs(trace_path: str, applies: dict[str, bool]) -> None:
    """Refuse runs that would see different workloads: when the trace carries elastic
    control commands, a policy with an ECC processor applies them and one without ignores
    them (the LOS paper's Table III), so their jobs differ."""
    if len(set(applies.values())) < 2:
        return
    from .traces import read_trace

    eccs = len(read_trace(trace_path).eccs)
    if not eccs:
        return
    on = [repr(label) for label, yes in applies.items() if yes]
    off = [repr(label) for label, yes in applies.items() if not yes]
    raise CompareError(
        f"the runs would see different workloads: {', '.join(on)} "
        f"appl{'ies' if len(on) == 1 else 'y'} the {eccs} elastic control command(s) of "
        f"{os.path.basename(trace_path)} and {', '.join(off)} "
        f"ignore{'s' if len(off) == 1 else ''} them; compare policies that treat ECCs alike "
        "or pass --allow-mixed-ecc")


def compare(trace_path: str, cluster: str, runs: list[RunSpec], percents: list[float],
            trials: int, seed_base: int = 1000, mode: str = "default",
            aps_runtimes: str | None = None, window: tuple[float, float] | None = None,
            workers: int = 1, non_checkpointable: float = 0.0,
            window_by: str = "run", allow_mixed_ecc: bool = False,
            cache: str | None = None) -> dict[str, Any]:
    """Every run at every percentage, pooled over `trials`; a JSON-ready dict. `window`
    keeps the jobs that start and end inside it: in the run (`window_by="run"`) or as
    recorded in the trace (`"log"`, the authors' trimmed set). Runs that would treat the
    trace's elastic control commands differently are refused unless `allow_mixed_ecc`."""
    from .metrics import MetricOptions, summarize

    applies_eccs = check_runs(runs, cluster)
    if not allow_mixed_ecc:
        check_same_eccs(trace_path, applies_eccs)
    tasks = [Task(trace_path, cluster, p, mode, seed_base + t, aps_runtimes, run, window,
                  non_checkpointable, window_by)
             for p in percents for run in runs for t in range(trials)]
    outputs = run_tasks(tasks, workers, cache)
    from .core.cluster_spec import parse_cluster

    total = parse_cluster(cluster).total_nodes
    metric_options = MetricOptions(window=window if window_by == "run" else None)
    table: dict[str, Any] = {}
    for i, p in enumerate(percents):
        rows: dict[str, Any] = {}
        for j, run in enumerate(runs):
            chunk = outputs[(i * len(runs) + j) * trials:(i * len(runs) + j + 1) * trials]
            pooled = {name: np.concatenate([c[name] for c, _ in chunk]) for name in chunk[0][0]}
            stats = summarize(pooled, total_nodes=total, options=metric_options)["stats"]
            whole = {key: float(np.mean([w[key] for _, w in chunk])) for key in chunk[0][1]}
            rows[run.label] = {"stats": {"by_class": stats["by_class"],
                                         "by_class_category": stats["by_class_category"]},
                               **whole}
        table[f"{p:g}"] = rows
    return {"trace": os.path.basename(trace_path), "cluster": cluster, "mode": mode,
            "non_checkpointable": non_checkpointable,
            "trials": trials, "seed_base": seed_base, "window": window,
            "window_by": window_by,
            "runs": [r.label for r in runs], "percents": [f"{p:g}" for p in percents],
            "results": table}


def run_tasks(tasks: list[Task], workers: int, cache: str | None = None) -> list[Any]:
    """(results, whole-run figures) of every task, in order: sweep cells on Dask (in this
    process with one worker), cached in `cache` (a temporary directory by default)."""
    from .sweep.cell_run import load_results
    from .sweep.cells import code_version
    from .sweep.execute import run_cells

    code = code_version()
    cells = [task_cell(t, code) for t in tasks]
    with tempfile.TemporaryDirectory(prefix="schedd-compare-") as tmp:
        where = cache or tmp
        rows = run_cells(cells, where, workers=workers if workers > 1 else 0,
                         prog="schedd compare", what="simulations")
        failed = [(t, r) for t, r in zip(tasks, rows, strict=True) if r.get("status") != "ok"]
        if failed:
            task, row = failed[0]
            raise CompareError(f"run {task.run.label!r} at {task.percent:g}% (seed "
                               f"{task.trial_seed}) failed: {row.get('error')}")
        return [_whole(load_results(where, c.key), t) for c, t in zip(cells, tasks,
                                                                       strict=True)]


# --------------------------------------------------------------------------- tables

_CLASSES = (("realtime", "RTJ"), ("batch", "BJ"))
CATEGORY_NAMES = ("narrow-short", "narrow-long", "wide-short", "wide-long")


def _cell(v: float | None, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _change(v: float | None, base: float | None) -> str:
    if v is None or base is None or base == 0:
        return "-"
    return f"{(v / base - 1) * 100:+.1f}%"


def _bsld(group: dict[str, Any] | None) -> dict[str, Any]:
    empty = {"count": 0, "mean": None, "p50": None, "p95": None}
    return group["bounded_slowdown_600"] if group else empty


def markdown(result: dict[str, Any], baseline: str | None = None) -> str:
    """The tables: per percentage all jobs (bounded slowdown with the 10-minute bound,
    turnaround, change against the baseline run, overheads), then per category."""
    base_label = baseline or result["runs"][0]
    out = [f"Trace `{result['trace']}` on `{result['cluster']}`, RTJ mode "
           f"`{result['mode']}`, non-checkpointable batch share "
           f"{result['non_checkpointable']:g}, {result['trials']} trials pooled (seeds "
           f"{result['seed_base']}..{result['seed_base'] + result['trials'] - 1}); bounded "
           "slowdown with the 10-minute bound (BSD), turnaround in hours; changes are "
           f"against `{base_label}`.", ""]
    for p, rows in result["results"].items():
        base = rows.get(base_label)
        out += [f"### {p}% real-time jobs: all jobs", "",
                "| run | RTJ BSD mean | p50 | p95 | BJ BSD mean | p50 | p95 | RTJ change | "
                "BJ change | RTJ turnaround h | BJ turnaround h | productive util | "
                "window util | overhead node-h | preemptions |",
                "|---|" + "---:|" * 14]
        for label, row in rows.items():
            by = row["stats"]["by_class"]
            rt, bj = _bsld(by.get("realtime")), _bsld(by.get("batch"))
            b_rt = _bsld(base["stats"]["by_class"].get("realtime")) if base else {}
            b_bj = _bsld(base["stats"]["by_class"].get("batch")) if base else {}
            turn = [by[c]["response_s"]["mean"] if c in by else None for c, _ in _CLASSES]
            out.append(
                f"| `{label}` | {_cell(rt['mean'])} | {_cell(rt['p50'])} | {_cell(rt['p95'])} "
                f"| {_cell(bj['mean'])} | {_cell(bj['p50'])} | {_cell(bj['p95'])} "
                f"| {_change(rt['mean'], b_rt.get('mean'))} "
                f"| {_change(bj['mean'], b_bj.get('mean'))} "
                f"| {_cell(turn[0] / 3600 if turn[0] is not None else None, '.2f')} "
                f"| {_cell(turn[1] / 3600 if turn[1] is not None else None, '.2f')} "
                f"| {row['productive_utilization']:.4f} "
                f"| {row['utilization_window']:.4f} | {row['overhead_node_h']:,.0f} "
                f"| {row['preemptions']:.1f} |")
        out.append("")
        for cat in CATEGORY_NAMES:
            out += [f"#### {p}% real-time jobs: {cat}", "",
                    "| run | RTJ n | RTJ BSD mean | p50 | p95 | BJ n | BJ BSD mean | p50 | p95 |",
                    "|---|" + "---:|" * 8]
            for label, row in rows.items():
                grid = row["stats"]["by_class_category"]
                cells = []
                for cls, _ in _CLASSES:
                    g = _bsld(grid.get(cls, {}).get(cat))
                    cells += [str(g["count"]), _cell(g["mean"]), _cell(g["p50"]),
                              _cell(g["p95"])]
                out.append(f"| `{label}` | " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- CLI


def add_parser(sub: Any) -> None:
    cmp_ = sub.add_parser(
        "compare", help="run several policies and real-time percentages on one trace",
        description="Mark real-time jobs in TRACE at each --percent (seed base + trial), "
        "simulate every --run on each marked trace, pool the jobs over the trials and print "
        "the real-time paper's tables (Figs. 3-7): bounded slowdown (10-minute bound) of "
        "real-time and batch jobs, mean, median and 95th percentile, overall and per "
        "category, turnaround, productive utilisation and overhead node-hours; keep them, "
        "every figure and each simulation in --out (default out/compare-TRACE-HASH).")
    cmp_.add_argument("--trace", required=True, help="SWF/CWF trace (batch jobs)")
    cmp_.add_argument("--cluster", default="mira", help="machine (default mira)")
    cmp_.add_argument("--percent", type=float, nargs="+", default=[10.0], metavar="P",
                      help="real-time job percentages, 0 <= P < 100 (default 10; 0: no "
                      "real-time jobs, a plain comparison of the runs on TRACE)")
    cmp_.add_argument("--mode", choices=["default", "short", "aps"], default="default",
                      help="how real-time jobs are chosen (schedd workload realtime)")
    cmp_.add_argument("--aps-runtimes", default=None, metavar="FILE",
                      help="APS runtimes, needed with --mode aps")
    cmp_.add_argument("--non-checkpointable", type=float, default=0.0, metavar="F",
                      help="fraction of batch jobs that cannot checkpoint (never preempted "
                      "except under NO-CKPT; default 0)")
    cmp_.add_argument("--trials", type=int, default=10, help="trials per percentage (10)")
    cmp_.add_argument("--seed-base", type=int, default=1000,
                      help="trial t uses seed base + t (default 1000, the authors')")
    cmp_.add_argument("--run", action="append", default=None, metavar="SPEC",
                      help="'POLICY [KEY=VALUE ...] [--engine-flag V ...]', repeatable "
                      f"(default: the paper's {len(DEFAULT_RUNS)} schemes, `easy` first)")
    cmp_.add_argument("--baseline", default=None, metavar="SPEC",
                      help="the run changes are measured against (default: the first)")
    cmp_.add_argument("--window", default=None, metavar="LO,HI",
                      help="count only jobs that start and end within [LO, HI] seconds")
    cmp_.add_argument("--window-by", choices=["run", "log"], default="run",
                      help="with --window: the start and end in each run, or as recorded in "
                      "the trace (log: the same jobs for every policy, the authors' trimmed "
                      "set)")
    cmp_.add_argument("--allow-mixed-ecc", action="store_true",
                      help="compare even when some runs apply the trace's elastic control "
                      "commands and others ignore them (refused by default: their workloads "
                      "differ)")
    cmp_.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                      help="simulations in parallel (default: the CPU count)")
    cmp_.add_argument("--out", default=None, metavar="DIR",
                      help="where the results are kept: the tables (DIR/tables.md), every "
                      "figure (DIR/results.json) and each simulation (DIR/cache, unless "
                      "--cache) (default: out/compare-TRACE-HASH, HASH a short hash of the "
                      "trace's bytes and the options that change the results, so that the "
                      "same comparison finds its folder and its simulations again)")
    cmp_.add_argument("--cache", default=None, metavar="DIR",
                      help="keep each simulation in this sweep cache (docs/sweep.md) instead "
                      "of the --out folder's cache/: a rerun or an extended comparison runs "
                      "only what is missing")
    cmp_.add_argument("--markdown", default=None, metavar="FILE",
                      help="also write the tables here")
    cmp_.add_argument("--json", default=None, metavar="FILE",
                      help="also write every figure here as JSON")


def _window(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise CompareError(f"--window expects LO,HI in seconds, got {text!r}") from None
    if not lo <= hi:
        raise CompareError(f"--window needs LO <= HI, got {text!r}")
    return lo, hi


def default_out(args: argparse.Namespace, runs: list[RunSpec],
                baseline: str | None) -> str:
    """out/compare-TRACE-HASH: HASH covers the trace's bytes and every option that changes
    the tables (not --workers, --cache or the output paths), so the same comparison
    always lands in the same folder, and finds its cached simulations there."""
    import hashlib

    from .sweep.cells import file_sha

    aps = None
    if args.aps_runtimes:
        try:
            with open(args.aps_runtimes, "rb") as f:
                aps = hashlib.sha256(f.read()).hexdigest()
        except OSError as err:
            raise CompareError(f"cannot read --aps-runtimes {args.aps_runtimes}: "
                               f"{err.strerror}") from None
    inputs = {"trace": file_sha(args.trace), "cluster": args.cluster,
              "percent": [f"{p:g}" for p in args.percent], "mode": args.mode,
              "aps_runtimes": aps, "non_checkpointable": args.non_checkpointable,
              "trials": args.trials, "seed_base": args.seed_base,
              "runs": [r.label for r in runs], "baseline": baseline,
              "window": _window(args.window), "window_by": args.window_by,
              "allow_mixed_ecc": args.allow_mixed_ecc}
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:8]
    name = os.path.basename(args.trace)
    stem = os.path.splitext(name[:-3] if name.endswith(".gz") else name)[0]
    return os.path.join("out", f"compare-{stem}-{key}")


def run(args: argparse.Namespace) -> int:
    import sys

    from .outputs import staged_dir, staged_file, writable_file

    for path in (args.markdown, args.json):  # before minutes of simulations, not after
        if path:
            writable_file(path)
    if args.trials < 1 or args.workers < 1:
        raise CompareError("--trials and --workers must be at least 1")
    if any(not 0 <= p < 100 for p in args.percent):
        raise CompareError("--percent values must lie in [0, 100) (0: no real-time jobs, "
                           "a plain comparison of the runs)")
    if not 0 <= args.non_checkpointable <= 1:
        raise CompareError("--non-checkpointable must lie in [0, 1]")
    if args.non_checkpointable and 0 in args.percent:
        raise CompareError("--non-checkpointable marks jobs with the real-time jobs: it "
                           "needs --percent > 0")
    if args.mode == "aps" and not args.aps_runtimes:
        raise CompareError("--mode aps needs --aps-runtimes FILE")
    runs = [parse_run(r) for r in (args.run or DEFAULT_RUNS)]
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        raise CompareError("two --run specs are the same")
    baseline = parse_run(args.baseline).label if args.baseline else None
    if baseline is not None and baseline not in labels:
        raise CompareError(f"--baseline {args.baseline!r} is not one of the runs")
    out = args.out or default_out(args, runs, baseline)
    # The results are kept, not only printed (issue 34), and written aside until complete:
    # a comparison that fails or is interrupted leaves no new or half-written folder.
    with staged_dir(out) as staged:
        kept = os.path.join(out, "cache")  # an earlier run's simulations: used again
        cache = args.cache or (kept if os.path.isdir(kept) else os.path.join(staged, "cache"))
        try:
            result = compare(args.trace, args.cluster, runs, args.percent, args.trials,
                             args.seed_base, args.mode, args.aps_runtimes,
                             _window(args.window), args.workers, args.non_checkpointable,
                             args.window_by, args.allow_mixed_ecc, cache)
        except KeyboardInterrupt as err:
            if cache.startswith(staged):  # goes with the staged folder: say so
                raise type(err)("no simulation kept (a first comparison keeps them when it "
                                "completes; --cache DIR keeps them whatever happens)"
                                ) from None
            raise
        text = markdown(result, baseline)
        figures = json.dumps(result, indent=1, allow_nan=False) + "\n"
        for name, content in (("tables.md", text), ("results.json", figures)):
            with open(os.path.join(staged, name), "w") as f:
                f.write(content)
    print(text, end="")
    for path, content in ((args.markdown, text), (args.json, figures)):
        if path:
            with staged_file(path) as part, open(part, "w") as f:
                f.write(content)
    where = args.cache or os.path.join(out, "cache")
    print(f"schedd compare: results in {out}/ (tables.md, results.json); the simulations "
          f"in {where}", file=sys.stderr)
    return 0
