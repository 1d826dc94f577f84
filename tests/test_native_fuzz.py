"""Every entry point of the five C modules fuzzed against its Python path (issue 35,
item 4): malformed, huge and non-ASCII input, NUL bytes, empty blocks and random tables.
Where the input is one the Python path takes, both give the same values; where it is
not, the C module raises an ordinary exception and never reads or writes outside its
memory. That last part is what `make sanitize` checks: it runs this file (with
SCHEDD_FUZZ_EXAMPLES examples a test) on a build of the modules with AddressSanitizer and
UndefinedBehaviorSanitizer (tests/native/), where any stray access stops the run."""

from __future__ import annotations

import contextlib
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd import row_text, run_files
from schedd.core.node_numbers import LowestFirst
from schedd.policies import easy_plain
from schedd.traces import swf

EXAMPLES = int(os.environ.get("SCHEDD_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
# What a malformed call may raise: an ordinary Python error, nothing else.
REFUSALS = (ValueError, TypeError, IndexError, OverflowError, BufferError, MemoryError)
INT64_MAX = 2**63 - 1


# --- schedd/traces/_whole_numbers.c -------------------------------------------------------

whole = pytest.mark.skipif(swf.native is None, reason="the C parser is not built here")
WHOLE = re.compile(rb"[+-]?[0-9]+")


def whole_numbers_reference(data: bytes) -> list[float] | None:
    """What _whole_numbers.c promises, in Python: every field of every non-blank line, or
    None unless each field is [+-]digits within int64, separated by blanks or tabs, and
    every line has as many fields."""
    values: list[float] = []
    width = None
    for line in data.split(b"\n"):
        fields = [f for f in re.split(rb"[ \t]+", line) if f]
        if not fields:
            continue
        if width is None:
            width = len(fields)
        if len(fields) != width:
            return None
        for field in fields:
            if not WHOLE.fullmatch(field):
                return None
            value = int(field)
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                return None
            values.append(float(value))
    return values


TOKENS = st.sampled_from([
    b"0", b"7", b"-1", b"+42", b"-0", b"123456789", b"9223372036854775807",
    b"-9223372036854775808", b"9223372036854775808", b"-9223372036854775809",
    b"18446744073709551616", b"99999999999999999999999", b"1.5", b"1e3", b"nan", b"-",
    b"+", b" ", b"  ", b"\t", b"\n", b"\n\n", b"\r\n", b"\0", b"\x00\x01", b"\xc3\xa9",
    b"\xff", b"x", b"--1", b"1-", b"\v", b"\f"])


@whole
@fuzz
@given(pieces=st.lists(TOKENS, max_size=60))
def test_whole_numbers_of_any_bytes_are_the_reference(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert swf.native is not None
    got = swf.native.whole_numbers(data)
    want = whole_numbers_reference(data)
    if want is None:
        assert got is None
    else:
        assert got is not None and np.frombuffer(got, np.float64).tolist() == want


@whole
@fuzz
@given(rows=st.lists(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=3, max_size=3),
                     max_size=40),
       sep=st.sampled_from([b" ", b"\t", b"  \t "]), tail=st.sampled_from([b"", b"\n"]))
def test_whole_numbers_of_random_tables_are_numpys(rows: list[list[int]], sep: bytes,
                                                   tail: bytes) -> None:
    """Tables of whole numbers: the C parser's floats are NumPy's loadtxt's, which it
    runs ahead of (swf._whole_numbers without it)."""
    data = b"\n".join(sep.join(b"%d" % v for v in row) for row in rows) + tail
    assert swf.native is not None
    got = swf.native.whole_numbers(data)
    assert got is not None
    want = swf._load(data, np.int64) if rows else np.empty(0)
    assert want is not None
    assert np.frombuffer(got, np.float64).tolist() == want.astype(np.float64).ravel().tolist()


@whole
def test_whole_numbers_of_a_huge_block_and_of_other_buffers() -> None:
    assert swf.native is not None
    line = b"1 0 10 3600 64 -1 -1 64 7200 -1 1 3 1 -1 1 -1 -1 -1\n"
    data = line * 200_000  # 11 MB
    got = np.frombuffer(swf.native.whole_numbers(data), np.float64)
    assert got.shape == (18 * 200_000,) and got[:18].tolist() == whole_numbers_reference(line)
    assert swf.native.whole_numbers(bytearray(b"1 2\n3 4")) is not None
    assert swf.native.whole_numbers(memoryview(b"x1 2")[1:]) is not None
    assert swf.native.whole_numbers(b"") == bytearray()
    for bad in ("1 2", 12, None, memoryview(b"1 2 3 4")[::2]):
        with pytest.raises(REFUSALS):
            swf.native.whole_numbers(bad)  # type: ignore[arg-type]


# --- schedd/_row_text.c -------------------------------------------------------------------

rows_c = pytest.mark.skipif(row_text.native is None, reason="the C formatter is not built")

PAYLOADS = st.one_of(
    st.integers(-3, 3), st.binary(max_size=8), st.text(max_size=4),
    st.sampled_from([b"", b"a\0b", "é".encode(), b"\xff\xfe", None, (), (1,),
                     np.zeros(0, np.int64), np.zeros(3, np.int64), np.ones(2, np.float64),
                     np.array([np.nan, np.inf, -1e300]), np.array([2**62, -1], np.int64),
                     np.zeros(3, np.uint8), np.zeros(5, np.int8), np.arange(6, dtype=np.int64),
                     np.array([0, 4, 4, 3, -1, 2], np.int64), (b"ok", b"n\0"), (b"a", "b"),
                     memoryview(b"abcdefgh")[::2]]))


@rows_c
@fuzz
@given(specs=st.lists(st.tuples(st.integers(-1, 6), PAYLOADS, PAYLOADS).map(
    lambda t: t[:2] if t[2] is None else t), max_size=4),
       n=st.sampled_from([0, 1, 2, 3, 6, -1]), sep=st.sampled_from([",", " ", "\0", "\n", "é"]))
def test_malformed_columns_are_refused_in_a_sentence(specs: list[tuple[object, ...]], n: int,
                                                     sep: str) -> None:
    assert row_text.native is not None
    try:
        text = row_text.native.rows(specs, n, sep)
    except REFUSALS:
        return
    assert isinstance(text, bytes)


@rows_c
@fuzz
@given(cells=st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\n,\0"),
                              max_size=6), min_size=1, max_size=12),
       codes=st.data())
