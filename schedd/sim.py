"""Offline simulation: drive the engine on virtual time as fast as possible, write results.

Output files (docs/results.md): jobs.swf (one line per kept job, queue order), jobs.csv
(every result column), summary.json (metrics, run description, engine counters).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import imported_columns
from .core.cluster import Cluster
from .core.engine import Ecc, Engine, EngineOptions
from .core.job import Notice
from .core.recorder import RunRecorder
from .core.results import CLASS_CODES, COLUMNS, STATE_CODES, ResultTable
from .core.validate import validate
from .metrics import MetricOptions, summarize
from .policies import Policy
from .policies.easy_plain import plain_easy_order, run_plain_easy
from .row_text import Column, Constant, Numbers, Words, rows_text
from .run_files import write_segments_csv, write_timeseries_csv
from .text_columns import BLOCK_ROWS
from .traces import NormalizedTrace
from .traces.swf import N_MAX

# SWF status field (11): 1 completed, 0 failed/killed, 5 cancelled.
_SWF_STATUS = {"completed": 1, "killed": 0, "cancelled": 5, "failed": 0}


def max_job_nodes(cluster: Cluster) -> int:
    """The largest request the cluster can ever hold (alloc_size is monotone)."""
    lo, hi = 0, cluster.total_nodes
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cluster.alloc_size(mid) is not None:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class RunResult:
    results: dict[str, np.ndarray]  # result columns sorted in queue order
    summary: dict[str, Any]
    engine: Engine = field(repr=False)
    recorder: RunRecorder | None = field(default=None, repr=False)  # segments, time series


def simulate(
    trace: NormalizedTrace,
    cluster: Cluster,
    policy: Policy,
    *,
    seed: int = 0,
    engine_options: EngineOptions | None = None,
    metric_options: MetricOptions | None = None,
    check_invariants: bool = False,
    progress: Callable[[int], None] | None = None,
    record: bool = False,
    general: bool = False,
) -> RunResult:
    """Run the trace to the end. `record` keeps execution segments and the machine's time
    series for segments.csv / timeseries.csv. A plain EASY run on a node pool takes the
    fast path of schedd/policies/easy_plain.py, which gives the same results; `general`
    runs it through the general engine all the same."""
    engine = Engine(cluster, policy, seed=seed, options=engine_options)
    engine.results = ResultTable.empty(len(trace))
    if record:
        engine.recorder = RunRecorder()
    order = None if general or check_invariants else plain_easy_order(engine, trace)
    if order is not None:
        run_plain_easy(engine, trace, order, progress)
    else:
        _run_engine(engine, trace, check_invariants, progress)
    if progress is not None:
        progress(len(engine.results))
    arrays = engine.results.arrays(copy=False)
    sort_results(arrays)
    segments = None
    if engine.recorder is not None:
        engine.recorder.close_open(engine.now)
        rec = engine.recorder  # its segments make the windowed utilisation exact
        segments = {"job": np.asarray(rec.seg_job, dtype=np.int64),
                    "start": np.asarray(rec.seg_start, dtype=np.float64),
                    "end": np.asarray(rec.seg_end, dtype=np.float64),
                    "nodes": np.asarray(rec.seg_nodes, dtype=np.int64)}
    summary = summarize(arrays, total_nodes=cluster.total_nodes,
                        options=metric_options
                        or MetricOptions(prompt_grace_s=engine.options.warning_s),
                        segments=segments)
    return RunResult(arrays, summary, engine, engine.recorder)


def _run_engine(engine: Engine, trace: NormalizedTrace, check_invariants: bool,
                progress: Callable[[int], None] | None) -> None:
    feed_engine(engine, trace)
    steps = 0
    while engine.step():
        if check_invariants:
            validate(engine)
        steps += 1
        if progress is not None and steps % 2048 == 0:
            progress(len(engine.results))


def feed_engine(engine: Engine, trace: NormalizedTrace) -> None:
    """Give the engine everything of the trace: notices, recorded cancellations, the jobs
    and elastic commands (schedd.gym's environment starts its episodes with this too)."""
    cols = trace.columns
    if "notice_time" in cols:
        for i in np.flatnonzero(cols["notice_time"] >= 0):
            engine.notice(int(cols["job_id"][i]), _notice_of(cols, int(i)))
    if "cancel_time" in cols:  # cancellations a log recorded, at their times
        for i in np.flatnonzero(cols["cancel_time"] >= 0):
            engine.cancel(int(cols["job_id"][i]), at=float(cols["cancel_time"][i]))
    engine.feed(trace.specs())
    if trace.eccs:
        engine.feed_eccs(Ecc(c.job_id, c.time, c.kind, c.amount) for c in trace.eccs)


def _notice_of(cols: dict[str, np.ndarray], i: int) -> Notice:
    """Absent estimates default to the job's actual values (as JobSpec.notice does)."""
    arrival, nodes = float(cols["est_arrival"][i]), int(cols["est_nodes"][i])
    walltime = float(cols["est_runtime"][i])
    return Notice(float(cols["notice_time"][i]),
                  arrival if arrival >= 0 else float(cols["submit"][i]),
                  nodes if nodes > 0 else int(cols["nodes"][i]),
                  walltime if walltime > 0 else float(cols["walltime"][i]))


def write_jobs_swf(path: Path, trace: NormalizedTrace, res: dict[str, np.ndarray],
                   header_lines: list[str]) -> None:
    """One SWF line per job: 2 submit, 3 wait to first start, 4 executed runtime, 5 nodes
    held, 8-9 as requested in the trace, 11 status, 12-13 user/group, 15 queue."""
    cols = trace.columns
    order = np.argsort(cols["job_id"], kind="stable")
    take = order[np.searchsorted(cols["job_id"], res["id"], sorter=order)]
    status = np.array([_SWF_STATUS[name] for name in STATE_CODES])[res["final_state"]]
    columns = [res["id"], res["submit"], res["wait"], res["executed"], res["alloc_nodes"],
               cols["req_procs"][take].astype(np.float64),
               cols["req_time"][take].astype(np.float64), status, res["user"],
               res["project"], res["queue"]]
    # An imported trace's fields 16, 17 and 32-40 and its names (schedd/imported_columns.py)
    extra = imported_columns.swf_fields(trace, take) if imported_columns.imported(trace) else {}
    if extra:
        header_lines = [*header_lines, *imported_columns.names_lines(trace)]
    with open(path, "wb") as out:
        out.write("".join(f";{line}\n" if not line.startswith(";") else f"{line}\n"
                          for line in header_lines).encode())
        for lo in range(0, len(res["id"]), BLOCK_ROWS):
            i, sub, wait, run, n, rp, rt, st, u, g, q = (Numbers(c[lo:lo + BLOCK_ROWS])
                                                         for c in columns)
            unused = Constant("-1")  # the SWF fields schedd does not fill
            cells: list[Column] = [i, sub, wait, run, n, unused, unused, rp, rt, unused, st, u,
                                   g, unused, q, unused, unused, unused]
            if extra:
                cells += [unused] * (N_MAX - len(cells))
                for field, values in extra.items():
                    cells[field - 1] = Numbers(values.values[lo:lo + BLOCK_ROWS])
            out.write(rows_text(cells, len(i.values), b" "))


def write_jobs_csv(path: Path, res: dict[str, np.ndarray],
                   trace: NormalizedTrace | None = None) -> None:
    """Every result column, one row per job (values have no commas: no quoting needed),
    then, for a trace imported from a log, its names and eligible time (quoted where a
    name needs it; schedd/imported_columns.py)."""
    names = list(COLUMNS)
    extra: list[imported_columns.CsvColumn] = []
    if trace is not None and imported_columns.imported(trace):
        extra = imported_columns.csv_columns(trace, imported_columns.rows_of(trace, res["id"]))
    with open(path, "wb") as out:
        out.write((",".join(names + ["class", "state"] + [c.header for c in extra])
                   + "\n").encode())
        for lo in range(0, len(res["id"]), BLOCK_ROWS):
            hi = min(lo + BLOCK_ROWS, len(res["id"]))
            cells: list[Column] = [Numbers(res[name][lo:hi]) for name in names]
            cells.append(Words(res["job_class"][lo:hi], CLASS_CODES))
            cells.append(Words(res["final_state"][lo:hi], STATE_CODES))
            cells += [column.cells(lo, hi) for column in extra]
            out.write(rows_text(cells, hi - lo, b","))


def write_outputs(out_dir: str | os.PathLike, trace: NormalizedTrace, run: RunResult,
                  description: dict[str, Any], timeseries_step: float = 0.0) -> dict[str, Any]:
    """Every result file. segments.csv and timeseries.csv are written by a second thread
    while this one writes the rest: the files share nothing, and the rows' formatting
    (schedd/_row_text.c) and NumPy's loops let go of the GIL, though the node numbering
    and NumPy's many small calls hold it (docs/engine.md has the figures)."""
    stats = getattr(run.engine.policy, "stats", None)
    recorder = run.recorder
    Path(out_dir).mkdir(parents=True, exist_ok=True)  # before either thread writes in it
    wait_for_run_files = None if recorder is None else in_background(
        lambda: write_run_files(out_dir, recorder, run.engine.cluster, run.results,
                                description["trace"], timeseries_step))
    try:
        summary = write_results(out_dir, trace, run.results, run.summary, description,
                                dict(run.engine.stats), stats() if stats is not None else {})
    except BaseException:
        if wait_for_run_files is not None:
            wait_for_run_files(raise_error=False)  # this error is the one to report
        raise
    if wait_for_run_files is not None:
        wait_for_run_files()
    return summary


def in_background(work: Callable[[], None]) -> Callable[..., None]:
    """Start `work` in a thread. The function returned waits for it to finish and raises
    what it raised (unless called with raise_error=False). A Future of
    concurrent.futures does the same, but importing that package took 7-13 ms here,
    against 1 ms for threading: 2-3% of a KTH run."""
    import threading  # only runs that write run files need it

    failed: list[BaseException] = []
    finished = threading.Event()

    def target() -> None:
        try:
            work()
        except BaseException as err:  # handed to the waiting thread
            failed.append(err)
        finally:
            finished.set()

    thread = threading.Thread(target=target, name="schedd-run-files", daemon=True)
    thread.start()

    def wait(raise_error: bool = True) -> None:
        # Ctrl-C while waiting: the thread is writing in the folder the interrupt will
        # remove (outputs.staged_dir), so it finishes first, or a file it makes after the
        # removal would leave the hidden folder behind; the interrupt is raised after.
        # (Not Thread.join: interrupted, it marks the thread stopped while it still runs,
        # CPython's bpo-45274 handling.)
        interrupted: KeyboardInterrupt | None = None
        while not finished.is_set():
            try:
                finished.wait()
            except KeyboardInterrupt as err:
                interrupted = err
        thread.join()
        if interrupted is not None:
            raise interrupted
        if failed and raise_error:
            raise failed[0]

    return wait


def write_run_files(out_dir: str | os.PathLike, recorder: RunRecorder, cluster: Cluster,
                    results: dict[str, np.ndarray], workload: str,
                    timeseries_step: float = 0.0) -> None:
    """segments.csv and timeseries.csv (schedd.run_files; docs/results.md)."""
    out = Path(out_dir)
    write_segments_csv(out / "segments.csv", recorder, cluster, results, workload)
    write_timeseries_csv(out / "timeseries.csv", recorder, timeseries_step)


def write_results(out_dir: str | os.PathLike, trace: NormalizedTrace,
                  results: dict[str, np.ndarray], summary: dict[str, Any],
                  description: dict[str, Any], engine_stats: dict[str, Any],
                  policy_stats: dict[str, Any] | None = None) -> dict[str, Any]:
    """jobs.swf, jobs.csv and summary.json; the replay client writes the same files, so
    nothing here names the driver (a lockstep replay's jobs.swf equals simulate's)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header = [f" schedd: policy {description['policy']} on {description['cluster']}",
              f" MaxNodes: {description['total_nodes']}"]
    write_jobs_swf(out / "jobs.swf", trace, results, header)
    write_jobs_csv(out / "jobs.csv", results, trace)
    summary = dict(summary)
    # "failures" counts jobs hit; the engine also counts failures of idle nodes: both go
    # in the summary (and both tables print them) so that nothing disagrees.
    summary["node_failures"] = int(engine_stats.get("failures", 0))
    summary["run"] = description
    summary["engine"] = engine_stats
    summary["policy_stats"] = policy_stats or {}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary


def sort_results(arrays: dict[str, np.ndarray]) -> None:
    """In place, into queue order (submit, id): the order of jobs.swf."""
    order = np.lexsort((arrays["id"], arrays["submit"]))
    for col in arrays.values():
        col[:] = col[order]  # one column at a time: small peak memory


def describe_run(trace_path: str, trace: NormalizedTrace, cluster: Cluster, policy: Policy,
                 seed: int, engine_options: EngineOptions) -> dict[str, Any]:
    options = asdict(policy.options) if hasattr(policy.options, "__dataclass_fields__") else {}
    eo = asdict(engine_options)
    return {
        "trace": os.path.basename(trace_path),
        "kept_jobs": len(trace),
        "dropped": dict(trace.dropped),
        "procs_per_node": trace.procs_per_node,
        "cluster": cluster.name,
        "total_nodes": cluster.total_nodes,
        # what the machine is in its own words: a CPU-counted cluster (slurm.conf's
        # nodes) schedules CPUs, which total_nodes counts
        "machine": cluster.describe(),
        "policy": policy.name,
        "policy_options": options,
        "seed": seed,
        "engine_options": eo,
    }


def _num(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return f"{value:,.{digits}f}"


def format_brief(summary: dict[str, Any]) -> str:
    """The short summary `schedd simulate` prints by default (about 15 lines): every
    figure is a key of summary.json (`--verbose` prints the full table)."""
    run = summary.get("run", {})
    stats = summary["stats"]["all"]

    def dist(metric: str, digits: int) -> str:
        s = stats.get(metric) or {}
        return (f"mean {_num(s.get('mean'), digits)}, p50 {_num(s.get('p50'), digits)}, "
                f"p95 {_num(s.get('p95'), digits)}")

    dropped = sum(run.get("dropped", {}).values())
    lines = [
        ("run", f"{run.get('policy', '?')} on "
                + (run["machine"] if "machine" in run else
                   f"{run.get('cluster', '?')} ({summary['total_nodes']:,} nodes)")
                + f", trace {run.get('trace', '?')}"),
        ("jobs", f"{summary['jobs']:,} simulated, {summary['started']:,} started"
                 + (f"; {dropped:,} not simulated (see summary.json run.dropped)"
                    if dropped else "")),
        ("makespan", f"{_num(summary['makespan_s'])} s"),
        ("utilisation", f"{summary['utilization']:.3f} (productive "
                        f"{summary['productive_utilization']:.3f}, submission window "
                        f"{_num(summary.get('utilization_window'), 3)})"),
        ("wait (s)", dist("wait_s", 0)),
        ("response (s)", dist("response_s", 0)),
        ("slowdown", dist("slowdown", 2)),
        ("bounded slowdown", dist("bounded_slowdown", 2)),
        ("preemptions", f"{summary['preemptions']:,} (ratio "
                        f"{summary['preemption_ratio']:.3f}), checkpoints "
                        f"{summary['checkpoints']:,}"),
        ("failures", f"{summary.get('node_failures', 0):,} node failures, "
                     f"{summary['failures']:,} job interruptions by them"),
        # Lost work is mostly preemption's (hybrid, real-time), not only failures'.
        ("lost work", f"{_num(summary['lost_node_h'], 1)} node-hours computed, then "
                      "thrown away (preempted without a checkpoint or back to the last "
                      "one, cancelled while running, or hit by a node failure)"),
        ("final states", ", ".join(f"{k} {v:,}" for k, v in summary["final_states"].items()
                                   if v) or "none"),
    ]
    width = max(len(k) for k, _ in lines)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in lines)
