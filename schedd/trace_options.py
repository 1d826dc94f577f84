"""The trace-reading options `schedd simulate` and `schedd-replay` share (which jobs of a
trace, and how its processor counts read as nodes), and the one line each says when it
reads processors as nodes. One place, so the two commands cannot drift apart."""

from __future__ import annotations

import argparse
import os
from typing import Any


def whole_at_least_1(text: str) -> int:
    """An argparse type: a whole number >= 1, else a one-sentence error."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def add_trace_selection(parser: argparse.ArgumentParser, *, verb: str = "") -> None:
    """--procs-per-node, --from, --until and --limit; `verb` starts the --limit help
    ("replay only the first N jobs")."""
    parser.add_argument("--procs-per-node", type=whole_at_least_1, default=None,
                        metavar="K",
                        help="the trace counts processors; K per node (nodes = ceil(procs / "
                        "K)); default: MaxProcs // MaxNodes when the header gives both and "
                        "they differ (said in one line), else 1")
    parser.add_argument("--from", dest="start", type=float, default=None, metavar="T",
                        help="only jobs submitted at or after trace time T")
    parser.add_argument("--until", type=float, default=None, metavar="T",
                        help="only jobs submitted before trace time T")
    parser.add_argument("--limit", type=whole_at_least_1, default=None, metavar="N",
                        help=f"{verb or 'only'} the first N jobs (after --from/--until)")


def procs_per_node_line(prog: str, path: str, raw: Any, trace: Any,
                        asked: int | None) -> str | None:
    """What to say when the header made processors read as nodes (None: nothing)."""
    if asked is not None or trace.procs_per_node == 1:
        return None
    k = trace.procs_per_node
    return (f"{prog}: {os.path.basename(path)}'s header gives MaxNodes "
            f"{raw.header.max_nodes} and MaxProcs {raw.header.max_procs}: reading its "
            f"processor counts at {k} per node (--procs-per-node {k}; --procs-per-node 1 "
            "reads them as nodes)")