def test_non_ascii_text_and_words_are_the_numpy_paths(cells: list[str], codes: st.DataObject,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    data = [c.encode() for c in cells]
    text = row_text.Text(np.frombuffer(b"".join(data), np.uint8).copy(),
                         np.array([len(d) for d in data], np.int64))
    words = tuple(cells)
    picked = codes.draw(st.lists(st.integers(-len(words), len(words) - 1),
                                 min_size=len(cells), max_size=len(cells)))
    columns: list[row_text.Column] = [text, row_text.Words(np.array(picked, np.int64), words),
                                      row_text.Constant(cells[0])]
    got = row_text.rows_text(columns, len(cells), b",")
    with monkeypatch.context() as patch:
        patch.setattr(row_text, "native", None)
        assert got == row_text.rows_text(columns, len(cells), b",")


@rows_c
def test_nul_bytes_in_text_are_refused_not_cut() -> None:
    assert row_text.native is not None
    for spec in [(2, b"a\0"), (3, np.zeros(1, np.int64), (b"\0",)),
                 (4, np.frombuffer(b"x\0", np.uint8), np.array([2], np.int64))]:
        with pytest.raises(ValueError, match="NUL"):
            row_text.native.rows([spec], 1, ",")


@rows_c
@pytest.mark.parametrize("n", [2**62 + 1, 2**61 + 1, 2**63 - 1])
def test_a_row_count_beyond_memory_is_refused_not_wrapped(n: int) -> None:
    """A constant column needs no buffer of n values, so n itself is unchecked: the size
    of its text, (bytes a row) x n, must not wrap around to a small buffer."""
    assert row_text.native is not None
    with pytest.raises(MemoryError):
        row_text.native.rows([(2, b"abc")], n, ",")
    with pytest.raises(MemoryError):
        row_text.native.rows([(2, b"abcdefghijklmno"), (2, b"")], n, ",")


@rows_c
def test_empty_blocks_and_a_huge_block() -> None:
    assert row_text.native is not None
    assert row_text.native.rows([], 5, ",") == b""
    assert row_text.native.rows([(0, np.zeros(0, np.int64))], 0, ",") == b""
    n = 300_000
    values = np.arange(-n, n, 2, dtype=np.int64)
    got = row_text.native.rows([(0, values), (1, values / 8), (2, b"x")], n, ",")
    assert got.count(b"\n") == n and got.startswith(b"-300000,-37500,x\n")


# --- schedd/core/_lowest_first.c ----------------------------------------------------------

fit_c = pytest.mark.skipif(run_files.native_fit is None, reason="the C fit is not built")


def _python_fit(total: int, ends: list[float], by_end: list[int], blocks: list[tuple[
        list[float], list[int]]]) -> list[object]:
    fit = LowestFirst(total, ends, by_end)
    out: list[object] = []
    for starts, sizes in blocks:
        try:
            out.append(fit.place(starts, sizes))
        except ValueError as err:
            out.append(str(err))
            break
    return out


def _c_fit(total: int, ends: list[float], by_end: list[int], blocks: list[tuple[
        list[float], list[int]]]) -> list[object]:
    assert run_files.native_fit is not None
    fit = run_files.native_fit.LowestFirst(total, np.array(ends, np.float64),
                                           np.array(by_end, np.int64))
    out: list[object] = []
    for starts, sizes in blocks:
        try:
            flat, counts = fit.place(np.array(starts, np.float64), np.array(sizes, np.int64))
        except ValueError as err:
            out.append(str(err))
            break
        out.append((np.frombuffer(flat, np.int64).tolist(),
                    np.frombuffer(counts, np.int64).tolist()))
    return out


@fit_c
@fuzz
@given(total=st.integers(0, 40), data=st.data())
def test_the_c_fit_of_random_segments_with_empty_ones_is_pythons(total: int,
                                                                  data: st.DataObject) -> None:
    """Segments of 0 nodes, segments larger than the pool, empty blocks and instants
    shared by many: the same ranges, or the same refusal."""
    count = data.draw(st.integers(0, 30))
    starts = sorted(data.draw(st.lists(st.integers(0, 20), min_size=count, max_size=count)))
    ends = [s + data.draw(st.integers(0, 10)) for s in starts]
    sizes = data.draw(st.lists(st.integers(0, total + 2), min_size=count, max_size=count))
    by_end = sorted(range(count), key=lambda k: ends[k])
    cuts = sorted(data.draw(st.lists(st.integers(0, count), max_size=4)))
    blocks, at = [], 0
    for cut in [*cuts, count]:
        blocks.append(([float(s) for s in starts[at:cut]], sizes[at:cut]))
        at = cut
    ends_f = [float(e) for e in ends]
    assert _c_fit(total, ends_f, by_end, blocks) == _python_fit(total, ends_f, by_end, blocks)


@fit_c
def test_a_segment_of_no_nodes_placed_first() -> None:
    """The first segment holds nothing: no range to copy from an empty list (UBSan: a
    null pointer given to memcpy, found by `make sanitize`)."""
    blocks = [([0.0, 0.0], [0, 2])]
    assert _c_fit(4, [1.0, 2.0], [0, 1], blocks) == _python_fit(4, [1.0, 2.0], [0, 1], blocks)


@fit_c
def test_malformed_fits_are_refused() -> None:
    native = run_files.native_fit
    assert native is not None
    cases = [
        (4, np.zeros(2), np.array([0, 2], np.int64)),  # a number past the segments
        (4, np.zeros(2), np.array([0, -1], np.int64)),
        (4, np.zeros(2), np.zeros(3, np.int64)),
        (4, b"\0" * 7, b""),  # not 8-byte values
        (4, "ab", np.zeros(0, np.int64)),
        (2**70, np.zeros(0), np.zeros(0, np.int64)),
    ]
    for total, ends, by_end in cases:
        with pytest.raises(REFUSALS):
            native.LowestFirst(total, ends, by_end)
    fit = native.LowestFirst(4, np.zeros(1), np.zeros(1, np.int64))
    for starts, sizes in [(np.zeros(2), np.zeros(1, np.int64)), (np.zeros(2),
                          np.zeros(2, np.int64)), (b"1234567", b""), (None, None)]:
        with pytest.raises(REFUSALS):
            fit.place(starts, sizes)
    fit.__init__(2, np.zeros(1), np.zeros(1, np.int64))  # again: starts over
    with pytest.raises(ValueError, match="more nodes held"):
        fit.place(np.zeros(1), np.array([3], np.int64))
    bare = native.LowestFirst.__new__(native.LowestFirst)  # never initialised
    assert [bytes(b) for b in bare.place(np.zeros(0), np.zeros(0, np.int64))] == [b"", b""]
    with pytest.raises(REFUSALS):
        bare.place(np.zeros(1), np.ones(1, np.int64))


# --- schedd/policies/_easy_plain.c --------------------------------------------------------

easy_c = pytest.mark.skipif(easy_plain.native is None, reason="the C loop is not built")
ORDERS = ("first", "best", "sjf")


@st.composite
def plain_tables(draw: st.DrawFn) -> tuple[dict[str, np.ndarray], int]:
    """Job columns as easy_plain._job_columns makes them, some too large to ever start."""
    total = draw(st.integers(1, 64))
    n = draw(st.integers(0, 40))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 0.5, 7.0, 100.0, 1e-9]),
                         min_size=n, max_size=n))
    submit = np.cumsum(np.array(gaps, np.float64)) if n else np.zeros(0)
    nodes = draw(st.lists(st.integers(1, total + 3), min_size=n, max_size=n))
    walltime = draw(st.lists(st.sampled_from([1.0, 2.0, 10.0, 60.0, 3600.0, 0.25]),
                             min_size=n, max_size=n))
    share = draw(st.lists(st.sampled_from([1.0, 0.5, 0.1, 1.0]), min_size=n, max_size=n))
    setup = draw(st.lists(st.sampled_from([0.0, 0.0, 0.0, 5.0]), min_size=n, max_size=n))
    w = np.array(walltime, np.float64)
    return {"submit": submit, "nodes": np.array(nodes, np.int64), "walltime": w,
            "setup": np.array(setup, np.float64),
            "target": w * np.array(share, np.float64)}, total


