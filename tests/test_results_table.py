"""ResultTable (schedd/core/results.py) moves its rows into NumPy columns as one packed
block of int64 and float64 records, and value by value when a row cannot be packed: either
way each column holds exactly what was appended, and a bad row fails as before."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.results import COLUMNS, ResultTable

CODES = list(COLUMNS.values())
ints = st.one_of(st.integers(-(2**31), 2**31), st.integers(-(2**63) + 1, 2**63 - 1),
                 st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1]))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**40), 2**40))
rows = st.tuples(*[ints if code == "q" else floats for code in CODES])


def expected(appended: list[tuple]) -> dict[str, np.ndarray]:
    return {name: np.array([row[j] for row in appended],
                           dtype=np.int64 if code == "q" else np.float64)
            for j, (name, code) in enumerate(COLUMNS.items())}


@settings(max_examples=60, deadline=None)
@given(st.lists(rows, max_size=40), st.integers(1, 16))
def test_columns_hold_exactly_what_was_appended(appended: list[tuple], flush_rows: int) -> None:
    table = ResultTable(capacity=3)  # grows on the way
    table.FLUSH_ROWS = flush_rows  # several flushes, some with a big integer in them
    for row in appended:
        table.append(row)
    got = table.arrays()
    assert len(table) == len(appended)
    for name, want in expected(appended).items():
        assert got[name].dtype == want.dtype
        if want.dtype == np.float64:  # NaN == NaN here
            assert np.array_equal(got[name], want, equal_nan=True), name
        else:
            assert got[name].tolist() == want.tolist(), name


def test_a_big_integer_is_kept_exact() -> None:
    table = ResultTable()
    row = [1.5 if code == "d" else 7 for code in CODES]
    row[0] = 2**53 + 1  # the id column: a float64 on the way would make it 2**53
    table.append(tuple(row))
    assert table.arrays()["id"].tolist() == [2**53 + 1]


def test_a_row_of_the_wrong_width_fails() -> None:
    table = ResultTable()
    table.append(tuple(1 for _ in range(len(COLUMNS) + 1)))
    with pytest.raises(ValueError):
        table.arrays()


def test_a_nan_in_an_integer_column_fails() -> None:
    table = ResultTable()
    row = [0.0 if code == "d" else 1 for code in CODES]
    row[CODES.index("q", 1)] = math.nan
    table.append(tuple(row))
    with pytest.raises(ValueError):
        table.arrays()


def test_a_row_packing_refuses_is_stored_value_by_value() -> None:
    """A whole float in an integer column cannot be packed as int64; the block it is in
    goes value by value, as NumPy stores it, and the rows around it are kept."""
    table = ResultTable()
    table.FLUSH_ROWS = 3
    good = tuple(2.5 if code == "d" else 4 for code in CODES)
    odd = list(good)
    odd[CODES.index("q", 1)] = 9.0
    for row in (good, tuple(odd), good, good):
        table.append(row)
    got = table.arrays()
    name = list(COLUMNS)[CODES.index("q", 1)]
    assert got[name].tolist() == [4, 9, 4, 4]
    assert got["submit"].tolist() == [2.5] * 4
