"""Resource-manager logs into traces: `sacct --parsable2` output, Slurm's jobcomp/filetxt
log and PBS/Torque accounting logs (docs/import.md).

`import_log(kind, path, ...)` reads one log and returns the trace (with fields 32-40 and the
names header of docs/trace-format.md) and the counts of what was skipped or changed; `schedd
import` (cli.py) writes it. Each format has its own reader module; build.py holds what they
share. Imports schedd.traces and schedd.durations only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from ...traces.swf import Trace, _read_bytes
from .build import Counts, LogJob, Machine, build_trace
from .fields import LogError
from .jobcomp import read_jobcomp
from .pbs import read_pbs
from .sacct import read_sacct

Reader = Callable[..., list[LogJob]]
READERS: dict[str, Reader] = {"slurm": read_sacct, "jobcomp": read_jobcomp, "pbs": read_pbs}
FORMAT_NAMES = {"slurm": "sacct --parsable2 output", "jobcomp": "Slurm jobcomp/filetxt log",
                "pbs": "PBS/Torque accounting log"}


@dataclass
class Imported:
    trace: Trace
    counts: Counts


def import_log(kind: str, path: str, *, tz: dt.tzinfo = dt.UTC, lenient: bool = False,
               machine: Machine | None = None, zone_name: str = "UTC") -> Imported:
    """Read the log at `path` (gzip if .gz) of format `kind` (READERS) into a trace.
    LogError (a TraceError: FILE:LINE: ...) for a line that cannot be read, unless
    `lenient`, which skips and counts such lines."""
    raw = _read_bytes(path)
    text = raw.decode("utf-8", "surrogateescape")
    counts = Counts()
    jobs = READERS[kind](path, text, tz=tz, lenient=lenient, counts=counts)
    machine = machine or Machine()
    lines = ["; Version: 2.2",
             f"; Conversion: schedd import {kind} from {_base(path)} ({FORMAT_NAMES[kind]})",
             f"; TimeZoneString: {zone_name}"]
    trace = build_trace(jobs, counts, machine, path=path, header_lines=lines)
    if len(trace) == 0:
        raise LogError.at(path, None, "expected at least one finished job, found none ("
                          + counts.line(0, path) + ")")
    trace.header.lines.append(f"; Note: {counts.line(len(trace), path)}")
    return Imported(trace, counts)


def _base(path: str) -> str:
    import os

    return os.path.basename(path)


__all__ = ["READERS", "Counts", "Imported", "LogError", "LogJob", "Machine", "import_log"]