@easy_c
@fuzz
@given(table=plain_tables(), order=st.sampled_from(ORDERS), incremental=st.booleans())
def test_the_c_loop_on_random_tables_is_the_python_loop(
        table: tuple[dict[str, np.ndarray], int], order: str, incremental: bool) -> None:
    job, total = table
    now = float(job["submit"][0]) if len(job["submit"]) else 0.0
    reports_c: list[int] = []
    reports_py: list[int] = []
    assert easy_plain.native is not None
    got = easy_plain.native.run(job["submit"], job["nodes"], job["walltime"], job["setup"],
                                job["target"], total, total, ORDERS.index(order),
                                incremental, now, reports_c.append)
    want = easy_plain._loop(job, total, total, order, incremental, now, reports_py.append)
    assert np.frombuffer(got[0], np.float64).tolist() == want[0].tolist()
    assert np.frombuffer(got[1], np.float64).tolist() == want[1].tolist()
    assert np.frombuffer(got[2], np.bool_).tolist() == want[2].tolist()
    assert np.frombuffer(got[3], np.int64).tolist() == want[3].tolist()
    assert np.frombuffer(got[4], np.int64).tolist() == want[4].tolist()
    assert (got[5], got[6], got[7]) == (want[5], want[6], want[7])
    assert reports_c == reports_py


