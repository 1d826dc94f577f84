"""The limits on every number and string a job, request, notice, config file or trace line
can carry: one table, shared by the gRPC service, MQTT notices, `schedd serve`'s options
and config file, and the trace reader (docs/daemon.md, "Limits on every field").

Why limits at all: the engine does float arithmetic on these values (checkpoint counts as
work / interval, transfer times as nodes x GB / bandwidth, times plus durations). A value
that is finite but absurd (an interval of 5e-324 s, 1e308 GB per node) overflows there,
in the engine thread, long after the request was acknowledged. The ranges below are what a
real resource manager accepts and keep every engine result far from overflow: times stay
below 1e10 s (year 2286 as a Unix time), durations below 1e9 s (31 years), node counts
below 1e7, so a sum or product of any two is still an exact-enough double.

This module sits below every command and driver: it imports nothing from schedd.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_TIME = 1e10  # s: absolute virtual times (a Unix time up to year 2286)
MAX_DURATION = 1e9  # s: walltime, runtime, setup, intervals, time ECCs (31.7 years)
MAX_NODES = 10_000_000  # nodes of one job or one machine
MAX_PROCS = 2**31 - 1  # processors in a trace's procs fields and MaxProcs
MAX_JOB_ID = 2**53  # ids travel as exact doubles (GetResults, jobs.swf)
MAX_ACCOUNT = 2**31 - 1  # user, project and queue numbers (-1: unknown)
MIN_CKPT_INTERVAL = 1.0  # s of compute between periodic checkpoints
MAX_CKPT_GB_PER_NODE = 10_000.0  # GB of checkpoint data per node (10 TB)
MAX_SPEEDUP = 1e6  # accelerated clock: virtual seconds per wall second
MAX_REQUEST_ID = 128  # characters of a client request id
MAX_NAME = 256  # characters of a user, owner or other name
MAX_STRING = 1024  # characters of any other string field
MAX_LIST = 64  # entries of a repeated filter field (states, classes, kinds)
MAX_PAGE = 1000  # jobs per ListJobs page
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one gRPC message received (a SubmitJobs batch)


class LimitError(ValueError):
    """A value outside its documented range; the message is one sentence."""


@dataclass(frozen=True)
class Limit:
    """The range of one numeric field: low..high (low excluded when `low_open`), whole
    numbers only when `integer`; `absent` values mean "not given" and always pass."""

    low: float
    high: float
    unit: str = ""
    low_open: bool = False
    integer: bool = False
    absent: tuple[float, ...] = ()
    # The one-step acceptance's lower bound (`quick_range`): the float just below a closed
    # low, so the bound itself passes too; the low itself when it is excluded.
    quick_low: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "quick_low", self.low if self.low_open
                           else math.nextafter(self.low, -math.inf))

    def accepts(self, value: float) -> bool:
        """Python compares ints and floats exactly: 2**53 + 1 is above 2.0**53."""
        if value in self.absent:
            return True
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if value > self.high or value < self.low or (self.low_open and value == self.low):
            return False
        return not self.integer or isinstance(value, int) or value.is_integer()

    def describe(self) -> str:
        """The range as a phrase: 'a number in (0, 1e+09] s'."""
        what = "a whole number" if self.integer else "a number"
        left = "(" if self.low_open else "["
        unit = f" {self.unit}" if self.unit else ""
        extra = "".join(f" or {_num(a)}" for a in self.absent)
        return f"{what} in {left}{_num(self.low)}, {_num(self.high)}]{unit}{extra}"


def _num(x: float) -> str:
    """Whole numbers exactly (2147483647), round powers of ten short (1e+10)."""
    short = f"{x:g}"
    if not float(x).is_integer() or (abs(x) >= 1e8 and float(short) == x):
        return short
    return str(int(x))


_TIME = Limit(0.0, MAX_TIME, "s")
_DURATION_POS = Limit(0.0, MAX_DURATION, "s", low_open=True)
_DURATION = Limit(0.0, MAX_DURATION, "s")
_NODES = Limit(1, MAX_NODES, "nodes", integer=True)
_ACCOUNT = Limit(-1, MAX_ACCOUNT, integer=True)
_INTERVAL = Limit(MIN_CKPT_INTERVAL, MAX_DURATION, "s")

# Every numeric field: name (as in messages: protobuf, MQTT, config, trace) -> (its
# range, where it is used). docs/daemon.md shows this table (tests keep the two equal).
ROWS: dict[str, tuple[Limit, str]] = {
    "job_id": (Limit(1, MAX_JOB_ID, integer=True), "SubmitJob(s) explicit id (0: assigned), "
               "AdvanceNotice"),
    "nodes": (_NODES, "SubmitJob(s), AdvanceNotice, MQTT notice (and at most what the "
              "machine gives one job)"),
    "walltime": (_DURATION_POS, "SubmitJob(s), AdvanceNotice, MQTT notice"),
    "runtime": (_DURATION, "SubmitJob(s); 0 = the walltime"),
    "setup": (_DURATION, "SubmitJob(s)"),
    "submit_time": (_TIME, "SubmitJob(s); earlier than now means now"),
    "requested_start": (_TIME, "SubmitJob(s), dedicated jobs; not in the past"),
    "ckpt_interval": (_INTERVAL, "SubmitJob(s), compute seconds between checkpoints"),
    "ckpt_gb_per_node": (Limit(0.0, MAX_CKPT_GB_PER_NODE, "GB", low_open=True),
                         "SubmitJob(s), checkpoint size"),
    "user": (_ACCOUNT, "SubmitJob(s) trace user number (-1 unknown)"),
    "project": (_ACCOUNT, "SubmitJob(s)"),
    "queue": (_ACCOUNT, "SubmitJob(s)"),
    "notice_time": (_TIME, "AdvanceNotice, MQTT notice; earlier than now means now"),
    "expected_arrival": (_TIME, "AdvanceNotice, MQTT notice; not before the notice"),
    "time": (_TIME, "ElasticControl; earlier than now means now"),
    "amount_seconds": (_DURATION_POS, "ElasticControl ET, RT"),
    "amount_nodes": (_NODES, "ElasticControl EP, RP"),
    "to": (_TIME, "AdvanceClock `to`, and where `by` lands"),
    "by": (Limit(0.0, MAX_TIME, "s", low_open=True), "AdvanceClock"),
    "page_size": (Limit(1, MAX_PAGE, integer=True), "ListJobs (0 = 100)"),
    "start_time": (_TIME, "serve --start-time"),
    "speedup": (Limit(0.0, MAX_SPEEDUP, low_open=True), "serve --speedup"),
    "tick": (Limit(0.0, 3600.0, "s", low_open=True), "serve --tick"),
    "budget": (Limit(0.0, 3600.0, "s", low_open=True), "serve --budget"),
    "checkpoint_timeout": (_DURATION, "serve --checkpoint-timeout"),
    "seed": (Limit(0, 2**63 - 1, integer=True), "serve --seed"),
    "port": (Limit(0, 65535, integer=True), "serve --metrics-port"),
    "ckpt_interval_option": (_INTERVAL, "serve --ckpt-interval"),
    "ckpt_seconds": (_DURATION, "serve --ckpt-seconds"),
    "warning": (_DURATION, "serve --warning"),
    "mtbf": (Limit(0.0, 1e6, "hours"), "serve --mtbf"),
    "daly_mtbf": (Limit(0.0, 1e6, "hours", low_open=True), "serve --daly-mtbf"),
    "mttr": (Limit(0.0, 1e6, "hours", low_open=True), "serve --mttr"),
    "app_overhead": (Limit(0.0, 100.0, "%", low_open=True), "serve --app-overhead"),
    "ecc_max": (Limit(0, MAX_NODES, integer=True), "serve --ecc-max"),
    "trace.submit": (_TIME, "trace field 2"),
    "trace.duration": (Limit(0.0, MAX_DURATION, "s", absent=(-1.0,)),
                       "trace fields 3, 4, 6, 9, 18, 26, 30 (wait, runtime, cpu, requested "
                       "time, think, setup, estimated runtime)"),
    "trace.time": (Limit(0.0, MAX_TIME, "s", absent=(-1.0,)),
                   "trace fields 19, 27, 28, 32, 33 (requested start, notice, arrival, "
                   "eligible, cancel)"),
    "trace.procs": (Limit(0, MAX_PROCS, integer=True, absent=(-1.0,)),
                    "trace fields 5, 8, 25, 29, 34 (processors, requested, minimum, notice, "
                    "nodes)"),
    "trace.ckpt_gb": (Limit(0.0, MAX_CKPT_GB_PER_NODE, "GB", low_open=True, absent=(-1.0,)),
                      "trace field 24"),
    "trace.ckpt_interval": (Limit(MIN_CKPT_INTERVAL, MAX_DURATION, "s", absent=(-1.0, 0.0)),
                            "trace field 31"),
    "trace.amount_seconds": (_DURATION, "trace field 21 of ET, RT lines"),
    "trace.amount_nodes": (Limit(0, MAX_NODES, integer=True), "trace field 21 of EP, RP "
                           "lines"),
    "header.max_nodes": (Limit(1, MAX_NODES, integer=True), "trace header MaxNodes "
                         "(<= 0: unknown)"),
    "header.max_procs": (Limit(1, MAX_PROCS, integer=True), "trace header MaxProcs "
                         "(<= 0: unknown)"),
}
LIMITS: dict[str, Limit] = {name: row[0] for name, row in ROWS.items()}
LIMITS["min_nodes"] = _NODES  # malleable jobs; also at most `nodes`

# Every string field, by protobuf field name: the longest value in characters.
STRING_LIMITS: dict[str, int] = {
    "request_id": MAX_REQUEST_ID,
    "owner": MAX_NAME,
    "page_token": 20,  # a job id as decimal digits
    "kinds": 64,  # each WatchEvents kind
}


def markdown_table() -> str:
    """The numeric rows as docs/daemon.md shows them."""
    lines = ["| field | accepted | where |", "|---|---|---|"]
    for name, (limit, where) in ROWS.items():
        lines.append(f"| `{name}` | {limit.describe()} | {where} |")
    return "\n".join(lines)


_NUMBERS = (int, float)  # a tuple: `int | float` would build a union at every call


def quick_range(name: str) -> tuple[float, float]:
    """(lo, hi): a plain number of field `name`'s own type (an int for a whole-number
    field) with lo < value <= hi is acceptable without further checks; anything else
    needs `problem`. A closed lower bound is moved to the float just below it, so the
    bound itself (runtime 0, the default) passes in the one comparison too. NaN and the
    infinities fail it. The submission handler checks seven fields this way (issue 21)."""
    limit = LIMITS[name]
    return limit.quick_low, limit.high


def problem(name: str, value: Any, label: str | None = None) -> str | None:
    """Why `value` is not acceptable for field `name` (one sentence), or None."""
    limit = LIMITS[name]
    kind = type(value)
    # Most values are plain numbers inside the range: accept them in one step (quick_range),
    # without the general checks below. Anything else takes the general path.
    if ((kind is int or (kind is float and not limit.integer))
            and limit.quick_low < value <= limit.high):
        return None
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        return f"{label or name} must be a number, got {_show(value)}"
    if not limit.accepts(value):
        return f"{label or name} must be {limit.describe()}, got {_show(value)}"
    return None


def check(name: str, value: Any, label: str | None = None) -> Any:
    """`value` if it is within field `name`'s limits, else LimitError (one sentence)."""
    why = problem(name, value, label)
    if why is not None:
        raise LimitError(why)
    return value


def text_problem(name: str, text: str) -> str | None:
    """Why string field `name` is too long, or None."""
    longest = STRING_LIMITS.get(name, MAX_STRING)
    if len(text) > longest:
        return f"{name} must be at most {longest} characters, got {len(text)}"
    return None


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return shown(value)


def shown(value: Any, width: int = 40) -> str:
    """repr(value) cut to `width` characters: an error echoes what it refuses, not 1 MB."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."
