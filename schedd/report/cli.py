"""`schedd report RUN_DIR [RUN_DIR ...] -o DIR` and `schedd report --sweep TABLE -o DIR`."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    rep = sub.add_parser(
        "report", help="an HTML page with figures of one run or several side by side",
        description="Write DIR/index.html and its PNGs: utilisation and queue over time, a "
        "Gantt chart per run, wait and bounded-slowdown distributions by class and "
        "category, a wait-ratio heatmap of each run against the first, and the summary "
        "table. With --sweep, plots of a `schedd sweep` table instead.")
    rep.add_argument("runs", nargs="*", metavar="RUN_DIR",
                     help="directories written by schedd simulate or schedd-replay")
    rep.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    rep.add_argument("--docs", default=None, metavar="URL",
                     help="where docs/ lives, for the metric links (default: this "
                     "checkout's docs/ when there is one, else no links)")
    rep.add_argument("--sweep", default=None, metavar="TABLE",
                     help="a sweep's results.csv: plot its metrics against its inputs")
    rep.add_argument("--metric", action="append", default=[], metavar="KEY",
                     help="with --sweep: a summary figure to plot (repeatable; default "
                     "mean_wait_s and utilization)")
    rep.add_argument("--by", action="append", default=[], metavar="INPUT",
                     help="with --sweep: the input on the x axis (repeatable; default: the "
                     "inputs that vary, seeds aside)")
    return rep


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..outputs import UsageError, staged_dir
    from .page import ReportError, build_report, build_sweep_report

    try:
        if args.sweep and args.runs:
            raise ReportError("give either run directories or --sweep, not both")
        # Written aside and renamed at the end: a bad run directory, a missing table or
        # Ctrl-C leaves no empty or half-drawn DIR (issue 34).
        with staged_dir(args.out) as out:
            if args.sweep:
                page = build_sweep_report(args.sweep, out, args.metric
                                          or ["mean_wait_s", "utilization"], args.by)
            else:
                page = build_report(args.runs, out, docs=args.docs)
    except (ReportError, UsageError) as err:
        print(f"schedd report: {err}", file=sys.stderr)
        return 2
    print(f"wrote {Path(args.out) / page.name}")
    return 0
