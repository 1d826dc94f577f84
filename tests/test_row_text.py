"""schedd.row_text: the C formatter (schedd/_row_text.c) against the NumPy path
(schedd.text_columns, itself held to per-cell Python formatting in test_text_columns.py),
byte for byte, on hand-worked rows, the edge cases of test_text_columns, random tables and
whole runs; and what it refuses."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_text_columns import CHARACTERS, EDGE_COLUMNS, EDGE_FLOATS, FLOATS, INT64, TEXT

from schedd import row_text
from schedd.row_text import Column, Constant, Numbers, Ranges, Words, rows_text
from schedd.text_columns import Text, text_cells

needs_native = pytest.mark.skipif(row_text.native is None,
                                  reason="the C formatter is not built here")


def numpy_path(columns: list[Column], n: int, sep: bytes, monkeypatch) -> bytes:
    """The same rows with the C formatter out of the way."""
    with monkeypatch.context() as patch:
        patch.setattr(row_text, "native", None)
        with warnings.catch_warnings():  # inf in a whole column: NumPy's cast warns
            warnings.simplefilter("ignore", RuntimeWarning)
            return rows_text(columns, n, sep)


def both(columns: list[Column], n: int, monkeypatch, sep: bytes = b",") -> bytes:
    with warnings.catch_warnings():  # the same, where the C path hands a block to NumPy
        warnings.simplefilter("ignore", RuntimeWarning)
        got = rows_text(columns, n, sep)
    assert got == numpy_path(columns, n, sep, monkeypatch)
    return got


def test_the_c_formatter_is_built_where_a_compiler_was():
    """`make` builds it; without it every file is formatted by NumPy, correctly but about
    twice as slowly, which a benchmark would then measure by mistake."""
    if os.environ.get("SCHEDD_PURE_PYTHON"):
        pytest.skip("a pure-Python install, by request")
    assert row_text.native is not None


@needs_native
def test_a_row_of_every_kind_by_hand(monkeypatch):
    columns: list[Column] = [
        Numbers(np.array([1, -20, 9_223_372_036_854_775_807])),
        Numbers(np.array([0.5, 2.9996, -0.0004])),
        Constant("KTH.swf"),
        Words(np.array([0, 1, -1]), ("completed", "killed", "x")),
        Text(np.frombuffer("é-ü".encode(), np.uint8), np.array([0, 5, 0])),
        Ranges([0, 4, 7, 8, 10, 12, 3, 4], [3, 0, 1]),
        Numbers(np.array([-0.0, 1e15 + 0.5, 0.0625])),
    ]
    want = ("1,0.500,KTH.swf,completed,,0-3 7 10-11,0\n"
            "-20,3.000,KTH.swf,killed,é-ü,,1000000000000000.500\n"
            "9223372036854775807,-0.000,KTH.swf,x,,3,0.062\n").encode()
    assert both(columns, 3, monkeypatch) == want
    assert row_text.native is not None  # and by the C formatter itself, not a fallback
    specs = [row_text._spec(column) for column in columns]
    assert row_text.native.rows(specs, 3, ",") == want


@needs_native
@pytest.mark.parametrize("values", EDGE_COLUMNS.values(), ids=EDGE_COLUMNS)
def test_integer_edge_cases(values, monkeypatch):
    column = np.array(values, dtype=np.int64)
    both([Numbers(column), Numbers(column[::-1])], len(column), monkeypatch, b" ")


@needs_native
@pytest.mark.parametrize("values", EDGE_FLOATS.values(), ids=EDGE_FLOATS)
def test_float_edge_cases(values, monkeypatch):
    """nan, inf and magnitudes of 2**63 and more go to NumPy's path (and so to Python's
    formatting) for the whole block; near-ties to Python's own rounding."""
    column = np.array(values, dtype=np.float64)
    both([Numbers(np.arange(len(column))), Numbers(column)], len(column), monkeypatch)


@needs_native
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32, np.uint64,
                                   np.float32, np.float16, np.bool_])
def test_other_dtypes(dtype, monkeypatch):
    values = np.array([0, 1, 2, 3, 100, 5], dtype=np.int64)
    both([Numbers(values.astype(dtype)), Numbers((values / 8).astype(dtype))], 6, monkeypatch)
    both([Numbers(np.array([2**64 - 1, 2**63, 0, 10], dtype=np.uint64))], 4, monkeypatch)


@needs_native
def test_many_random_fractions_round_as_python_does(monkeypatch):
    rng = np.random.default_rng(11)
    k = rng.integers(-10**12, 10**12, 40_000)
    halves = (k + 0.5) / 1000.0
    for column in (k / 1000.0, halves, np.nextafter(halves, np.inf),
                   np.nextafter(halves, -np.inf), k / 2000.0, rng.uniform(-1, 1, 40_000),
                   rng.uniform(-4e15, 4e15, 40_000),
                   np.ldexp(rng.uniform(0.5, 1, 40_000), rng.integers(-30, 62, 40_000))):
        got = both([Numbers(column)], len(column), monkeypatch)
        assert got.decode().split("\n")[:3] == [
            str(int(v)) if v.is_integer() else f"{v:.3f}" for v in column[:3].tolist()]


