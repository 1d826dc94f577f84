"""Turn a raw Trace into the queue the simulator replays (rules of /work/shared/traces/README.md).

A record is kept iff runtime > 0 (or runtime 0 with a cancel time, field 33: an imported
job cancelled as it started, counted apart), 1 <= nodes <= N and submit >= 0, where nodes = field 34
(req_nodes) if > 0, else requested processors (field 8) if > 0 else allocated processors
(field 5), divided by procs_per_node rounding up. walltime = requested time (field 9) if > 0
else the runtime. Queue order is (submit, job id).

procs_per_node defaults to what the header implies: MaxProcs // MaxNodes when the header
gives both and MaxProcs is at least twice MaxNodes (a Parallel Workloads Archive machine
whose fields 5 and 8 count processors), else 1. Every job not kept is counted by reason in
`dropped`; `drop_line` says them in one sentence.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from schedd.core.job import JobSpec
from schedd.core.spec_rows import SPEC_COLUMNS, specs_of_columns
from schedd.traces.swf import (
    COLUMN_NAMES,
    EccCommand,
    Trace,
    TraceError,
    TraceHeader,
    _read_bytes,
    absent_column,
)

DROP_REASONS = ("runtime<=0", "nodes<1", "nodes>max", "submit<0")
# Reasons in words, for the one-line warning (the keys stay as summary.json has them).
_REASON_TEXT = {"runtime<=0": "with runtime <= 0", "nodes<1": "asking for no processor",
                "nodes>max": "larger than the machine",
                "submit<0": "with a negative (unknown) submit time",
                "duplicate id": "repeating a job id",
                "malformed": "on malformed lines (--lenient)",
                "outside window": "outside --from/--until", "after limit": "after --limit"}
_SPEC_BLOCK = 4096  # rows converted to Python objects at a time by specs()
# What a kept job of runtime 0 (cancelled in the second it started, or before it started
# with no time limit) runs for: the engine runs no job for 0 s, and 1 s is the resolution
# of the logs such jobs come from (sacct, PBS). A policy that cancels jobs at their
# cancel_time (field 33) removes the others before they start.
ZERO_RUNTIME_RUN = 1.0


@dataclass(eq=False)
class NormalizedTrace:
    """The kept jobs in queue order, with the derived columns `nodes` and `walltime`."""

    header: TraceHeader
    max_nodes: int
    columns: dict[str, np.ndarray]
    dropped: dict[str, int]  # reason -> count; every reason of DROP_REASONS is present
    eccs: list[EccCommand]  # of kept jobs only, sorted by (time, job_id, line)
    procs_per_node: int = 1  # K that turned the trace's processors into nodes
    # kept jobs whose runtime was 0 with a cancel time: they run for ZERO_RUNTIME_RUN s
    zero_runtime_cancelled: int = 0
    zero_runtime_rows: np.ndarray | None = None  # which rows those are (None: none)

    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def specs(self) -> Iterator[JobSpec]:
        """JobSpec objects in queue order, built a block of rows at a time."""
        for lo in range(0, len(self), _SPEC_BLOCK):
            yield from specs_of_columns([_as_python(self.columns[name][lo:lo + _SPEC_BLOCK],
                                                    name) for name in SPEC_COLUMNS])


_INT_SPEC_COLUMNS = frozenset(
    {"job_id", "nodes", "user", "group", "min_nodes", "checkpointable", "est_nodes", "queue"})


def _as_python(col: np.ndarray, name: str) -> list:
    """Plain ints or floats as JobSpec's fields are typed (the compiled engine checks),
    whatever dtype a caller's in-memory trace used."""
    if col.dtype.kind in "iuf":
        col = col.astype(np.int64 if name in _INT_SPEC_COLUMNS else np.float64, copy=False)
    return col.tolist()


def header_procs_per_node(header: TraceHeader) -> int | None:
    """MaxProcs // MaxNodes when the header gives both and MaxProcs is at least twice
    MaxNodes (fields 5 and 8 then count processors, not nodes), else None."""
    if header.max_nodes is None or header.max_procs is None:
        return None
    k = header.max_procs // header.max_nodes
    return k if k >= 2 else None


