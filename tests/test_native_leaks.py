"""A million calls of each C module's entry point keep the process's memory flat (issue 35,
item 4): every way through each function, the ones that succeed and the ones that refuse
their input after having taken buffers and memory, in turn. The resident set after the
million is compared with the one after a warm-up (a threshold, not a time), and the
reference counts of the inputs are unchanged (a buffer not released keeps its object
alive, which memory alone would not show when the same inputs are used again).

`make sanitize` runs this file on the normal build: AddressSanitizer's quarantine keeps
freed memory on purpose, so the resident set says nothing under it."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable

import numpy as np
import pytest

from schedd import row_text, run_files
from schedd.policies import easy_plain
from schedd.traces import swf

CALLS = 1_000_000
WARM_UP = 20_000
# Under 4 bytes a call: one leaked malloc block (32 bytes at least) on even a quarter of
# the calls would be 8 MiB.
LIMIT = 4 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def flat(cases: list[Callable[[], object]], inputs: list[object]) -> None:
    """CALLS calls taking the cases in turn: the resident set and the inputs' reference
    counts as they were after the warm-up."""
    def run(times: int) -> None:
        for i in range(times):
            try:  # noqa: SIM105 (a with-block a call would be a fifth of the loop)
                cases[i % len(cases)]()
            except (ValueError, TypeError, IndexError, OverflowError):
                pass

    run(WARM_UP)
    gc.collect()
    before, counts = rss(), [sys.getrefcount(x) for x in inputs]
    run(CALLS)
    gc.collect()
    grown = rss() - before
    assert [sys.getrefcount(x) for x in inputs] == counts, "an input's reference leaked"
    assert grown < LIMIT, f"{grown / CALLS:.1f} bytes a call stayed ({grown >> 10} KiB)"


@pytest.mark.skipif(swf.native is None, reason="the C parser is not built here")
def test_whole_numbers_keeps_memory_flat() -> None:
    parse = swf.native.whole_numbers  # type: ignore[union-attr]
    good, ragged, decimal = b"1 0 10 3600 64\n2 5 -1 60 1\n", b"1 2\n3\n", b"1 2.5\n"
    flat([lambda: parse(good), lambda: parse(ragged), lambda: parse(decimal),
          lambda: parse("text")], [good, ragged, decimal])


@pytest.mark.skipif(row_text.native is None, reason="the C formatter is not built here")
def test_rows_keeps_memory_flat() -> None:
    rows = row_text.native.rows  # type: ignore[union-attr]
    ints = np.array([1, -20], np.int64)
    floats = np.array([0.5, 2.0005], np.float64)  # the second takes Python's rounding
    codes, bad_codes = np.array([0, 1], np.int64), np.array([0, 7], np.int64)
    text, lengths = np.frombuffer("é-ü".encode(), np.uint8), np.array([2, 3], np.int64)
    nul = np.frombuffer(b"a\0b", np.uint8)
    pairs, counts = np.array([0, 4, 7, 8], np.int64), np.array([2, 0], np.int64)
    nan = np.array([np.nan, 1.0])
    good = [(0, ints), (1, floats), (2, b"KTH"), (3, codes, (b"completed", b"killed")),
            (4, text, lengths), (5, pairs, counts)]
    flat([lambda: rows(good, 2, ","),
          lambda: rows([(0, ints), (3, bad_codes, (b"a", b"b"))], 2, ","),
          lambda: rows([(0, ints), (4, nul, np.array([1, 2], np.int64))], 2, ","),
          lambda: rows([(5, pairs, counts), (1, nan)], 2, ",")],
         [ints, floats, codes, bad_codes, text, lengths, nul, pairs, counts, nan])


@pytest.mark.skipif(run_files.native_fit is None, reason="the C fit is not built here")
def test_lowest_first_keeps_memory_flat() -> None:
    fit_type = run_files.native_fit.LowestFirst  # type: ignore[union-attr]
    ends = np.array([5.0, 3.0, 9.0, 4.0])
    by_end = np.argsort(ends, kind="stable").astype(np.int64)
    starts, sizes = np.array([0.0, 1.0, 3.0, 4.0]), np.array([2, 3, 0, 4], np.int64)
    too_many = np.array([2, 3, 9, 4], np.int64)
    bad_order = np.array([0, 1, 2, 9], np.int64)

    def place(sizes: np.ndarray) -> object:
        fit = fit_type(8, ends, by_end)
        fit.place(starts[:2], sizes[:2])
        return fit.place(starts[2:], sizes[2:])

    flat([lambda: place(sizes), lambda: place(too_many),
          lambda: fit_type(8, ends, bad_order), lambda: fit_type(8, ends, by_end)],
         [ends, by_end, starts, sizes, too_many, bad_order])


@pytest.mark.skipif(easy_plain.native is None, reason="the C loop is not built here")
def test_easy_plain_keeps_memory_flat() -> None:
    run = easy_plain.native.run  # type: ignore[union-attr]
    submit = np.array([0.0, 0.0, 1.0, 2.0, 2.0])
    nodes = np.array([4, 2, 3, 1, 8], np.int64)
    huge = np.array([4, 2, 3, 1, 2**62], np.int64)
    walltime = np.array([10.0, 5.0, 3.0, 8.0, 2.0])
    setup = np.zeros(5)
    target = walltime * 0.5
    short = np.zeros(4)
    flat([lambda: run(submit, nodes, walltime, setup, target, 8, 8, 0, True, 0.0, None),
          lambda: run(submit, nodes, walltime, setup, target, 8, 8, 2, False, 0.0, None),
          lambda: run(submit, huge, walltime, setup, target, 8, 8, 1, True, 0.0, None),
          lambda: run(submit, nodes, walltime, short, target, 8, 8, 0, True, 0.0, None)],
         [submit, nodes, huge, walltime, setup, target, short])


def test_agent_observation_keeps_memory_flat() -> None:
    from schedd.policies import agent_plain

    if agent_plain.native is None:
        pytest.skip("the C observation is not built here")
    fill = agent_plain.native.fill
    static = np.arange(44, dtype=np.float64).reshape(4, 11)
    jobs, machine = np.zeros((3, 11)), np.zeros(9)
    rows, ends, end_rows, picked = [0, 2, 3], [5.0, 9.0], [1, 3], [2]
    bad_rows, bad_ends = [0, 7], ["x"]
    flat([lambda: fill(jobs, machine, static, rows, 1.0, 2, 4, 3, 3, ends, end_rows, picked),
          lambda: fill(jobs, machine, static, rows, 1.0, 2, 4, 3, 2, ends, end_rows, []),
          lambda: fill(jobs, machine, static, bad_rows, 1.0, 2, 4, 3, 2, [], [], []),
          lambda: fill(jobs, machine, static, rows, 1.0, 2, 4, 3, 2, bad_ends, [0], [])],
         [static, jobs, machine, rows, ends, end_rows, picked, bad_rows, bad_ends])
