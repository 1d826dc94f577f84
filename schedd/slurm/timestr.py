"""Slurm's time strings (`MaxTime=`, `PriorityDecayHalfLife=`, `--time`), as
src/common/parse_time.c reads them: minutes, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`,
`D-HH:MM:SS`; `INFINITE`/`UNLIMITED` is no limit."""

from __future__ import annotations

import math
import re

INFINITE = math.inf

_DAYS = re.compile(r"(\d+)-(\d+)(?::(\d+))?(?::(\d+))?")
_CLOCK = re.compile(r"(\d+)(?::(\d+))?(?::(\d+))?")


def seconds(text: str) -> float:
    """Seconds a Slurm time string names (math.inf for INFINITE/UNLIMITED); ValueError with
    the accepted forms otherwise."""
    value = text.strip()
    if value.upper() in ("INFINITE", "UNLIMITED", "-1"):
        return INFINITE
    days = _DAYS.fullmatch(value)
    if days:
        d, h, m, s = (int(g) if g else 0 for g in days.groups())
        return float(((d * 24 + h) * 60 + m) * 60 + s)
    clock = _CLOCK.fullmatch(value)
    if clock:
        a, b, c = clock.groups()
        if b is None:  # minutes
            return float(int(a) * 60)
        if c is None:  # minutes:seconds
            return float(int(a) * 60 + int(b))
        return float((int(a) * 60 + int(b)) * 60 + int(c))
    raise ValueError(f"expected a Slurm time (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]] or "
                     f"UNLIMITED), found {text!r}")


def minutes_rounded_up(text: str) -> float:
    """Whole minutes as Slurm keeps a time limit (time_str2mins rounds up)."""
    secs = seconds(text)
    return secs if secs == INFINITE else float(math.ceil(secs / 60.0))