def normalize(
    trace: Trace, *, max_nodes: int | None = None, procs_per_node: int | None = None,
    lenient: bool = False,
) -> NormalizedTrace:
    """Apply the README's keep/drop rules and sort into queue order.

    procs_per_node None: the header's (header_procs_per_node), else 1. Two kept jobs with
    the same id are an error naming the second one's line (the engine tracks jobs by id);
    with `lenient` the first submission is kept and the others are counted under
    "duplicate id". Lines the reader skipped (--lenient) are counted under "malformed"."""
    if procs_per_node is None:
        procs_per_node = header_procs_per_node(trace.header) or 1
    if procs_per_node < 1:
        raise ValueError(f"procs_per_node must be >= 1, got {procs_per_node}")
    if max_nodes is not None and max_nodes < 1:
        raise ValueError(f"max_nodes must be >= 1, got {max_nodes}")
    n = len(trace)
    cols = {name: _column(trace, name, n) for name in COLUMN_NAMES}
    nodes = job_nodes(cols["req_procs"], cols["procs"], procs_per_node, cols["req_nodes"])
    limit = machine_nodes(trace.header, nodes, max_nodes, procs_per_node)
    if limit < 1:  # nothing to size the machine by: say which file, not "0 nodes"
        raise TraceError.at(trace.path, None, "expected a job line or a MaxNodes header to "
                            "size the machine, found neither")
    zero = (cols["runtime"] == 0) & (cols["cancel_time"] >= 0)
    any_zero = bool(zero.any())
    reasons = _drop_reasons(np.where(zero, ZERO_RUNTIME_RUN, cols["runtime"]) if any_zero
                            else cols["runtime"], nodes, limit, cols["submit"])
    kept = np.flatnonzero(reasons < 0)
    kept, duplicates = _unique_ids(trace, cols["job_id"], kept, lenient)
    kept, bad_bounds = _malleable_bounds(trace, cols, nodes, kept, lenient)
    kept = kept[np.lexsort((cols["job_id"][kept], cols["submit"][kept]))]  # stable
    if len(kept) == n and (len(kept) < 2 or bool((np.diff(kept) > 0).all())):
        out = dict(cols)  # already in queue order, nothing dropped: share, don't copy
    else:
        out = {name: _take(col, kept) for name, col in cols.items()}
    out["nodes"] = nodes[kept]
    zero_kept = int(np.count_nonzero(zero[kept])) if any_zero else 0
    if zero_kept:  # a new array: the trace's own columns stay as read
        out["runtime"] = np.where(zero[kept], ZERO_RUNTIME_RUN, out["runtime"])
    req_time, runtime = out["req_time"], out["runtime"]
    out["walltime"] = np.where(req_time > 0, req_time, runtime).astype(np.float64)
    rigid = (out["job_class"] == "M") & (out["min_nodes"] < 1)
    if rigid.any():  # -1 (absent): rigid, as the daemon's min_nodes 0
        out["min_nodes"] = np.where(rigid, out["nodes"], out["min_nodes"])
    counts = np.bincount(reasons[reasons >= 0], minlength=len(DROP_REASONS))
    return NormalizedTrace(
        header=trace.header,
        max_nodes=limit,
        columns=out,
        dropped={r: int(c) for r, c in zip(DROP_REASONS, counts, strict=True)}
        | {"duplicate id": duplicates, "malformed": int(trace.skipped) + bad_bounds},
        eccs=_kept_eccs(trace.eccs, out["job_id"]),
        procs_per_node=procs_per_node,
        zero_runtime_cancelled=zero_kept,
        zero_runtime_rows=zero[kept] if zero_kept else None,
    )


