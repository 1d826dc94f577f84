"""`schedd sweep [FILE.toml] [flags] -o DIR`: traces x clusters x workloads x runs x
options x engine flags x seeds, each cell one cached simulation, on dask.distributed."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    sw = sub.add_parser(
        "sweep", help="parameter sweeps on Dask, cached and resumable (docs/sweep.md)",
        description="Simulate every combination of the sweep's axes, one cell per "
        "simulation, on a Dask LocalCluster (or --scheduler). Each cell is cached under its "
        "content hash (trace bytes, inputs, code version), so an interrupted sweep resumes "
        "and an extended one runs only its new cells. Writes DIR/results.csv and "
        "DIR/results.parquet (one row per cell).")
    sw.add_argument("file", nargs="?", default=None, metavar="FILE.toml",
                    help="sweep file (flags below add to nothing in it: use one or the other)")
    sw.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    sw.add_argument("--trace", action="append", default=[], help="trace (repeatable)")
    sw.add_argument("--run", action="append", default=[], metavar="SPEC",
                    help="'POLICY [KEY=VALUE ...] [--engine-flag V ...]' (repeatable)")
    sw.add_argument("--seeds", default="", metavar="S1,S2",
                    help="seeds (engine RNG and workload transforms; default 0)")
    sw.add_argument("--cluster", action="append", default=[], help="cluster (repeatable)")
    sw.add_argument("--opt", action="append", default=[], metavar="KEY=V1,V2",
                    help="a policy-option axis added to every run (repeatable)")
    sw.add_argument("--engine", action="append", default=[], metavar="FLAG=V1,V2",
                    help="an engine-flag axis, e.g. mtbf=0,50 (repeatable)")
    sw.add_argument("--workload", action="append", default=[], metavar="KIND:K=V,...",
                    help="a workload transform as one axis value: realtime:percent=10, "
                    "accuracy:alpha=0.5, hybrid:od_share=0.1 (repeatable)")
    sw.add_argument("--cache", default=None, metavar="DIR",
                    help="cell cache (default DIR/cache)")
    sw.add_argument("--workers", type=int, default=2,
                    help="workers of the local Dask cluster (default 2; 0 = run in this "
                    "process without Dask)")
    sw.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="use this existing Dask cluster instead of a local one")
    sw.add_argument("--scatter", action="store_true",
                    help="send trace bytes to the workers once (workers that cannot read "
                    "the client's paths)")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    return sw


def run(args: argparse.Namespace) -> int:
    from ..outputs import make_parents, remove_empty, staged_file, writable_dir
    from .cells import SweepError, expand
    from .execute import run_cells
    from .runspec import RunSpecError
    from .spec import spec_from_flags, spec_from_toml
    from .table import write_csv, write_parquet

    try:
        if args.file and (args.trace or args.run):
            raise SweepError("give a sweep file or --trace/--run flags, not both")
        spec = (spec_from_toml(args.file) if args.file else
                spec_from_flags(args.trace, args.run, args.seeds, args.cluster, args.opt,
                                args.engine, args.workload))
        cells = expand(spec)
        _check_runs(spec.runs)
    except (SweepError, RunSpecError) as err:
        print(f"schedd sweep: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    cache = args.cache or str(out / "cache")
    for folder in {args.out, cache}:  # one sentence now, not a traceback later
        writable_dir(folder)
    # A sweep that fails (no scheduler, Ctrl-C) removes the folders it made, but not the
    # cells it cached in them: an interrupted sweep resumes from those (issue 34).
    made = make_parents(str(out / "x")) + make_parents(os.path.join(cache, "x"))
    try:
        rows = run_cells(cells, cache, workers=args.workers, scheduler=args.scheduler,
                         scatter=args.scatter, progress=not args.no_progress)
        for name, write in (("results.csv", write_csv), ("results.parquet", write_parquet)):
            with staged_file(out / name) as part:
                write(Path(part), rows)
    except BaseException:
        for top in made:
            for folder, _, _ in os.walk(top, topdown=False):
                remove_empty([folder])
        raise
    failed = [r for r in rows if r.get("status") != "ok"]
    for r in failed:
        inputs = ", ".join(f"{k[3:]}={v}" for k, v in r.items() if k.startswith("in_"))
        print(f"schedd sweep: cell failed ({inputs}): {r.get('error')}", file=sys.stderr)
    print(f"wrote {out}/results.csv and results.parquet: {len(rows)} cells, "
          f"{len(rows) - len(failed)} ok, {len(failed)} failed")
    return 1 if failed else 0


def _check_runs(runs: list[str]) -> None:
    """Policy names and engine flags are checked before anything runs (options depend on
    the cluster and are checked per cell)."""
    from ..policies import POLICIES
    from .runspec import RunSpecError, engine_args, parse_run

    for text in runs:
        spec = parse_run(text)
        if spec.policy not in POLICIES:
            raise RunSpecError(f"run {text!r}: unknown policy {spec.policy!r}; valid "
                               f"policies: {', '.join(sorted(POLICIES))}")
        engine_args(spec)
