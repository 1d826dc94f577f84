"""Property tests: write/read round trips, and the fast parser agreeing with the line parser."""

from __future__ import annotations

import contextlib
import gzip
import io
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_traces_helpers import assert_same_trace

from schedd.traces import (
    COLUMN_NAMES,
    EccCommand,
    Trace,
    TraceError,
    TraceHeader,
    read_trace,
    write_trace,
)
from schedd.traces import swf as swf_module
from schedd.traces.names import names_line

INT_COLUMNS = {c.name for c in swf_module.COLUMNS if c.kind == "i"}
OPTIONAL = COLUMN_NAMES[18:]

ints = st.one_of(st.just(-1), st.integers(0, 10**6), st.integers(-(2**53), 2**53))
floats = st.one_of(
    st.just(-1.0),
    st.integers(0, 10**9).map(float),
    st.floats(allow_nan=False, allow_infinity=False),
)


FIELD_OF = {c.name: c.field for c in swf_module.COLUMNS}


def within(limit) -> st.SearchStrategy:
    """Values the reader accepts for a range-checked field (schedd/limits.py)."""
    if limit.integer:
        inner = st.integers(int(limit.low) + limit.low_open, int(limit.high)).map(float)
    else:
        inner = st.floats(limit.low, limit.high, exclude_min=limit.low_open)
    return st.one_of(*(st.just(a) for a in limit.absent), inner)


@st.composite
def traces(draw) -> Trace:
    n = draw(st.integers(0, 12))
    extended = draw(st.booleans())
    cols: dict[str, np.ndarray] = {}
    for name in COLUMN_NAMES:
        if name in OPTIONAL and not extended:
            values: list = ["B"] * n if name == "job_class" else [-1] * n
        elif name == "job_class":
            values = draw(st.lists(st.sampled_from("BROMD"), min_size=n, max_size=n))
        elif FIELD_OF[name] in swf_module._CODE_FIELDS:
            codes = [int(c) for c in swf_module._CODE_FIELDS[FIELD_OF[name]]]
            values = draw(st.lists(st.sampled_from(codes), min_size=n, max_size=n))
        elif FIELD_OF[name] in swf_module._FIELD_LIMITS:
            limited = within(swf_module._FIELD_LIMITS[FIELD_OF[name]])
            values = draw(st.lists(limited, min_size=n, max_size=n))
        elif name in INT_COLUMNS:
            values = draw(st.lists(ints, min_size=n, max_size=n))
        else:
            values = draw(st.lists(floats, min_size=n, max_size=n))
        dtype = "<U1" if name == "job_class" else np.int64 if name in INT_COLUMNS else np.float64
        cols[name] = np.array(values, dtype=dtype)
    eccs = []
    if extended and n:
        ids = cols["job_id"].tolist()
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["ET", "RT", "EP", "RP"]))
            whole = kind in ("EP", "RP")
            amount = draw(st.integers(0, 10**6).map(float) if whole else st.floats(0, 1e9))
            when = draw(within(swf_module._FIELD_LIMITS[FIELD_OF["submit"]]))
            eccs.append(EccCommand(draw(st.sampled_from(ids)), when, kind, amount, 0))
    lines = draw(st.lists(st.sampled_from(["; Version: 2", "; MaxNodes: 128", ";", "; x: y"])))
    kinds = draw(st.lists(st.sampled_from(["user", "qos", "state"]), unique=True))
    for kind in kinds:  # names lines, one per kind, with names that need encoding
        names = draw(st.dictionaries(st.integers(0, 2**53), st.text(min_size=1, max_size=6),
                                     max_size=4))
        lines.append(names_line(kind, names) if names else f"; schedd-names {kind}:")
    header = swf_module.parse_header(lines)
    return Trace(path="<memory>", header=header, columns=cols, eccs=eccs)


@settings(max_examples=150, deadline=None)
@given(trace=traces(), gz=st.booleans())
def test_write_then_read_gives_the_same_trace(trace, gz):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("t.swf.gz" if gz else "t.swf")
        write_trace(path, trace)
        again = read_trace(path)
        assert_same_trace(again, trace)
        width = swf_module.line_width(trace)
        assert width == (40 if any(_used(trace, name) for name in COLUMN_NAMES[29:])
                         else 31 if trace.eccs or any(_used(trace, name) for name in OPTIONAL)
                         else 18)
        assert {len(line.split()) for line in _data_lines(path)} <= {width}
        write_trace(path, again)  # and read(write(read(x))) == read(x)
        assert_same_trace(read_trace(path), again)


def _used(trace: Trace, name: str) -> bool:
    return bool((trace.columns[name] != ("B" if name == "job_class" else -1)).any())


def _data_lines(path: Path) -> list[str]:
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
    return [line for line in text.splitlines() if line and not line.startswith(";")]


# ------------------------------------------------------------------- fast path == line parser

WHOLE = ["1", "2", "-1", "0", "-1.00", "+3", "7.", "1e3", "3600", "-0"]
NUMBERS = WHOLE + ["2.5", ".5", "1E-2", "-7.25e+2"]
JUNK = ["nan", "inf", "x", "0x1", "1_0", ";", ";c", "1e999", "S", "B", "\u00a01", "-"]
KINDS = ["S"] * 6 + ["-1", "ET", "RT", "EP", "RP"]
CLASSES = ["B", "R", "O", "M", "D", "-1"]
BAD_LETTERS = ["X", "2", "SS", "s"]