def select(trace: NormalizedTrace, *, start: float | None = None, until: float | None = None,
           limit: int | None = None) -> NormalizedTrace:
    """The jobs submitted in [start, until) (trace time), then the first `limit` of them;
    the others are counted under "outside window" and "after limit"."""
    submit = trace.columns["submit"]
    keep = np.ones(len(trace), dtype=bool)
    if start is not None:
        keep &= submit >= start
    if until is not None:
        keep &= submit < until
    outside = int(len(trace) - np.count_nonzero(keep))
    rows = np.flatnonzero(keep)
    after = 0
    if limit is not None and len(rows) > limit:
        after = len(rows) - limit
        rows = rows[:limit]
    if outside == 0 and after == 0:
        return trace
    cols = {name: _take(col, rows) for name, col in trace.columns.items()}
    dropped = dict(trace.dropped)
    dropped["outside window"] = dropped.get("outside window", 0) + outside
    dropped["after limit"] = dropped.get("after limit", 0) + after
    zero = trace.zero_runtime_rows
    zero = None if zero is None else zero[rows]
    return replace(trace, columns=cols, dropped=dropped,
                   eccs=_kept_eccs(trace.eccs, cols["job_id"]),
                   zero_runtime_cancelled=0 if zero is None else int(zero.sum()),
                   zero_runtime_rows=zero)


def dropped_count(trace: NormalizedTrace) -> int:
    return sum(trace.dropped.values())


SELECTED = ("outside window", "after limit")  # not kept because the user asked so


def kept_note(trace: NormalizedTrace, path: str) -> str | None:
    """One sentence on the kept jobs a rule changed (runtime 0 with a cancel time), or
    None."""
    n = trace.zero_runtime_cancelled
    if not n:
        return None
    return (f"{n:,} jobs of {os.path.basename(path)} have runtime 0 and a cancel time "
            f"(cancelled as they started, or before, with no time limit): each runs "
            f"{ZERO_RUNTIME_RUN:g} s if it starts")


def drop_line(trace: NormalizedTrace, path: str, *, selected: bool = True) -> str | None:
    """One sentence counting every job not kept, by reason; None if all were kept.
    selected=False leaves out the jobs a window or limit left out on purpose."""
    reasons = {r: n for r, n in trace.dropped.items()
               if n and (selected or r not in SELECTED)}
    if not reasons:
        return None
    parts = [f"{n:,} {_REASON_TEXT.get(r, r)}"
             + (f" ({trace.max_nodes:,} nodes)" if r == "nodes>max" else "")
             for r, n in reasons.items()]
    total = dropped_count(trace)
    return (f"{sum(reasons.values()):,} of {total + len(trace):,} jobs of "
            f"{os.path.basename(path)} not simulated: {', '.join(parts)}")


def _unique_ids(trace: Trace, ids: np.ndarray, kept: np.ndarray, lenient: bool
                ) -> tuple[np.ndarray, int]:
    """`kept` (file-order row indices) without later repeats of an id, and their count."""
    _, first = np.unique(ids[kept], return_index=True)
    if len(first) == len(kept):
        return kept, 0
    if not lenient:
        repeat = np.ones(len(kept), dtype=bool)
        repeat[first] = False
        dup = int(ids[kept][np.flatnonzero(repeat)[0]])
        raise TraceError.at(trace.path, _second_submission_line(trace.path, dup),
                            f"expected a new job id, found job {dup} submitted a second time")
    return np.sort(kept[first]), len(kept) - len(first)


def _malleable_bounds(trace: Trace, cols: dict[str, np.ndarray], nodes: np.ndarray,
                      kept: np.ndarray, lenient: bool) -> tuple[np.ndarray, int]:
    """A malleable job's min_nodes (field 25) above its nodes is an error at its line (the
    engine would refuse it mid-run); with `lenient` the job is dropped and counted as
    malformed. Returns the rows kept and how many were dropped."""
    bad = (cols["job_class"][kept] == "M") & (cols["min_nodes"][kept] > nodes[kept])
    if not bad.any():
        return kept, 0
    if not lenient:
        row = int(kept[np.flatnonzero(bad)[0]])
        job_id = int(cols["job_id"][row])
        raise TraceError.at(trace.path, _job_line(trace.path, job_id),
                            f"expected min_nodes (field 25) of malleable job {job_id} at most "
                            f"its {int(nodes[row])} nodes, found {int(cols['min_nodes'][row])}")
    return kept[~bad], int(bad.sum())


