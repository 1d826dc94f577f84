"""The text of a block of table rows, from column descriptions: what the result writers
(jobs.swf, jobs.csv, segments.csv, timeseries.csv) call.

Where the C formatter (schedd/_row_text.c) is built, it writes the rows in one pass
without the GIL: the job files and the run files, formatted by two threads
(sim.write_outputs), then take the two cores. Without it (no C compiler,
SCHEDD_PURE_PYTHON=1), or for a value it does not format (nan, inf, a magnitude of 2**63 or
more), schedd.text_columns builds the same bytes in NumPy; tests/test_row_text.py holds
the two to each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import NamedTuple

import numpy as np

from .text_columns import (
    Cells,
    Text,
    constant_cells,
    interval_set_cells,
    join_rows,
    number_cells,
    word_cells,
)

native: ModuleType | None
try:
    from . import _row_text as native
except ImportError:  # not built: the NumPy path formats everything
    native = None


class Numbers(NamedTuple):
    """A numeric column: integers as `str(int)`, whole floats as integers, other floats
    with `f"{v:.3f}"` (text_columns.fmt_number)."""
    values: np.ndarray


class Words(NamedTuple):
    """Words from a small vocabulary by code (words[code], as Python indexes)."""
    codes: np.ndarray
    words: Sequence[str]


class Constant(NamedTuple):
    """The same text in every row."""
    text: str


class Ranges(NamedTuple):
    """Node ranges as interval sets ("0-3 8 10-11"): every row's [lo, hi) bounds end to end
    (`flat`: lo, hi, lo, hi, ...), and how many ranges each row has (LowestFirst.place)."""
    flat: Sequence[int] | np.ndarray
    counts: Sequence[int] | np.ndarray


Column = Numbers | Words | Constant | Ranges | Text


def rows_text(columns: Sequence[Column], n: int, sep: bytes) -> bytes | bytearray:
    """n rows of the columns' cells, `sep` (one byte) between them, a newline ending each
    (bytes from C, a bytearray from NumPy's path: the writers write either as it is)."""
    if len(sep) != 1 or sep in (b"\0", b"\n"):
        raise ValueError(f"separator must be one byte other than NUL and newline: {sep!r}")
    if native is not None and sep[0] < 128:
        specs = []
        for column in columns:
            spec = _spec(column)
            if spec is None:
                break
            specs.append(spec)
        else:
            try:
                text: bytes = native.rows(specs, n, chr(sep[0]))
                return text
            except OverflowError:  # a number the C path leaves to Python's formatting
                pass
    return join_rows([_cells(column, n) for column in columns], sep)


def _spec(column: Column) -> tuple[object, ...] | None:
    """The C formatter's description of a column, or None where it takes only NumPy's."""
    if isinstance(column, Numbers):
        values = column.values
        if values.dtype.kind == "i" or (values.dtype.kind == "u" and values.dtype.itemsize < 8):
            return (0, np.ascontiguousarray(values, dtype=np.int64))
        if values.dtype.kind == "f" and values.dtype.itemsize <= 8:
            return (1, np.ascontiguousarray(values, dtype=np.float64))
        return None
    if isinstance(column, Words):
        return (3, np.ascontiguousarray(column.codes, dtype=np.int64),
                tuple(word.encode() for word in column.words))
    if isinstance(column, Constant):
        return (2, column.text.encode())
    if isinstance(column, Ranges):
        return (5, np.ascontiguousarray(column.flat, dtype=np.int64),
                np.ascontiguousarray(column.counts, dtype=np.int64))
    return (4, np.ascontiguousarray(column.data, dtype=np.uint8),
            np.ascontiguousarray(column.lengths, dtype=np.int64))


def _cells(column: Column, n: int) -> Cells | Text:
    """A column's cells for the NumPy path."""
    if isinstance(column, Numbers):
        return number_cells(column.values)
    if isinstance(column, Words):
        return word_cells(column.codes, column.words)
    if isinstance(column, Constant):
        return constant_cells(column.text, n)
    if isinstance(column, Ranges):
        return interval_set_cells(column.flat, column.counts)
    return column
