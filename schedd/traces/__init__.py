"""Job traces: SWF / CWF / schedd-extended files in, a replayable job queue out.

See docs/trace-format.md for the file format and the normalisation rules.
"""

from schedd.traces.normalize import NormalizedTrace, normalize
from schedd.traces.swf import (
    COLUMN_NAMES,
    EccCommand,
    Trace,
    TraceError,
    TraceHeader,
    read_trace,
    write_trace,
)

__all__ = [
    "COLUMN_NAMES",
    "EccCommand",
    "NormalizedTrace",
    "Trace",
    "TraceError",
    "TraceHeader",
    "normalize",
    "read_trace",
    "write_trace",
]