def _job_line(path: str, job_id: int) -> int | None:
    """Line number of the first job line (not an ECC line) with this id, if readable."""
    try:
        raw = _read_bytes(path)
    except TraceError:
        return None
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        fields = line.split()
        if len(fields) < 2 or fields[0].startswith(b";"):
            continue
        if len(fields) > 19 and fields[19] in (b"ET", b"RT", b"EP", b"RP"):
            continue
        try:
            if float(fields[0]) == job_id:
                return lineno
        except ValueError:
            continue
    return None


def _second_submission_line(path: str, job_id: int) -> int | None:
    """Line number of the second job line (not an ECC line) with this id, if readable."""
    try:
        raw = _read_bytes(path)
    except TraceError:
        return None
    seen = 0
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        fields = line.split()
        if not fields or fields[0].startswith(b";"):
            continue
        if len(fields) > 19 and fields[19] in (b"ET", b"RT", b"EP", b"RP"):
            continue
        try:
            same = float(fields[0]) == job_id
        except ValueError:
            continue
        seen += same
        if seen == 2:
            return lineno
    return None


def job_nodes(req_procs: np.ndarray, procs: np.ndarray, procs_per_node: int = 1,
              req_nodes: np.ndarray | None = None) -> np.ndarray:
    """Nodes of each job: req_nodes (field 34) where > 0, else requested processors if > 0
    else allocated, ceil-divided by K."""
    p = np.where(req_procs > 0, req_procs, procs).astype(np.int64)
    nodes = p if procs_per_node == 1 else -(-p // procs_per_node)
    if req_nodes is None or req_nodes.strides == (0,) or not (req_nodes > 0).any():
        return nodes  # no field 34 (every archive trace): as before, no copy
    return np.where(req_nodes > 0, req_nodes, nodes).astype(np.int64)


def machine_nodes(
    header: TraceHeader, nodes: np.ndarray, max_nodes: int | None, procs_per_node: int = 1
) -> int:
    """N: the argument, else MaxNodes, else MaxProcs / K (rounded up), else the largest job."""
    if max_nodes is not None:
        return max_nodes
    if header.max_nodes is not None:
        return header.max_nodes
    if header.max_procs is not None:
        return -(-header.max_procs // procs_per_node)
    return int(nodes.max()) if len(nodes) else 0


def _drop_reasons(runtime: np.ndarray, nodes: np.ndarray, limit: int,
                  submit: np.ndarray) -> np.ndarray:
    """Per job: -1 if kept, else the index in DROP_REASONS of the first rule it breaks."""
    reasons = np.full(len(nodes), -1, dtype=np.int64)
    reasons[submit < 0] = 3  # a log's "unknown" (-1): no time to submit it at
    reasons[nodes > limit] = 2
    reasons[nodes < 1] = 1
    reasons[~(runtime > 0)] = 0
    return reasons


def _column(trace: Trace, name: str, n: int) -> np.ndarray:
    """A column of the trace; traces made in memory may leave optional ones out."""
    col = trace.columns.get(name)
    return absent_column(name, n) if col is None else np.asarray(col)


def _take(col: np.ndarray, rows: np.ndarray) -> np.ndarray:
    if len(rows) and col.strides == (0,):  # constant (absent) column stays constant
        return np.broadcast_to(col[:1], (len(rows),))
    return col[rows]


def _kept_eccs(eccs: list[EccCommand], kept_ids: np.ndarray) -> list[EccCommand]:
    if not eccs:
        return []
    ids = np.fromiter((e.job_id for e in eccs), dtype=np.int64, count=len(eccs))
    keep = np.isin(ids, kept_ids)
    chosen = [e for e, k in zip(eccs, keep.tolist(), strict=True) if k]
    return sorted(chosen, key=lambda e: (e.time, e.job_id, e.line))
