"""Episodes: sequences of consecutive jobs of a trace, drawn with the environment's RNG.

A sequence keeps its jobs' own submit times and every column of the trace, so that it is
a trace `schedd simulate` reads (`write_sequence`) and runs on an empty machine as the
episode does.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from ..core.cluster import Cluster, NodePool
from ..core.cluster_spec import parse_cluster
from ..sim import max_job_nodes
from ..traces import NormalizedTrace, normalize, read_trace

SAMPLE_TRACE = "sample-lublin256-1000.swf"  # schedd/data: a 1,000-job Lublin excerpt


def sample_path() -> str:
    from importlib import resources

    return str(resources.files("schedd.data").joinpath(SAMPLE_TRACE))


def load(trace: str | None, cluster: str | None) -> tuple[NormalizedTrace, Cluster]:
    """The trace (the bundled Lublin excerpt when None) normalised for the cluster spec
    (`nodes:N`, `mira`, `bgq:M`, ...; None: a node pool of the trace's MaxNodes), as
    `schedd simulate` reads them."""
    machine = parse_cluster(cluster) if cluster else None
    raw = read_trace(trace or sample_path())
    normal = normalize(raw, max_nodes=max_job_nodes(machine) if machine else None)
    return normal, machine if machine is not None else NodePool(normal.max_nodes)


def start_range(n_rows: int, length: int, split: tuple[float, float]) -> tuple[int, int]:
    """The first rows [lo, hi] a sequence of `length` jobs may start at inside the
    fraction `split` of the trace's rows."""
    a, b = split
    if not 0.0 <= a < b <= 1.0:
        raise ValueError(f"split must satisfy 0 <= a < b <= 1, got {split}")
    lo, end = int(a * n_rows), int(b * n_rows)
    hi = end - length
    if length < 1 or hi < lo:
        raise ValueError(f"a sequence of {length} jobs does not fit in rows {lo}..{end} "
                         f"of a trace of {n_rows} jobs")
    return lo, hi


def sequence(trace: NormalizedTrace, start: int, length: int) -> NormalizedTrace:
    """Rows start..start+length-1 of the trace (its ECCs for those jobs only)."""
    rows = np.arange(start, min(start + length, len(trace)))
    cols = {name: col[rows] for name, col in trace.columns.items()}
    ids = set(cols["job_id"].tolist())
    zero = trace.zero_runtime_rows
    zero = None if zero is None else zero[rows]
    return replace(trace, columns=cols, eccs=[e for e in trace.eccs if e.job_id in ids],
                   zero_runtime_cancelled=0 if zero is None else int(zero.sum()),
                   zero_runtime_rows=zero)


def write_sequence(path: str | os.PathLike[str], source: str | None,
                   seq: NormalizedTrace) -> None:
    """The sequence's jobs as an SWF file (the source trace's own lines for those ids,
    header kept), for `schedd simulate --trace`."""
    from ..traces import Trace, write_trace

    raw = read_trace(source or sample_path())
    ids = raw.columns["job_id"]
    keep = np.isin(ids, seq.columns["job_id"])
    cols = {name: col[keep] for name, col in raw.columns.items()}
    write_trace(path, Trace(path=os.fspath(path), header=raw.header, columns=cols, eccs=[
        e for e in raw.eccs if e.job_id in set(seq.columns["job_id"].tolist())]))
