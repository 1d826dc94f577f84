"""The C parser of whole-number SWF rows (schedd/traces/_whole_numbers.c) against NumPy's
loadtxt, which it runs ahead of: what it accepts, loadtxt's int64 parse accepts with the
same values; what it refuses goes to loadtxt as before, so traces read the same either way."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.traces import read_trace, swf

needs_native = pytest.mark.skipif(swf.native is None, reason="the C parser is not built here")
ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"


def loadtxt_ints(data: bytes) -> np.ndarray | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ints = swf._load(data, np.int64)
    return None if ints is None else ints.astype(np.float64).ravel()


def test_the_c_parser_is_built_where_a_compiler_was():
    if os.environ.get("SCHEDD_PURE_PYTHON"):
        pytest.skip("a pure-Python install, by request")
    assert swf.native is not None


@needs_native
@pytest.mark.parametrize("data, want", [
    (b"1 2 3\n4 5 6\n", [1, 2, 3, 4, 5, 6]),
    (b"1\t-2  +3\n\n   \n4 5 6", [1, -2, 3, 4, 5, 6]),  # blank lines, no final newline
    (b"-0 007 9223372036854775807 -9223372036854775808\n",
     [0, 7, 2**63 - 1, -2**63]),
    (b"", []),
])
def test_rows_by_hand(data, want):
    assert swf.native is not None
    got = swf.native.whole_numbers(data)
    assert got is not None
    values = np.frombuffer(got, np.float64)
    assert values.tolist() == [float(v) for v in want]
    if data.strip():
        assert values.tolist() == loadtxt_ints(data).tolist()


@needs_native
def test_minus_zero_is_zero_as_loadtxt_reads_it():
    assert swf.native is not None
    got = swf.native.whole_numbers(b"-0 1\n")
    assert got is not None
    assert np.frombuffer(got, np.float64).tobytes() == loadtxt_ints(b"-0 1\n").tobytes()
    assert not np.signbit(np.frombuffer(got, np.float64)).any()


@needs_native
@pytest.mark.parametrize("data", [
    b"1 2.5 3\n", b"1 1e3 3\n", b"1 nan 3\n", b"1 2 3\r\n4 5 6\r\n", b"1 2 3\n4 5\n",
    b"1 2\n3 4 5", b"1 - 3\n", b"1 + 3\n", b"1 2a 3\n", b"1 9223372036854775808 3\n",
    b"1 -9223372036854775809 3\n", b"1 99999999999999999999999 3\n", b"1 ;2 3\n",
    b"1\x0b2\n", "1 \u00e9 2\n".encode(), b"1-2 3\n", b"3+4 5\n", b"1 \r2 3\n",
])
def test_what_it_leaves_to_numpy(data):
    assert swf.native is not None
    assert swf.native.whole_numbers(data) is None


TOKENS = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(lambda v: str(v).encode()),
    st.integers(0, 2**70).map(lambda v: b"+" + str(v).encode()),
    st.integers(0, 999).map(lambda v: b"-0" + str(v).encode()),
    st.sampled_from([b"1.5", b"1e3", b"-", b"nan", b"2.", b"0x1", b"1_000"]),
)


@st.composite
def chunks(draw):  # noqa: ANN001, ANN201
    width = draw(st.integers(1, 6))
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        n = width if draw(st.integers(0, 9)) else draw(st.integers(0, 7))
        blanks = draw(st.lists(st.sampled_from([b" ", b"  ", b"\t", b" \t "]), min_size=n + 1,
                               max_size=n + 1))
        toks = draw(st.lists(TOKENS, min_size=n, max_size=n))
        line = blanks[0] + b"".join(t + b for t, b in zip(toks, blanks[1:], strict=True))
        lines.append(line)
    ending = draw(st.sampled_from([b"\n", b""]))
    return b"\n".join(lines) + ending


@needs_native
@settings(max_examples=400, deadline=None)
@given(data=chunks())
def test_what_it_accepts_loadtxt_reads_the_same(data):
    assert swf.native is not None
    got = swf.native.whole_numbers(data)
    if got is None or not data.strip():
        return
    want = loadtxt_ints(data)
    assert want is not None, data
    values = np.frombuffer(got, np.float64)
    assert values.tobytes() == want.tobytes()


def traces() -> list[Path]:
    found = [ROOT / "schedd" / "data" / "sample-lublin256-1000.swf"]
    return found + (sorted(TRACES.glob("*.swf")) if TRACES.is_dir() else [])


@needs_native
@pytest.mark.parametrize("path", traces(), ids=lambda p: p.name)
def test_traces_read_the_same_with_and_without_it(path, monkeypatch):
    with_c = read_trace(str(path))
    monkeypatch.setattr(swf, "native", None)
    without = read_trace(str(path))
    assert with_c.columns.keys() == without.columns.keys()
    for name, column in with_c.columns.items():
        assert column.tobytes() == without.columns[name].tobytes(), name
    assert with_c.header == without.header and with_c.skipped == without.skipped


@needs_native
@pytest.mark.parametrize("data", [b"1 2 3\n", b"1 2 3\n4 5 6\n", b"1\n2\n3\n", b"7\n",
                                  b"\n1 2\n\n3 4"])
def test_shaped_as_loadtxt_shapes_it(data, monkeypatch):
    got = swf._whole_numbers(data)
    monkeypatch.setattr(swf, "native", None)
    want = swf._whole_numbers(data)
    assert got is not None and want is not None
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


WIDE_ROW = ("1 0 5 100 4 -1 -1 4 200 -1 1 3 2 -1 -1 -1 -1 -1 "  # fields 1-18
            "-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 "  # 19-31 (20 and 22 as -1: numbers)
            "30 -1 2 1 3 1 4294901758 5 3")  # 32-40


@needs_native
def test_forty_field_rows_parse_the_same_and_read_the_same(tmp_path, monkeypatch):
    """Lines of the extension's 40 fields, all whole numbers: the C parser's values are
    loadtxt's, and a file of them reads the same with and without it."""
    assert swf.native is not None
    data = (WIDE_ROW + "\n" + WIDE_ROW.replace("4294901758", "-1") + "\n").encode()
    got = swf.native.whole_numbers(data)
    assert got is not None
    assert np.frombuffer(got, np.float64).tobytes() == loadtxt_ints(data).tobytes()
    assert swf.native.whole_numbers(data + b"1 2 3\n") is None  # ragged: NumPy's
    path = tmp_path / "wide.swf"
    path.write_bytes(data * 3)
    with_c = read_trace(str(path))
    monkeypatch.setattr(swf, "native", None)
    without = read_trace(str(path))
    for name, column in with_c.columns.items():
        assert column.tobytes() == without.columns[name].tobytes(), name
    assert with_c.columns["priority"].tolist() == [4294901758, -1] * 3
    assert with_c.columns["started_by"].tolist() == [3] * 6
