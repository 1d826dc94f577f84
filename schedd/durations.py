"""Durations as people write them: seconds (5400, 5400.5), clock form ([D-]H:MM:SS or
M:SS, as sbatch takes walltimes) and units (1h30m, 2d, 90s, 1.5h). Every command, the
config file and the MQTT payloads read durations through `parse_duration`; nothing here
imports the rest of schedd."""

from __future__ import annotations

import argparse
import math
import re

UNITS = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_UNIT_FORM = re.compile(r"(?:(\d+(?:\.\d*)?|\.\d+)([wdhms]))+")
_UNIT_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([wdhms])")
_CLOCK_FORM = re.compile(r"(?:(\d+)-)?(\d+):([0-5]?\d)(?::([0-5]?\d(?:\.\d*)?))?")
HINT = "seconds (5400), [D-]H:MM:SS (1:30:00) or units (1h30m)"


class DurationError(ValueError):
    """Not a duration; str() is one sentence naming what was given."""


def parse_duration(text: str | float | int, what: str = "a duration") -> float:
    """Seconds in `text`; a number passes through. Raises DurationError (a ValueError)
    for anything else, negative, infinite or NaN."""
    if isinstance(text, bool):
        raise DurationError(f"expected {what} ({HINT}), got {text!r}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        value = _parse_text(text.strip().lower(), text, what)
    if not math.isfinite(value) or value < 0:
        raise DurationError(f"expected {what} ({HINT}), got {text!r}")
    return value


def _parse_text(t: str, original: str, what: str) -> float:
    try:
        return float(t)
    except ValueError:
        pass
    if _UNIT_FORM.fullmatch(t):
        parts = _UNIT_PART.findall(t)
        units = [u for _, u in parts]
        if len(set(units)) == len(units):  # "1h2h" is a typo, not 3 hours
            return sum(float(n) * UNITS[u] for n, u in parts)
    m = _CLOCK_FORM.fullmatch(t)
    if m:
        days, a, b, c = m.groups()
        if c is None:  # M:SS, as sbatch reads two fields
            seconds = int(a) * 60.0 + int(b)
        else:
            seconds = int(a) * 3600.0 + int(b) * 60.0 + float(c)
        return seconds + (int(days) * 86400.0 if days else 0.0)
    raise DurationError(f"expected {what} ({HINT}), got {original!r}")


def in_unit(text: str, unit: float = 1.0, what: str = "a duration") -> float:
    """A duration in `unit` seconds: a plain number is already in that unit (an option
    in hours takes 50 as 50 hours), any other form is converted (90m -> 1.5 hours)."""
    try:
        return parse_duration(float(text), what)
    except ValueError:
        return parse_duration(text, what) / unit


def is_duration_text(value: object) -> bool:
    """A string in clock or unit form ("1:30:00", "1h30m"); a number written as a string
    ("5400") is not one (where numbers are expected, they come as numbers)."""
    if not isinstance(value, str):
        return False
    t = value.strip().lower()
    return bool(_CLOCK_FORM.fullmatch(t) or _UNIT_FORM.fullmatch(t))


def duration_type(low: float = 0.0, strict: bool = False, what: str = "a duration",
                  unit: float = 1.0):
    """An argparse type: a duration >= low (> low when strict) in `unit` seconds, else
    one sentence."""
    name = {1.0: "s", 60.0: "min", 3600.0: "h"}.get(unit, f"x {unit:g} s")

    def parse(text: str) -> float:
        try:
            value = in_unit(text, unit, what)
        except DurationError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(
                f"expected {what} {'>' if strict else '>='} {low:g} {name}, got {text}")
        return value

    return parse


def format_duration(seconds: float) -> str:
    """A short human form: 45 s, 12 min, 3 h 20 min, 19.6 days."""
    s = abs(seconds)
    sign = "-" if seconds < 0 else ""
    if s < 90:
        return f"{sign}{s:.0f} s" if s >= 10 or s == int(s) else f"{sign}{s:.1f} s"
    if s < 5400:
        return f"{sign}{s / 60:.0f} min"
    if s < 48 * 3600:
        h, rest = divmod(s, 3600)
        return f"{sign}{h:.0f} h {rest / 60:.0f} min"
    return f"{sign}{s / 86400:.1f} days"
