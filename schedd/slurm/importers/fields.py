"""Values as resource managers print them: timestamps, durations, time limits, counts.

Each parser takes the text of one field and returns its value, or raises FieldError with
what was expected; the format readers add the file, line and column (LogError). The
formats are Slurm 22.05's own (src/common/parse_time.c, src/sacct/print.c) and PBS/Torque's
accounting records; docs/import.md lists them.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ...traces.swf import TraceError

UNLIMITED = "unlimited"  # a time limit Slurm prints as UNLIMITED (INFINITE)
PARTITION_LIMIT = "partition"  # Partition_Limit (NO_VAL): the partition's MaxTime
NO_VAL = 4294967294  # Slurm's "not set" (0xfffffffe) in uint32 fields
INFINITE = 4294967295  # Slurm's "unlimited" (0xffffffff)


class LogError(TraceError):
    """A log line that cannot be read: "FILE:LINE: expected ... in column C, found ..."."""


class FieldError(ValueError):
    """A field's text is not what its column holds; the message is the 'expected' part."""


def show(text: str, width: int = 40) -> str:
    """repr of a field's text, cut: an error echoes what it refuses, not a whole line."""
    return repr(text if len(text) <= width else text[:width - 3] + "...")


# ------------------------------------------------------------------------------ time zones


def zone(name: str) -> dt.tzinfo:
    """The zone of the log's wall-clock times (`--tz`): an IANA name such as
    Europe/Madrid, or UTC."""
    if name.upper() == "UTC":
        return dt.UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise FieldError(f"expected a time zone name such as UTC or Europe/Madrid "
                         f"(IANA tz database), found {show(name)}") from None


_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)")
_PBS_STAMP = re.compile(r"(\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d)")


def iso_time(text: str, tz: dt.tzinfo) -> float:
    """Seconds since the epoch of `2026-11-28T14:07:30` read as a wall time in `tz`."""
    m = _ISO.fullmatch(text)
    if m is None:
        raise FieldError("YYYY-MM-DDTHH:MM:SS")
    year, month, day, hour, minute, second = (int(g) for g in m.groups())
    return _hour_start(tz, year, month, day, hour) + _minutes_seconds(minute, second)


def pbs_stamp(text: str, tz: dt.tzinfo) -> float:
    """Seconds since the epoch of a PBS record's `MM/DD/YYYY HH:MM:SS` in `tz`."""
    m = _PBS_STAMP.fullmatch(text)
    if m is None:
        raise FieldError("MM/DD/YYYY HH:MM:SS")
    month, day, year, hour, minute, second = (int(g) for g in m.groups())
    return _hour_start(tz, year, month, day, hour) + _minutes_seconds(minute, second)


def _minutes_seconds(minute: int, second: int) -> int:
    if minute > 59 or second > 59:
        raise FieldError("a time of day within 23:59:59")
    return 60 * minute + second


@lru_cache(maxsize=4096)
def _hour_start(tz: dt.tzinfo, year: int, month: int, day: int, hour: int) -> float:
    """The epoch seconds of the start of one local hour (a log's times come in runs of the
    same hour: this makes reading them about ten times cheaper than a datetime each).
    A local hour that happens twice (clocks going back) is read as the first; one that
    does not happen (clocks going forward) with the offset before the change."""
    try:
        return dt.datetime(year, month, day, hour, tzinfo=tz).timestamp()
    except ValueError:
        raise FieldError("a real calendar date and an hour within 00-23") from None


# ------------------------------------------------------------------------------ durations

_DAYS = re.compile(r"(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?")
_CLOCK = re.compile(r"(\d+)(?::(\d+)(?::(\d+))?)?")


def slurm_duration(text: str, bare_minutes: bool = True) -> int:
    """Seconds of a Slurm duration: `D-HH:MM:SS`, `D-HH:MM`, `D-HH`, `HH:MM:SS`,
    `MM:SS` and, with bare_minutes, `MM` (time_str2secs in src/common/parse_time.c)."""
    m = _DAYS.fullmatch(text)
    if m is not None:
        d, h, mi, s = (int(g) if g else 0 for g in m.groups())
        return ((d * 24 + h) * 60 + mi) * 60 + s
    m = _CLOCK.fullmatch(text)
    if m is None or (m.group(2) is None and not bare_minutes):
        raise FieldError("a duration D-HH:MM:SS, HH:MM:SS or MM:SS")
    a, b, c = m.groups()
    if c is not None:
        return (int(a) * 60 + int(b)) * 60 + int(c)
    if b is not None:
        return int(a) * 60 + int(b)
    return int(a) * 60


def slurm_limit(text: str) -> int | str:
    """A Slurm time limit in seconds, or UNLIMITED / PARTITION_LIMIT."""
    word = text.strip()
    if word.upper() in ("UNLIMITED", "INFINITE"):
        return UNLIMITED
    if word == "Partition_Limit":
        return PARTITION_LIMIT
    try:
        return slurm_duration(word)
    except FieldError:
        raise FieldError("a time limit D-HH:MM:SS, HH:MM:SS, MM:SS, minutes, UNLIMITED or "
                         "Partition_Limit") from None


def slurm_limit_minutes(text: str) -> int | str:
    """A time limit given in whole minutes (TimelimitRaw; jobcomp's TimeLimit) as seconds,
    or UNLIMITED / PARTITION_LIMIT (NO_VAL, as jobcomp prints it when no partition gave
    one)."""
    word = text.strip()
    if word.upper() in ("UNLIMITED", "INFINITE"):
        return UNLIMITED
    if word == "Partition_Limit":
        return PARTITION_LIMIT
    if not word.isdigit():
        raise FieldError("a time limit in minutes, UNLIMITED or Partition_Limit")
    minutes = int(word)
    if minutes == INFINITE:
        return UNLIMITED
    if minutes == NO_VAL:
        return PARTITION_LIMIT
    return 60 * minutes


_PBS_CLOCK = re.compile(r"(?:(?:(?:(\d+):)?(\d+):)?(\d+):)?(\d+(?:\.\d*)?)")


def pbs_duration(text: str) -> float:
    """Seconds of a PBS duration `[[[D:]HH:]MM:]SS` (walltime, resources_used.walltime)."""
    m = _PBS_CLOCK.fullmatch(text)
    if m is None:
        raise FieldError("a duration [[HH:]MM:]SS")
    d, h, mi, s = m.groups()
    return ((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60 + float(s)


# ------------------------------------------------------------------------------ numbers

_SCALED = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)")
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def count(text: str) -> int:
    """A whole number as sacct prints counts: `16`, or scaled by 1024 where exact: `2K`,
    `1.50K` (convert_num_unit in src/common/slurm_protocol_api.c; ReqNodes)."""
    m = _SCALED.fullmatch(text)
    if m is None:
        raise FieldError("a whole number (or one scaled by K, M, G: 2K)")
    return round(float(m.group(1)) * _SCALE[m.group(2)])


def whole(text: str) -> int:
    if not text.isdigit():
        raise FieldError("a whole number")
    return int(text)


def number(text: str) -> float:
    """A finite decimal number (Priority)."""
    try:
        value = float(text)
    except ValueError:
        raise FieldError("a number") from None
    if value != value or value in (float("inf"), float("-inf")) or "_" in text:
        raise FieldError("a finite number")
    return value
