"""segments.csv and timeseries.csv: the files a run's figures are drawn from.

segments.csv has one row per execution segment, with Batsim/evalys `jobs.csv` column names
first (docs/results.md has the mapping) so evalys loads it, then schedd's own:

* node pools: `allocated_resources` is an interval set of node numbers ("0-15 32-47").
  The engine counts nodes, it does not name them, so numbers are assigned after the run by
  a deterministic lowest-first fit over the segments in time order (ends before starts at
  the same instant): one valid placement, the one a Gantt chart draws.
* Blue Gene/Q: `allocated_resources` is the interval set of the midplanes the partition
  spans (M00 = 0 ... M95 = 95) and `partition` its block name.

timeseries.csv has one row per change of the machine's state (or, with a step, the state
in force at every multiple of the step).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from .core.bgq import BlockCluster, iter_bits
from .core.cluster import Cluster
from .core.node_numbers import LowestFirst
from .core.recorder import DOWN, END_REASONS, RESERVED, TIMESERIES_COLUMNS, RunRecorder
from .core.results import CLASS_CODES
from .row_text import Column, Constant, Numbers, Ranges, Words, rows_text
from .text_columns import BLOCK_ROWS, Text, interval_set_cells

native_fit: ModuleType | None
try:
    from .core import _lowest_first as native_fit
except ImportError:  # not built: node_numbers (compiled by mypyc or not) numbers the nodes
    native_fit = None

SEGMENT_COLUMNS = (
    # Batsim / evalys jobs.csv names
    "job_id", "workload_name", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time",
    "finish_time", "waiting_time", "turnaround_time", "stretch", "allocated_resources",
    # schedd's own
    "segment", "nodes", "partition", "end_reason", "job_class",
)
# Batsim's final_state words for how the segment ended.
_BATSIM_STATE = {"completed": "COMPLETED_SUCCESSFULLY", "killed": "COMPLETED_WALLTIME_REACHED",
                 "cancelled": "COMPLETED_KILLED", "failed": "COMPLETED_FAILED",
                 "preempted": "COMPLETED_KILLED", "checkpointed": "COMPLETED_KILLED",
                 "resized": "COMPLETED_KILLED", "running": "COMPLETED_KILLED"}


def interval_set(ids: list[int]) -> str:
    """Sorted resource numbers as Batsim's interval-set text: "0-3 8 10-11"."""
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return " ".join(parts)


