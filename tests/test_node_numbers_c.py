"""The lowest-first fit in C (schedd/core/_lowest_first.c) against schedd.core.node_numbers,
the reference it mirrors: the same node ranges for every segment, block by block, on
hand-worked and random segments and whole runs; the same refusals."""

from __future__ import annotations

import heapq
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd import run_files
from schedd.core.node_numbers import LowestFirst

needs_native = pytest.mark.skipif(run_files.native_fit is None,
                                  reason="the C fit is not built here")


def both_fits(total: int, start: list[float], end: list[float]):  # noqa: ANN201
    """(C fit, Python fit) for segments in this start order."""
    assert run_files.native_fit is not None
    by_end = np.argsort(np.array(end, dtype=np.float64), kind="stable")
    native = run_files.native_fit.LowestFirst(total, np.array(end, dtype=np.float64),
                                              by_end.astype(np.int64))
    return native, LowestFirst(total, list(map(float, end)), by_end.tolist())


def placed_by_c(native, starts: list[float], sizes: list[int]) -> tuple[list[int], list[int]]:  # noqa: ANN001
    flat, counts = native.place(np.array(starts, dtype=np.float64),
                                np.array(sizes, dtype=np.int64))
    return np.frombuffer(flat, np.int64).tolist(), np.frombuffer(counts, np.int64).tolist()


def test_the_c_fit_is_built_where_a_compiler_was():
    if os.environ.get("SCHEDD_PURE_PYTHON"):
        pytest.skip("a pure-Python install, by request")
    assert run_files.native_fit is not None


@needs_native
def test_by_hand():
    """8 nodes. [0,10) takes 4, [0,20) takes 2, [10,20) takes 4: the first's nodes come
    back at 10, before the third starts, so it takes 0-3 again; then [20,30) takes all 8
    once both others end at 20."""
    start, end, sizes = [0.0, 0.0, 10.0, 20.0], [10.0, 20.0, 20.0, 30.0], [4, 2, 4, 8]
    native, python = both_fits(8, start, end)
    want = ([0, 4, 4, 6, 0, 4, 0, 8], [1, 1, 1, 1])
    assert placed_by_c(native, start, sizes) == want
    assert python.place(start, sizes) == want


@needs_native
def test_fragmented_free_nodes_give_several_ranges():
    start, end, sizes = [0.0, 0.0, 0.0, 5.0, 6.0], [5.0, 9.0, 5.0, 9.0, 9.0], [2, 3, 2, 4, 1]
    native, python = both_fits(10, start, end)
    got = placed_by_c(native, start, sizes)
    assert got == python.place(start, sizes)
    assert got == ([0, 2, 2, 5, 5, 7, 0, 2, 5, 7, 7, 8], [1, 1, 1, 2, 1])


@needs_native
def test_the_same_refusals():
    native, python = both_fits(4, [0.0], [1.0])
    with pytest.raises(ValueError, match="more nodes held than the machine has"):
        python.place([0.0], [5])
    with pytest.raises(ValueError, match="more nodes held than the machine has"):
        native.place(np.array([0.0]), np.array([5], dtype=np.int64))
    native, python = both_fits(4, [0.0], [1.0])
    with pytest.raises(ValueError, match="more segments placed than ends"):
        native.place(np.zeros(2), np.ones(2, dtype=np.int64))
    assert run_files.native_fit is not None
    with pytest.raises(ValueError, match="by_end must number every segment"):
        run_files.native_fit.LowestFirst(4, np.zeros(2), np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="by_end must number every segment"):
        run_files.native_fit.LowestFirst(4, np.zeros(2), np.array([0, 7], dtype=np.int64))
    with pytest.raises(ValueError, match="one size per start"):
        both_fits(4, [0.0, 1.0], [1.0, 2.0])[0].place(np.zeros(2), np.ones(1, dtype=np.int64))


@st.composite
def segment_sets(draw):  # noqa: ANN001, ANN201
    total = draw(st.integers(1, 64))
    n = draw(st.integers(0, 60))
    starts = sorted(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))
    segments = []
    busy: list[tuple[int, int]] = []  # (end, nodes) of segments holding nodes
    for t in starts:
        busy = [(e, k) for e, k in busy if e > t]
        free = total - sum(k for _, k in busy)
        if free <= 0:
            continue
        nodes = draw(st.integers(0, free))
        end = t + draw(st.integers(0, 15))
        busy.append((end, nodes))
        segments.append((float(t), float(end), nodes))
    block = draw(st.integers(1, 20))
    return total, segments, block


@needs_native
@settings(max_examples=300, deadline=None)
@given(case=segment_sets())
def test_random_segments_block_by_block(case):
    total, segments, block = case
    start = [s for s, _, _ in segments]
    end = [e for _, e, _ in segments]
    sizes = [k for _, _, k in segments]
    native, python = both_fits(total, start, end)
    for lo in range(0, len(segments), block):
        hi = lo + block
        assert placed_by_c(native, start[lo:hi], sizes[lo:hi]) == \
            python.place(start[lo:hi], sizes[lo:hi])


@needs_native
def test_a_whole_run_numbers_the_same_nodes_either_way(monkeypatch):
    """segments.csv's placement of 100,000 synthetic segments on 1,024 nodes."""
    rng = np.random.default_rng(3)
    n, total = 100_000, 1024
    start = np.sort(rng.integers(0, 2_000_000, n)).astype(np.float64)
    end = start + rng.exponential(3000.0, n).round()
    nodes = np.minimum(np.exp2(rng.uniform(0, 9, n)).astype(np.int64), total)
    # Keep the segments that fit (the fit's input is a run's: never more than the pool).
    keep, running = [], []
    used = 0
    for i in range(n):
        while running and running[0][0] <= start[i]:
            used -= heapq.heappop(running)[1]
        if used + nodes[i] <= total:
            keep.append(i)
            used += int(nodes[i])
            heapq.heappush(running, (float(end[i]), int(nodes[i])))
    start, end, nodes = start[keep], end[keep], nodes[keep]
    with_c = run_files.pool_placement(start, end, nodes, total)
    monkeypatch.setattr(run_files, "native_fit", None)
    assert with_c == run_files.pool_placement(start, end, nodes, total)