@needs_native
def test_no_rows_no_columns_and_empty_cells(monkeypatch):
    assert rows_text([Numbers(np.empty(0))], 0, b",") == b""
    assert rows_text([], 3, b",") == b""
    assert both([Constant(""), Constant("")], 2, monkeypatch) == b",\n,\n"
    assert both([Ranges([], [0, 0])], 2, monkeypatch) == b"\n\n"


@needs_native
def test_what_the_c_formatter_refuses():
    with pytest.raises(ValueError, match="separator"):
        rows_text([Constant("a")], 1, b", ")
    with pytest.raises(ValueError, match="separator"):
        rows_text([Constant("a")], 1, b"\n")
    with pytest.raises(ValueError, match="NUL"):
        rows_text([Text(np.frombuffer(b"a\0b", np.uint8), np.array([3]))], 1, b",")
    with pytest.raises(ValueError, match="NUL"):  # as text_columns.string_cells refuses
        rows_text([Constant("a\0")], 1, b",")
    with pytest.raises(ValueError, match="NUL"):
        rows_text([Words(np.array([0]), ("a\0b",))], 1, b",")
    with pytest.raises(IndexError, match="word code 3 of 2"):
        rows_text([Words(np.array([0, 3]), ("a", "b"))], 2, b",")
    with pytest.raises(ValueError, match="rows"):  # a column shorter than the block
        rows_text([Numbers(np.arange(3))], 4, b",")
    with pytest.raises(ValueError, match="range"):
        rows_text([Ranges([5, 5], [1])], 1, b",")
    with pytest.raises(ValueError, match="exceed"):
        rows_text([Ranges([0, 2], [2])], 1, b",")
    assert row_text.native is not None
    with pytest.raises(ValueError, match="unknown column kind"):
        row_text.native.rows([(9, b"")], 1, ",")


@st.composite
def tables(draw):  # noqa: ANN001, ANN201
    n = draw(st.integers(0, 30))
    columns: list[Column] = []
    for kind in draw(st.lists(st.sampled_from(["int", "float", "text", "word", "const",
                                               "ranges"]), min_size=1, max_size=6)):
        if kind == "int":
            columns.append(Numbers(np.array(draw(st.lists(
                st.integers(INT64.min, INT64.max), min_size=n, max_size=n)), dtype=np.int64)))
        elif kind == "float":
            columns.append(Numbers(np.array(draw(st.lists(FLOATS, min_size=n, max_size=n)),
                                            dtype=np.float64)))
        elif kind == "text":
            columns.append(text_cells(draw(st.lists(TEXT, min_size=n, max_size=n))))
        elif kind == "word":
            words = draw(st.lists(st.text(CHARACTERS, max_size=8), min_size=1, max_size=5))
            columns.append(Words(np.array(draw(st.lists(
                st.integers(-len(words), len(words) - 1), min_size=n, max_size=n)),
                dtype=np.int64), words))
        elif kind == "const":
            columns.append(Constant(draw(TEXT)))
        else:
            counts = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
            flat: list[int] = []
            for _ in range(sum(counts)):
                lo = draw(st.integers(0, 2**40))
                flat += [lo, lo + draw(st.sampled_from([1, 2, 17, 2**20]))]
            columns.append(Ranges(flat, counts))
    return n, columns


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(table=tables(), sep=st.sampled_from([b",", b" ", b";"]))
def test_random_tables_are_the_numpy_path(table, sep, monkeypatch):
    n, columns = table
    both(columns, n, monkeypatch, sep)


@needs_native
def test_a_whole_run_writes_the_same_files_either_way(tmp_path, monkeypatch):
    """Every file `schedd simulate` writes, by the C formatter and by NumPy's path."""
    from pathlib import Path

    from schedd.core.cluster import NodePool
    from schedd.policies import make_policy
    from schedd.sim import simulate, write_outputs
    from schedd.traces import normalize, read_trace

    trace_path = Path(__file__).resolve().parents[1] / "schedd" / "data" / \
        "sample-lublin256-1000.swf"
    trace = normalize(read_trace(str(trace_path)))
    cluster = NodePool(trace.max_nodes)
    run = simulate(trace, cluster, make_policy("easy", [], cluster), record=True)
    description = {"trace": trace_path.name, "policy": "easy",
                   "cluster": f"nodes:{trace.max_nodes}", "total_nodes": trace.max_nodes}
    write_outputs(tmp_path / "c", trace, run, description)
    with monkeypatch.context() as patch:
        patch.setattr(row_text, "native", None)
        write_outputs(tmp_path / "numpy", trace, run, description)
    names = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert {"jobs.swf", "jobs.csv", "segments.csv", "timeseries.csv"} <= set(names)
    for name in names:
        assert (tmp_path / "c" / name).read_bytes() == \
            (tmp_path / "numpy" / name).read_bytes(), name
