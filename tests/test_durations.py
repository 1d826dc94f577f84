"""schedd/durations.py: seconds, clock forms and units, hand-worked and as properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedd.durations import DurationError, format_duration, in_unit, parse_duration


@pytest.mark.parametrize("text, seconds", [
    ("0", 0), ("5400", 5400), ("5400.5", 5400.5), (" 90 ", 90), ("1e3", 1000),
    ("1:30:00", 5400), ("01:30:00", 5400), ("0:00:07.5", 7.5), ("90:00", 5400),
    ("2-12:00:00", 216000), ("1-0:00", 86400 + 0 * 60),
    ("1h30m", 5400), ("90m", 5400), ("1.5h", 5400), ("2d", 172800), ("1w", 604800),
    ("1d2h3m4s", 93784), ("45s", 45), ("1H30M", 5400),
])
def test_forms(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-5", "1h2h", "1:60:00", "1:2:3:4", "h", "1y", "nan",
                                  "inf", "1h-30m", "1:30:00h", "abc"])
def test_not_durations_are_one_sentence(text):
    with pytest.raises(DurationError) as err:
        parse_duration(text)
    assert str(err.value).startswith("expected a duration (seconds (5400), [D-]H:MM:SS")
    assert "\n" not in str(err.value)


def test_numbers_pass_through_and_units_convert():
    assert parse_duration(12.5) == 12.5 and parse_duration(3) == 3.0
    with pytest.raises(DurationError):
        parse_duration(True)  # a JSON true is not a duration
    assert in_unit("50", 3600) == 50 and in_unit("90m", 3600) == 1.5
    assert in_unit("1:00:00", 60) == 60


@given(h=st.integers(0, 999), m=st.integers(0, 59), s=st.integers(0, 59),
       d=st.integers(0, 30))
def test_clock_and_unit_forms_agree(h, m, s, d):
    seconds = d * 86400 + h * 3600 + m * 60 + s
    assert parse_duration(f"{d}-{h}:{m:02d}:{s:02d}") == seconds
    assert parse_duration(f"{d}d{h}h{m}m{s}s") == seconds
    assert parse_duration(str(seconds)) == seconds


@given(st.floats(0, 1e9, allow_nan=False))
def test_format_is_short_and_finite(x):
    text = format_duration(x)
    assert len(text) <= 16 and not math.isnan(x)
    assert text.split()[-1] in ("s", "min", "days")


def test_format_examples():
    assert [format_duration(x) for x in (7, 45, 720, 12000, 19.6 * 86400, -30)] == [
        "7 s", "45 s", "12 min", "3 h 20 min", "19.6 days", "-30 s"]