@st.composite
def lines(draw) -> str:
    """A comment, blank or data line; data lines are mostly valid, some with one bad token."""
    shapes = ["comment", "blank", "any", "19", "21", "32"] + ["18", "31", "40"] * 3
    shape = draw(st.sampled_from(shapes))
    if shape == "comment":
        return draw(st.sampled_from(["; MaxNodes: 4", ";", "  ; note", "; schedd-names qos: 1=a",
                                     "; schedd-names qos: 1=a%2", "; schedd-names user 1=a"]))
    if shape == "blank":
        return draw(st.sampled_from(["", "   ", "\t"]))
    k = draw(st.integers(15, 42)) if shape == "any" else int(shape)
    toks = [draw(st.sampled_from(["1", "2", "3"]))]  # small ids, so ECCs sometimes match
    for i in range(1, k):
        if i == swf_module.TYPE_FIELD:
            toks.append(draw(st.sampled_from(KINDS)))
        elif i == swf_module.CLASS_FIELD:
            toks.append(draw(st.sampled_from(CLASSES)))
        elif i in swf_module._CODE_FIELDS:
            toks.append(draw(st.sampled_from(["-1", "0", "1", "2", "3"])))
        elif i == swf_module.AMOUNT_FIELD and toks[-1] not in ("S", "-1"):
            toks.append(draw(st.sampled_from(["5", "60", "2", "0"])))  # a valid ECC amount
        else:
            whole = i in swf_module._INT_FIELDS
            toks.append(draw(st.sampled_from(WHOLE if whole else NUMBERS)))
    if draw(st.integers(0, 5)) == 0:  # spoil one token
        i = draw(st.integers(0, k - 1))
        toks[i] = draw(st.sampled_from(JUNK + BAD_LETTERS + ["2"]))
    return draw(st.sampled_from([" ", "  ", "\t"])).join(toks)


def _outcome(path: Path, lenient: bool, chunk: int, fast: bool):
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(swf_module, "CHUNK_BYTES", chunk))
        if not fast:  # every chunk goes to the line parser
            stack.enter_context(mock.patch.object(swf_module, "_fast_block",
                                                  lambda data, strict=False: None))
        try:
            return read_trace(path, lenient=lenient)
        except TraceError as e:
            return str(e)


@settings(max_examples=300, deadline=None)
@given(
    body=st.lists(lines(), min_size=1, max_size=25),
    lenient=st.booleans(),
    chunk=st.sampled_from([1, 40, 300, 1 << 20]),
)
def test_fast_path_agrees_with_line_parser(body, lenient, chunk):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.swf"
        path.write_bytes("\n".join(body).encode())
        slow = _outcome(path, lenient, 1 << 20, fast=False)
        fast = _outcome(path, lenient, chunk, fast=True)
    if isinstance(slow, str) or isinstance(fast, str):
        event("error")
        assert fast == slow
        return
    event(f"read: {'some' if len(slow) else 'no'} jobs, {'some' if slow.eccs else 'no'} ECCs")
    assert_same_trace(fast, slow)
    assert fast.eccs == slow.eccs  # line numbers included
    assert fast.skipped == slow.skipped


def test_fast_path_is_taken_for_plain_and_extended_chunks():
    plain = b"1 0 -1 10 4 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n" * 3
    block = swf_module._fast_block(plain)
    assert block is not None and block.shape == (3, 18)
    wide = plain.replace(b"\n", b" 5 S -1 M 1 2.5 3 4 5 6 7 8 9\n")
    block = swf_module._fast_block(wide)
    assert block is not None and block.shape == (3, 31)
    assert swf_module._fast_block(wide.replace(b" S ", b" ET ", 1)) is None  # ECC: line parser
    wider = wide.replace(b"\n", b" 5 6 2 1 3 1 12.5 4 3\n")
    block = swf_module._fast_block(wider)
    assert block is not None and block.shape == (3, 40)
    assert swf_module._fast_block(wider.replace(b" 2 1 3 1 ", b" 2 5 3 1 ", 1)) is None


def test_header_only_dataclass_defaults():
    h = TraceHeader()
    assert (h.max_nodes, h.max_procs, h.unix_start_time, h.lines, h.names) == (
        None, None, None, [], {})


def test_whole_number_chunks_take_the_integer_parser_and_read_the_same():
    """The integer parser (5x faster) reads a chunk only when every field is a whole
    number; one fraction, exponent or int64 overflow sends the chunk to the float parser,
    and either way the values are those the float parser gives."""
    row = b"1 0 5 100 4 -1 -1 4 200 -1 1 3 2 -1 -1 -1 -1 -1\n"
    whole = row + row.replace(b"100", b"+7") + row.replace(b"200", b"9007199254740992")
    as_floats = np.loadtxt(io.BytesIO(whole), dtype=np.float64, ndmin=2)
    parsed = swf_module._whole_numbers(whole)
    assert parsed is not None and parsed.dtype == np.float64
    assert np.array_equal(parsed, as_floats)
    for odd in (b"100.5", b"1e2", b"nan", b"9223372036854775808", b"0x10"):
        chunk = whole.replace(b"100", odd, 1)
        assert swf_module._whole_numbers(chunk) is None, odd
    plain = row + row.replace(b"100", b"+7")  # within the trace limits: the fast path
    block = swf_module._fast_block(plain.replace(b"100", b"100.25", 1))
    assert block is not None and block[0, 3] == 100.25 and block[1, 3] == 7.0
    assert np.array_equal(swf_module._fast_block(plain), as_floats[:2])