@easy_c
def test_malformed_loops_are_refused() -> None:
    native = easy_plain.native
    assert native is not None
    f, i = np.zeros(2), np.ones(2, np.int64)
    good = (f, i, f, f, f)
    for columns in [(f, i[:1], f, f, f), (f, i, f, np.zeros(3), f), (b"1234567", i, f, f, f),
                    (f, "ab", f, f, f), (None, i, f, f, f)]:
        with pytest.raises(REFUSALS):
            native.run(*columns, 4, 4, 0, True, 0.0, None)
    for order in (-1, 3):
        with pytest.raises(ValueError):
            native.run(*good, 4, 4, order, True, 0.0, None)
    empty = np.zeros(0)
    got = native.run(empty, np.zeros(0, np.int64), empty, empty, empty, 4, 4, 0, True, 0.0,
                     None)
    assert [bytes(b) for b in got[:5]] == [b""] * 5


class _Enough(Exception):
    """Raised from the progress callback: a wild table may never end (a NaN instant)."""


WILD_FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                        st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, 1e308]))


@easy_c
@fuzz
@given(data=st.data(), n=st.integers(0, 24), order=st.integers(0, 2),
       incremental=st.booleans(), total=st.integers(-3, 70), free=st.integers(-3, 70))
def test_wild_tables_are_run_or_refused_never_overrun(data: st.DataObject, n: int,
                                                      order: int, incremental: bool,
                                                      total: int, free: int) -> None:
    """Values no trace gives (NaN, infinities, negative sizes and times, unsorted
    submits): whatever the loop makes of them, it stays inside its arrays. The progress
    callback stops a run that would go on forever."""
    def column(values: st.SearchStrategy[float]) -> np.ndarray:
        return np.array(data.draw(st.lists(values, min_size=n, max_size=n)), np.float64)

    submit, walltime, setup, target = (column(WILD_FLOATS) for _ in range(4))
    nodes = np.array(data.draw(st.lists(st.integers(-(2**62), 2**62) | st.integers(-2, 8),
                                        min_size=n, max_size=n)), np.int64)
    calls: list[int] = []

    def progress(ended: int) -> None:
        calls.append(ended)
        if len(calls) > 3:
            raise _Enough

    assert easy_plain.native is not None
    try:
        easy_plain.native.run(submit, nodes, walltime, setup, target, total, free, order,
                              incremental, 0.0, progress)
    except (_Enough, RuntimeError, *REFUSALS):
        pass


