"""Helpers shared by the tests/test_traces*.py files (no tests here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from schedd.traces import COLUMN_NAMES, Trace

SWF_NAMES = COLUMN_NAMES[:18]


def row(job_id: int, submit: float = 0, runtime: float = 10, procs: int = 1, *, tail=(), **kw):
    """One SWF job line; unnamed fields are -1, `tail` adds fields 19 and up."""
    values: dict[str, object] = {name: -1 for name in SWF_NAMES}
    values.update(job_id=job_id, submit=submit, runtime=runtime, procs=procs, **kw)
    assert set(values) == set(SWF_NAMES), set(values) - set(SWF_NAMES)
    return " ".join(str(values[n]) for n in SWF_NAMES) + "".join(f" {t}" for t in tail)


def ext(
    req_start=-1,
    kind="S",
    amount=-1,
    job_class="B",
    checkpointable=-1,
    ckpt_gb=-1,
    min_nodes=-1,
    setup=-1,
    notice_time=-1,
    est_arrival=-1,
    est_nodes=-1,
    est_runtime=-1,
    ckpt_interval=-1,
):
    """Fields 19-31 in order, for `row(..., tail=ext(...))`."""
    return (
        req_start,
        kind,
        amount,
        job_class,
        checkpointable,
        ckpt_gb,
        min_nodes,
        setup,
        notice_time,
        est_arrival,
        est_nodes,
        est_runtime,
        ckpt_interval,
    )


def ext2(eligible=-1, cancel_time=-1, req_nodes=-1, exclusive=-1, qos=-1, dep_kind=-1,
         priority=-1, state=-1, started_by=-1):
    """Fields 32-40 in order, for `row(..., tail=ext(...) + ext2(...))`."""
    return (eligible, cancel_time, req_nodes, exclusive, qos, dep_kind, priority, state,
            started_by)


def ecc(job_id: int, time: float, kind: str, amount: float) -> str:
    """A CWF elastic control command line (21 fields)."""
    fields = ["-1"] * 21
    fields[0], fields[1], fields[19], fields[20] = str(job_id), str(time), kind, str(amount)
    return " ".join(fields)


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def assert_same_trace(a: Trace, b: Trace) -> None:
    """Equal header, columns and ECCs (ECC line numbers depend on the file layout)."""
    assert a.header.lines == b.header.lines
    assert a.header.names == b.header.names
    assert (a.header.max_nodes, a.header.max_procs, a.header.unix_start_time) == (
        b.header.max_nodes,
        b.header.max_procs,
        b.header.unix_start_time,
    )
    assert set(a.columns) == set(b.columns) == set(COLUMN_NAMES)
    for name in COLUMN_NAMES:
        x, y = a.columns[name], b.columns[name]
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y), name
    strip = [(e.job_id, e.time, e.kind, e.amount) for e in a.eccs]
    assert strip == [(e.job_id, e.time, e.kind, e.amount) for e in b.eccs]