def texts_of(cells: Text) -> list[str]:
    """Cells of text as Python strings."""
    data = cells.data.tobytes()
    bounds = [0, *np.cumsum(cells.lengths).tolist()]
    return [data[a:b].decode() for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def pool_placement(start: np.ndarray, end: np.ndarray, nodes: np.ndarray,
                   total: int) -> list[str]:
    """Node interval sets for pool segments: lowest-first fit in time order
    (schedd.core.node_numbers)."""
    order = np.lexsort((np.arange(len(start)), start))
    start, end = (np.asarray(a, dtype=np.float64)[order] for a in (start, end))
    placed = texts_of(interval_set_cells(*placer_for(total, start, end).place(
        start, np.asarray(nodes, dtype=np.int64)[order])))
    text = [""] * len(placed)
    for j, i in enumerate(order.tolist()):
        text[i] = placed[j]
    return text


def placer_for(total: int, start: np.ndarray, end: np.ndarray) -> Placer:
    """The fit for segments that will be placed in this (start) order."""
    if bool((end < start).any()):
        raise ValueError("a segment ends before it starts")
    return Placer(total, np.asarray(end, dtype=np.float64), np.argsort(end, kind="stable"))


class Placer:
    """The lowest-first fit of schedd.core.node_numbers, a block of segments at a time:
    in C without the GIL where schedd/core/_lowest_first.c is built (the same numbers,
    tests/test_node_numbers_c.py), else node_numbers.LowestFirst."""

    def __init__(self, total: int, ends: np.ndarray, by_end: np.ndarray) -> None:
        self._native = None if native_fit is None else native_fit.LowestFirst(
            total, np.ascontiguousarray(ends, dtype=np.float64),
            np.ascontiguousarray(by_end, dtype=np.int64))
        self._python = None if self._native is not None else LowestFirst(
            total, ends.tolist(), by_end.tolist())

    def place(self, starts: Sequence[float] | np.ndarray, sizes: Sequence[int] | np.ndarray
              ) -> tuple[Sequence[int] | np.ndarray, Sequence[int] | np.ndarray]:
        """The next segments' node ranges, flat, and how many each has (LowestFirst.place)."""
        start_values = np.asarray(starts, dtype=np.float64)
        size_values = np.asarray(sizes, dtype=np.int64)
        if self._python is not None:
            return self._python.place(start_values.tolist(), size_values.tolist())
        assert self._native is not None
        flat, counts = self._native.place(np.ascontiguousarray(start_values),
                                          np.ascontiguousarray(size_values))
        return np.frombuffer(flat, np.int64), np.frombuffer(counts, np.int64)


def segment_table(rec: RunRecorder, cluster: Cluster,
                  results: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The recorder's segments as columns, ordered by (start, job id), joined with the
    jobs' submit time, request and class from the result columns."""
    job, nodes, block, reason = (np.array(c, dtype=np.int64) for c in
                                 (rec.seg_job, rec.seg_nodes, rec.seg_block, rec.seg_reason))
    start, end = (np.array(c, dtype=np.float64) for c in (rec.seg_start, rec.seg_end))
    order = np.lexsort((job, start))
    job, nodes, block, reason = (a[order] for a in (job, nodes, block, reason))
    start, end = start[order], end[order]
    # Segment number within its job (1, 2, ...), in start order.
    by_job = np.lexsort((start, job))
    seg_no = np.empty(len(job), dtype=np.int64)
    if len(job):
        sj = job[by_job]
        first = np.r_[True, sj[1:] != sj[:-1]]
        run_start = np.maximum.accumulate(np.where(first, np.arange(len(sj)), 0))
        seg_no[by_job] = np.arange(len(sj)) - run_start + 1
    ids = results["id"]
    sorter = np.argsort(ids, kind="stable")
    at = sorter[np.searchsorted(ids, job, sorter=sorter)] if len(job) else np.empty(0, int)
    return {"job": job, "start": start, "end": end, "nodes": nodes, "block": block,
            "reason": reason, "segment": seg_no, "submit": results["submit"][at],
            "req_nodes": results["nodes"][at], "walltime": results["orig_walltime"][at],
            "job_class": results["job_class"][at]}


# The recorder's columns by table, as the daemon's GetResults(table=...) streams them:
# (column name on the wire, recorder attribute, integer column?).
RECORD_TABLES: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "segments": (("job", "seg_job", True), ("start", "seg_start", False),
                 ("end", "seg_end", False), ("nodes", "seg_nodes", True),
                 ("block", "seg_block", True), ("reason", "seg_reason", True)),
    "waits": (("job", "wait_job", True), ("start", "wait_start", False),
              ("end", "wait_end", False), ("node_s", "wait_node_s", False)),
    "levels": (("time", "lvl_time", False), ("kind", "lvl_kind", True),
               ("delta", "lvl_delta", True)),
}


def record_tables(rec: RunRecorder | None) -> dict[str, dict[str, np.ndarray]]:
    """The recorder's rows as NumPy columns, table by table (empty without a recorder)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for table, cols in RECORD_TABLES.items():
        out[table] = {name: np.array(getattr(rec, attr) if rec is not None else [],
                                     dtype=np.int64 if integer else np.float64)
                      for name, attr, integer in cols}
    return out


def recorder_from_tables(tables: dict[str, dict[str, np.ndarray]]) -> RunRecorder:
    """A recorder holding the given rows (a client's copy of the daemon's run record)."""
    rec = RunRecorder()
    for table, cols in RECORD_TABLES.items():
        for name, attr, integer in cols:
            values = tables.get(table, {}).get(name, np.empty(0))
            getattr(rec, attr).extend(
                np.asarray(values, dtype=np.int64 if integer else np.float64).tolist())
    return rec


def write_segments_csv(path: Path, rec: RunRecorder, cluster: Cluster,
                       results: dict[str, np.ndarray], workload: str) -> None:
    t = segment_table(rec, cluster, results)
    n = len(t["job"])
    block_code = None
    if isinstance(cluster, BlockCluster):
        # Both texts depend on the block alone: made once per block the run used.
        units = cluster.unit_mask
        used, block_code = np.unique(t["block"], return_inverse=True)
        block_resources = [interval_set(list(iter_bits(cluster.blocks[b].mask & units)))
                           for b in used.tolist()]
        block_names = [cluster.block_name(b) for b in used.tolist()]
    else:
        # The table is in start order, the order the fit numbers in: each block is
        # numbered as it is written, so a million segments' node lists are never all held.
        placer = placer_for(cluster.total_nodes, t["start"], t["end"])
    wait = t["start"] - t["submit"]
    turnaround = t["end"] - t["submit"]
    run = t["end"] - t["start"]
    stretch = np.divide(turnaround, run, out=np.full(len(run), -1.0), where=run > 0)
    reason_words = {  # the words of each end reason in its three columns
        "success": ["1" if r == "completed" else "0" for r in END_REASONS],
        "final_state": [_BATSIM_STATE[r] for r in END_REASONS],
        "end_reason": list(END_REASONS),
    }
    with open(path, "wb") as out:
        out.write((",".join(SEGMENT_COLUMNS) + "\n").encode())
        # Formatted a block of rows at a time: a million segments' text is never all held.
        for lo in range(0, n, BLOCK_ROWS):
            hi = lo + BLOCK_ROWS
            reason = t["reason"][lo:hi]
            rows = len(reason)
            success, final_state, end_reason = (Words(reason, words)
                                                for words in reason_words.values())
            resources: Words | Ranges
            partitions: Words | Constant
            if block_code is not None:
                resources = Words(block_code[lo:hi], block_resources)
                partitions = Words(block_code[lo:hi], block_names)
            else:
                resources = Ranges(*placer.place(t["start"][lo:hi], t["nodes"][lo:hi]))
                partitions = Constant("")
            columns: list[Column] = [
                Numbers(t["job"][lo:hi]), Constant(workload),
                Numbers(t["submit"][lo:hi]), Numbers(t["req_nodes"][lo:hi]),
                Numbers(t["walltime"][lo:hi]), success, final_state,
                Numbers(t["start"][lo:hi]), Numbers(run[lo:hi]),
                Numbers(t["end"][lo:hi]), Numbers(wait[lo:hi]),
                Numbers(turnaround[lo:hi]), Numbers(stretch[lo:hi]),
                resources, Numbers(t["segment"][lo:hi]),
                Numbers(t["nodes"][lo:hi]), partitions, end_reason,
                Words(t["job_class"][lo:hi], CLASS_CODES),
            ]
            out.write(rows_text(columns, rows, b","))


def timeseries_table(rec: RunRecorder, step: float = 0.0) -> dict[str, np.ndarray]:
    """The machine's state after every instant at which it changed, from the recorder's
    segments, waits and level changes (a cumulative sum of their deltas, last value per
    instant, unchanged instants dropped); with step > 0, the state in force at every
    multiple of the step from the first row to the last."""
    seg_start, seg_end = np.array(rec.seg_start), np.array(rec.seg_end)
    seg_nodes = np.array(rec.seg_nodes, dtype=np.int64)
    w_start, w_end = np.array(rec.wait_start), np.array(rec.wait_end)
    # Queued node-seconds in integer milli-node-seconds: the sums are then exact.
    w_ns = np.rint(np.array(rec.wait_node_s) * 1000.0).astype(np.int64)
    lvl_t, lvl_kind = np.array(rec.lvl_time), np.array(rec.lvl_kind, dtype=np.int64)
    lvl_d = np.array(rec.lvl_delta, dtype=np.int64)
    n_seg, n_wait, n_lvl = len(seg_start), len(w_start), len(lvl_t)
    zs, zw, zl = (np.zeros(k, np.int64) for k in (n_seg, n_wait, n_lvl))
    ones_s, ones_w = zs + 1, zw + 1
    # One delta per event and column: busy, down, queue, queued (milli), running, reserved.
    # Built and summed one column at a time (a million-job run has millions of events).
    times = np.concatenate([seg_start, seg_end, w_start, w_end, lvl_t])
    column_deltas = (
        lambda: np.concatenate([seg_nodes, -seg_nodes, zw, zw, zl]),
        lambda: np.concatenate([zs, zs, zw, zw, np.where(lvl_kind == DOWN, lvl_d, 0)]),
        lambda: np.concatenate([zs, zs, ones_w, -ones_w, zl]),
        lambda: np.concatenate([zs, zs, w_ns, -w_ns, zl]),
        lambda: np.concatenate([ones_s, -ones_s, zw, zw, zl]),
        lambda: np.concatenate([zs, zs, zw, zw, np.where(lvl_kind == RESERVED, lvl_d, 0)]),
    )
    order = np.argsort(times, kind="stable")
    times = times[order]
    last = np.r_[times[1:] != times[:-1], True] if len(times) else np.zeros(0, bool)
    times = times[last]  # the state at the end of each instant
    levels = [np.cumsum(delta()[order])[last] for delta in column_deltas]
    del order
    changed = np.zeros(len(times), bool)
    if len(times):
        changed[0] = True
        for level in levels:
            changed[1:] |= level[1:] != level[:-1]
    times = times[changed]
    levels = [level[changed] for level in levels]
    table = {"time": times}
    for k, name in enumerate(TIMESERIES_COLUMNS[1:]):
        table[name] = levels[k] / 1000.0 if name == "queued_node_s" else levels[k]
    if step > 0 and len(times):
        grid = np.arange(np.ceil(times[0] / step) * step, times[-1] + step / 2, step)
        at = np.searchsorted(times, grid, side="right") - 1
        table = {name: (grid if name == "time" else col[at]) for name, col in table.items()}
    return table


def write_timeseries_csv(path: Path, rec: RunRecorder, step: float = 0.0) -> None:
    table = timeseries_table(rec, step)
    with open(path, "wb") as out:
        out.write((",".join(TIMESERIES_COLUMNS) + "\n").encode())
        for lo in range(0, len(table["time"]), BLOCK_ROWS):
            block = [Numbers(table[name][lo:lo + BLOCK_ROWS]) for name in TIMESERIES_COLUMNS]
            out.write(rows_text(block, len(block[0].values), b","))