@easy_c
@pytest.mark.parametrize("nodes, total", [([2**62, 2**62], 4), ([1, 1], 2**62 + 1),
                                          ([-(2**63), 1], 4), ([2**61] * 4, 2**61)])
def test_node_counts_whose_sums_overflow_are_refused(nodes: list[int], total: int) -> None:
    """The loop adds node counts up in int64 (UBSan: a signed overflow in easy_starts,
    found by the wild-table fuzz under `make sanitize`); Python's integers do not wrap,
    so counts whose sums could are refused instead of giving other numbers."""
    assert easy_plain.native is not None
    f = np.ones(len(nodes))
    with pytest.raises(OverflowError, match="int64"):
        easy_plain.native.run(f, np.array(nodes, np.int64), f, f * 0, f, total, total, 0,
                              True, 0.0, None)


@easy_c
def test_a_nan_end_is_an_index_error_as_in_python_not_a_read_past_the_list() -> None:
    """A NaN walltime puts a running job's predicted end out of order: the Python loop's
    search of it runs off its list (IndexError); the C loop's ran off its array (ASan: a
    heap-buffer-overflow, found by the wild-table fuzz under `make sanitize`)."""
    nan = float("nan")
    job = {"submit": np.zeros(5), "nodes": np.ones(5, np.int64),
           "walltime": np.array([3.0, nan, 3.0, 2.0, 1.0]), "setup": np.zeros(5),
           "target": np.array([2.0, 2.0, 1.0, 3.0, 2.0])}
    with pytest.raises(IndexError):
        easy_plain._loop(job, 8, 8, "first", True, 0.0, None)
    assert easy_plain.native is not None
    with pytest.raises(IndexError):
        easy_plain.native.run(job["submit"], job["nodes"], job["walltime"], job["setup"],
                              job["target"], 8, 8, 0, True, 0.0, None)


# --- schedd/policies/_agent_obs.c ---------------------------------------------------------

def _agent_obs():  # the module, or None where it is not built
    from schedd.policies import agent_plain
    return agent_plain.native


obs_c = pytest.mark.skipif(_agent_obs() is None, reason="the C observation is not built")
WAIT, NODES, WALLTIME, SUBMIT, FITS = 1, 2, 3, 5, 10  # schedd.policies.scoring's columns


