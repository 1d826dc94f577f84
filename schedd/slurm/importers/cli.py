"""`schedd import slurm|jobcomp|pbs FILE -o TRACE`: a resource manager's log as a trace
(docs/import.md). `add_parser(subparsers)` adds the command, `run(args)` runs it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...durations import DurationError, parse_duration
from ...outputs import UsageError, writable_file

HELP = "read a Slurm (sacct, jobcomp) or PBS accounting log into a trace"
_FORMATS = {
    "slurm": "sacct --parsable2 output with its header line (any columns that include a job "
    "id, Submit, Start, End or Elapsed, Timelimit and NNodes or NCPUS)",
    "jobcomp": "Slurm's jobcomp/filetxt log (JobId=... UserId=... lines)",
    "pbs": "a PBS/Torque accounting log (MM/DD/YYYY HH:MM:SS;E;jobid;key=value ...); E "
    "records are jobs",
}


def add_parser(sub: Any) -> argparse.ArgumentParser:
    imp = sub.add_parser(
        "import", help=HELP,
        description="Read a resource manager's log into a trace that keeps the original "
        "job ids, users, accounts, partitions, QOS, states, eligible and cancel times, "
        "dependencies and priorities (fields 32-40 and the names header of "
        "docs/trace-format.md). Says in one line what was not imported and why. See "
        "docs/import.md.")
    imp.add_argument("format", choices=sorted(_FORMATS), metavar="FORMAT",
                     help="; ".join(f"{k}: {v}" for k, v in _FORMATS.items()))
    imp.add_argument("log", metavar="FILE", help="the log (.gz: gzip)")
    imp.add_argument("-o", "--out", required=True, metavar="TRACE",
                     help="the trace to write (.gz: gzip)")
    imp.add_argument("--tz", default="UTC", metavar="ZONE",
                     help="the time zone of the log's wall-clock times, an IANA name such "
                     "as Europe/Madrid (default: UTC)")
    imp.add_argument("--nodes", type=_positive, default=None, metavar="N",
                     help="the machine's nodes (MaxNodes; default: the largest job's)")
    imp.add_argument("--cpus-per-node", type=_positive, default=None, metavar="C",
                     help="CPUs per node (MaxProcs = N x C; default: the largest job's CPUs)")
    imp.add_argument("--max-time", action="append", default=[], type=_max_time,
                     metavar="[PARTITION=]DURATION",
                     help="the time limit of jobs whose limit is UNLIMITED or their "
                     "partition's (Partition_Limit), for one partition or (without "
                     "PARTITION=) all; repeatable (default: requested time -1, counted)")
    imp.add_argument("--lenient", action="store_true",
                     help="skip lines that cannot be read (and count them) instead of "
                     "stopping at the first")
    imp.add_argument("--quiet", action="store_true", help="print nothing when all is well")
    return imp


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _max_time(text: str) -> tuple[str, float]:
    partition, eq, duration = text.rpartition("=")
    try:
        seconds = parse_duration(duration, "a time limit")
    except DurationError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive time limit, got {duration!r}")
    return (partition if eq else ""), seconds


def run(args: argparse.Namespace) -> int:
    from ...traces.swf import write_trace
    from . import Machine, import_log
    from .fields import FieldError, zone

    writable_file(args.out)
    try:
        tz = zone(args.tz)
    except FieldError as err:
        raise UsageError(f"--tz: {err}") from None
    machine = Machine(nodes=args.nodes, cpus_per_node=args.cpus_per_node,
                      max_time=dict(args.max_time))
    done = import_log(args.format, args.log, tz=tz, lenient=args.lenient, machine=machine,
                      zone_name=args.tz)
    write_trace(args.out, done.trace)
    if not args.quiet:
        header = done.trace.header
        size = (f"MaxNodes {header.max_nodes or 'unknown'}, MaxProcs "
                f"{header.max_procs or 'unknown'}"
                + ("" if args.nodes else " (from the largest job; --nodes and "
                   "--cpus-per-node give the machine's)"))
        print(f"schedd import: {done.counts.line(len(done.trace), args.log)}; written to "
              f"{args.out} ({size})", file=sys.stderr)
    return 0
