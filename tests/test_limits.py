"""schedd/limits.py: the ranges, exact integer comparison, and the docs table kept true."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedd import limits

DOCS = Path(__file__).resolve().parents[1] / "docs" / "daemon.md"


@pytest.mark.parametrize(("name", "value", "ok"), [
    ("ckpt_interval", 5e-324, False), ("ckpt_interval", 1.0, True),
    ("ckpt_interval", 1e9, True), ("ckpt_interval", math.nextafter(1e9, 2e9), False),
    ("ckpt_gb_per_node", 1e308, False), ("ckpt_gb_per_node", 0.0, False),
    ("ckpt_gb_per_node", 5e-324, True), ("walltime", 0.0, False), ("walltime", -0.0, False),
    ("runtime", 0.0, True), ("submit_time", math.nan, False), ("submit_time", math.inf, False),
    ("job_id", 2**53, True), ("job_id", 2**53 + 1, False), ("job_id", 0, False),
    ("job_id", 10**400, False), ("nodes", 2.5, False), ("nodes", 3.0, True),
    ("user", -1, True), ("user", -2, False), ("trace.duration", -1.0, True),
    ("trace.duration", -0.5, False), ("trace.ckpt_interval", 0.0, True),
    ("trace.ckpt_interval", 0.5, False),
])
def test_ranges(name, value, ok):
    assert (limits.problem(name, value) is None) is ok


def test_problem_is_one_sentence_naming_the_field():
    assert limits.problem("ckpt_interval", 5e-324) == (
        "ckpt_interval must be a number in [1, 1e+09] s, got 4.94066e-324")
    assert limits.problem("nodes", True) == "nodes must be a number, got True"
    assert limits.problem("walltime", "5") == "walltime must be a number, got '5'"
    with pytest.raises(limits.LimitError, match="job_id must be a whole number"):
        limits.check("job_id", 2**63)


def test_strings():
    assert limits.text_problem("request_id", "é" * limits.MAX_REQUEST_ID) is None
    assert "128" in limits.text_problem("request_id", "é" * 129)
    assert limits.text_problem("anything", "x" * limits.MAX_STRING) is None
    assert limits.text_problem("anything", "x" * (limits.MAX_STRING + 1))


def test_docs_show_the_table():
    assert limits.markdown_table() in DOCS.read_text()


@given(st.sampled_from(sorted(limits.LIMITS)),
       st.one_of(st.integers(), st.floats(), st.booleans(),
                 st.sampled_from([0, 1, -1, 0.0, -1.0, 2**53, 2.0**53, 1e10, 1e9])))
def test_the_quick_acceptance_agrees_with_the_limit(name: str, value: object) -> None:
    """problem()'s one-step path for plain numbers accepts exactly what Limit.accepts does."""
    limit = limits.LIMITS[name]
    expected = (not isinstance(value, bool) and isinstance(value, int | float)
                and limit.accepts(value))
    assert (limits.problem(name, value) is None) == expected


def _edges() -> st.SearchStrategy[float]:
    """Every limit's bounds and the floats next to them, where a range check goes wrong."""
    points = set()
    for limit in limits.LIMITS.values():
        for x in (float(limit.low), float(limit.high)):
            points.update({x, math.nextafter(x, -math.inf), math.nextafter(x, math.inf)})
    return st.sampled_from(sorted(points))


@given(st.sampled_from(sorted(limits.LIMITS)),
       st.one_of(st.integers(), st.floats(), _edges(), _edges().map(int),
                 _edges().map(lambda x: x - 0.5)))
def test_quick_range_accepts_only_what_the_limit_accepts(name: str, value: float) -> None:
    """The handler's one comparison (service.py) for values of the field's own protobuf
    type: an int for a whole-number field, a float (or int) otherwise."""
    limit = limits.LIMITS[name]
    if limit.integer and not isinstance(value, int):
        return  # protobuf never gives a whole-number field anything else
    lo, hi = limits.quick_range(name)
    if lo < value <= hi:
        assert limits.problem(name, value) is None


def test_quick_range_takes_a_closed_bound_and_leaves_an_open_one() -> None:
    lo, hi = limits.quick_range("runtime")  # [0, ...]: 0 means "the walltime"
    assert lo < 0.0 <= hi and not lo < -5e-324
    lo, _ = limits.quick_range("walltime")  # (0, ...]
    assert not lo < 0.0 and lo < 5e-324
    for bad in (math.nan, math.inf, -math.inf):
        assert not lo < bad <= hi