def _observation_reference(static: np.ndarray, window: int, limit: int, rows: list[int],
                           now: float, free: int, total: int, waiting: int, running: int,
                           ends: list[float], end_rows: list[int], picked: list[int]
                           ) -> tuple[np.ndarray, np.ndarray]:
    """What fill writes, from its documented contract (agent_plain._observe_py)."""
    jobs = np.zeros((window, 11))
    for j, row in enumerate(rows):
        jobs[j] = static[row]
        jobs[j, WAIT] = now - jobs[j, SUBMIT]
        jobs[j, FITS] = 1.0 if jobs[j, NODES] <= free else 0.0
    machine = [now, float(free), float(total), float(waiting), float(running)]
    if limit > 0:
        k = min(len(ends), limit)
        pairs = [(ends[j] - now, float(static[end_rows[j], NODES])) for j in range(k)]
        if picked:
            pairs += [(float(static[r, WALLTIME]), float(static[r, NODES])) for r in picked]
            pairs.sort()
        for a, b in pairs[:limit]:
            machine += [a, b]
        machine += [0.0] * (5 + 2 * limit - len(machine))
    return jobs, np.array(machine)


@obs_c
@fuzz
@given(data=st.data(), n_jobs=st.integers(1, 12), window=st.integers(1, 8),
       limit=st.integers(0, 6))
def test_the_c_observation_of_random_states_is_the_python_one(
        data: st.DataObject, n_jobs: int, window: int, limit: int) -> None:
    values = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
    static = np.array(data.draw(st.lists(st.lists(values, min_size=11, max_size=11),
                                         min_size=n_jobs, max_size=n_jobs)))
    rows = data.draw(st.lists(st.integers(0, n_jobs - 1), max_size=window))
    ends = sorted(data.draw(st.lists(values, max_size=8)))
    end_rows = data.draw(st.lists(st.integers(0, n_jobs - 1), min_size=len(ends),
                                  max_size=len(ends)))
    picked = data.draw(st.lists(st.integers(0, n_jobs - 1), max_size=4))
    now, free = data.draw(values), data.draw(st.integers(-5, 50))
    args = (rows, now, free, 16, len(rows), len(ends) + len(picked), ends, end_rows, picked)
    jobs, machine = np.zeros((window, 11)), np.zeros(5 + 2 * limit)
    _agent_obs().fill(jobs, machine, static, *args)
    want_jobs, want_machine = _observation_reference(static, window, limit, *args)
    assert np.array_equal(jobs, want_jobs) and np.array_equal(machine, want_machine)


@obs_c
@fuzz
@given(data=st.data())
def test_wild_observation_calls_are_refused_never_overrun(data: st.DataObject) -> None:
    """Arrays of any size and type, rows and ends of any value and type (NaN, infinities,
    huge and negative rows, objects with __index__ or __float__): filled or refused with
    an ordinary error, never a read or write outside them (under `make sanitize`)."""
    class Floaty:
        def __float__(self) -> float:  # pragma: no cover - refused before
            raise AssertionError("fill ran __float__")

    class Indexy:
        def __index__(self) -> int:  # pragma: no cover - refused before
            raise AssertionError("fill ran __index__")

    anything = st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.none(),
                         st.text(max_size=2), st.just(Floaty()), st.just(Indexy()),
                         st.booleans())

    def array(shape_max: int) -> st.SearchStrategy[object]:
        return st.one_of(
            st.integers(0, shape_max).map(lambda k: np.zeros(k)),
            st.integers(0, shape_max).map(lambda k: np.zeros(k, np.float32)),
            st.integers(0, 4).map(lambda k: np.zeros((k, 11))),
            st.integers(0, 4).map(lambda k: np.zeros((k, 11))[:, ::-1]),
            st.binary(max_size=shape_max * 8), st.just(b""), anything)
    lists = st.lists(anything, max_size=6)
    jobs, machine, static = data.draw(array(50)), data.draw(array(20)), data.draw(array(50))
    rows, now, free = data.draw(lists), data.draw(st.floats()), data.draw(
        st.integers(-(2**40), 2**40))
    ends, end_rows, picked = data.draw(lists), data.draw(lists), data.draw(lists)
    with contextlib.suppress(*REFUSALS):
        _agent_obs().fill(jobs, machine, static, rows, now, free, 8, 1, 1, ends, end_rows,
                          picked)
