"""`schedd simulate`: replay a trace through a policy on virtual time (the offline
simulator, `schedd.sim`). `add_parser(subparsers)` adds the command, `run(args)` runs it."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from .core.cluster_spec import CLUSTER_FORMS
from .options import _at_least, add_engine_arguments, add_policy_arguments, engine_options_from
from .outputs import UsageError, staged_dir
from .trace_options import add_trace_selection, procs_per_node_line

SAMPLE_TRACE = "sample-lublin256-1000.swf"


def sample_path() -> str:
    """The bundled trace that `schedd simulate` (and `schedd-replay`) run by default."""
    from importlib import resources  # with tempfile, ~5 ms a run given --trace never needs

    return str(resources.files("schedd.data").joinpath(SAMPLE_TRACE))


def add_parser(sub: Any) -> argparse.ArgumentParser:
    sim = sub.add_parser(
        "simulate",
        help="replay a trace through a policy on virtual time",
        description="Replay an SWF/CWF trace through a policy as fast as possible; writes "
        "DIR/jobs.swf, DIR/jobs.csv and DIR/summary.json and prints a summary table.",
    )
    sim.add_argument("--trace", default=None,
                     help="SWF or CWF trace, plain or .gz (default: the bundled 1,000-job "
                     "excerpt of the Lublin 256-node trace)")
    sim.add_argument("--cluster", default=None,
                     help=f"machine: {CLUSTER_FORMS} (default: nodes:<MaxNodes of the trace>)")
    add_policy_arguments(sim, "")
    sim.add_argument("--seed", type=int, default=0, help="seed of the engine's RNG (failures)")
    sim.add_argument("--out", required=True, metavar="DIR", help="output directory")
    sim.add_argument("--lenient", action="store_true",
                     help="skip malformed trace lines (and report how many) instead of stopping")
    sim.add_argument("--strict", action="store_true",
                     help="stop with an error if any job of the trace would not be simulated "
                     "(too large, runtime <= 0, malformed, repeated id) or a value is outside "
                     "its field's usual range (kept as given otherwise) instead of warning")
    add_trace_selection(sim)
    sim.add_argument("--validate", action="store_true",
                     help="check every engine invariant after every instant (slow)")
    sim.add_argument("--general-engine", action="store_true",
                     help="run an EASY run on a node pool that uses no other mechanism "
                     "through the general engine too, not its fast path (same files, 3-4x "
                     "slower; docs/engine.md)")
    sim.add_argument("--no-progress", action="store_true", help="no progress bar")
    shown = sim.add_mutually_exclusive_group()
    shown.add_argument("--verbose", action="store_true",
                       help="print the full summary table (every metric by class and "
                       "category) instead of the short summary")
    shown.add_argument("--quiet", action="store_true", help="print no summary")
    shown.add_argument("--json", action="store_true",
                       help="print summary.json to stdout instead of the summary")
    sim.add_argument("--timeseries-step", type=_at_least(0), default=0.0, metavar="S",
                     help="timeseries.csv at every multiple of S virtual seconds (default 0: "
                     "one row per change of the machine's state)")
    sim.add_argument("--no-run-files", action="store_true",
                     help="write no segments.csv and timeseries.csv (a little faster)")
    add_engine_arguments(sim)
    return sim


def run(args: argparse.Namespace) -> int:
    from . import heap
    from .core.cluster import NodePool
    from .core.cluster_spec import parse_cluster
    from .metrics import format_summary
    from .policies import make_policy
    from .sim import describe_run, format_brief, max_job_nodes, simulate, write_outputs
    from .traces import TraceError, normalize, read_trace
    from .traces.normalize import drop_line, kept_note, select
    from .traces.swf import unusual_line

    try:  # SCHEDD_GC_THRESHOLDS (schedd/heap.py), before any work
        thresholds = heap.thresholds_from(os.environ.get(heap.ENV, ""))
    except ValueError as err:
        raise UsageError(str(err)) from None
    heap.keep_freed_memory()  # a batch run: reuse freed memory, no page faults for it
    path = args.trace or sample_path()
    raw = read_trace(path, lenient=args.lenient)
    slurm = _slurm_setup(args)
    cluster = slurm.cluster if slurm else (
        parse_cluster(args.cluster) if args.cluster else None)
    trace = normalize(raw, max_nodes=max_job_nodes(cluster) if cluster else None,
                      procs_per_node=1 if slurm else args.procs_per_node,
                      lenient=args.lenient)
    said = procs_per_node_line("schedd", path, raw, trace, args.procs_per_node)
    if said:
        print(said, file=sys.stderr)
    if raw.unusual and args.strict:  # read again to refuse the first one at its line
        read_trace(path, strict=True)
    unusual = unusual_line(raw)
    if unusual:  # kept as given (real logs' "unknown", "unlimited"): said in one line
        print(f"schedd: {unusual}", file=sys.stderr)
    del raw  # every column of every line: the normalized trace is all the run needs
    if cluster is None:
        cluster = NodePool(trace.max_nodes)
    trace = select(trace, start=args.start, until=args.until, limit=args.limit)
    jobs = None
    if slurm:
        trace, jobs = slurm.prepare(trace)
        for line in jobs.warnings:
            print(f"schedd: warning: {line}", file=sys.stderr)
    dropped = drop_line(trace, path)
    unwanted = drop_line(trace, path, selected=False)  # --strict: not what was asked for
    if unwanted and args.strict:
        raise TraceError(f"{unwanted} (--strict)")
    if dropped:
        print(f"schedd: warning: {dropped}", file=sys.stderr)
    note = kept_note(trace, path)
    if note:
        print(f"schedd: {note}", file=sys.stderr)
    policy_name = args.policy or ("slurm" if slurm else "easy")
    policy = make_policy(policy_name, args.opt, cluster)
    engine_options = engine_options_from(args, policy)
    if slurm and policy_name == "slurm":
        from .slurm.second_order import read_orders

        said = slurm.bind(policy, jobs, trace.header.unix_start_time, trace)
        said = read_orders(slurm, policy, trace, said)
        if said:
            print(f"schedd: {said}", file=sys.stderr)
        engine_options = dataclasses.replace(engine_options,
                                             **policy.engine_overrides())  # type: ignore[attr-defined]
    if slurm:
        for line in slurm.warnings():
            print(f"schedd: warning: {line}", file=sys.stderr)
    # The files go to a hidden folder that becomes --out once all are written: a run that
    # fails (a policy error, Ctrl-C) leaves no new or half-written folder (issue 34).
    with staged_dir(args.out) as out:
        progress, close = _progress_bar(len(trace), args.no_progress)
        heap.settle(thresholds, collect=False)  # what is loaded is never scanned again
        try:
            run = simulate(trace, cluster, policy, seed=args.seed,
                           engine_options=engine_options, check_invariants=args.validate,
                           progress=progress, record=not args.no_run_files,
                           general=args.general_engine)
        finally:
            close()
        description = describe_run(path, trace, cluster, policy, args.seed, engine_options)
        summary = write_outputs(out, trace, run, description, args.timeseries_step)
    if args.json:
        print(json.dumps(summary, indent=2, allow_nan=False))
        return 0
    if args.verbose:
        print(format_summary(summary))
    elif not args.quiet:
        print(format_brief(summary))
    if not args.quiet:
        files = "" if args.no_run_files else ", segments.csv, timeseries.csv"
        print(f"wrote {args.out}/jobs.swf, jobs.csv, summary.json{files}")
    return 0


def _slurm_setup(args: argparse.Namespace) -> Any:
    """The machine a --slurm-conf describes (None without one)."""
    if args.slurm_conf is None:
        if args.slurm_assoc or args.slurm_qos:
            raise UsageError("--slurm-assoc and --slurm-qos need --slurm-conf")
        return None
    if args.cluster:
        raise UsageError("--cluster and --slurm-conf both name the machine; give one")
    from .slurm.assoc import AssocError
    from .slurm.conf import SlurmConfError
    from .slurm.machine import SlurmSetup
    from .slurm.qos import QosError

    try:
        return SlurmSetup.read(args.slurm_conf, args.slurm_assoc, args.slurm_qos)
    except (SlurmConfError, AssocError, QosError) as err:
        raise UsageError(str(err)) from None


def _progress_bar(total: int, disabled: bool) -> tuple[Any, Any]:
    """A tqdm bar on a terminal; nothing when stderr is not a terminal."""
    if disabled or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="job", file=sys.stderr, leave=False)

    def update(done: int) -> None:
        bar.update(done - bar.n)

    return update, bar.close
