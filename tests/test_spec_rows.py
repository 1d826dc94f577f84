"""specs_of_columns (schedd/core/spec_rows.py, compiled) builds each trace row's JobSpec
by position: every column must land in its field, notices' absent estimates default to
the job's values, -1 checkpointable means yes and a negative setup is none."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.job import JobClass, JobSpec, Notice
from schedd.core.spec_rows import SPEC_COLUMNS, specs_of_columns

small = st.integers(1, 10**6)
time = st.floats(0, 1e9)
maybe = st.one_of(st.just(-1.0), time)
row = st.fixed_dictionaries({
    "job_id": small, "submit": time, "runtime": time, "nodes": small, "walltime": time,
    "user": st.integers(-1, 10**6), "group": st.integers(-1, 10**6),
    "job_class": st.sampled_from([c.value for c in JobClass]),
    "min_nodes": st.integers(-1, 100), "checkpointable": st.sampled_from([-1, 0, 1]),
    "ckpt_gb": st.floats(-1, 100), "setup": st.floats(-10, 1e4), "req_start": maybe,
    "notice_time": maybe, "est_arrival": maybe, "est_nodes": st.integers(-1, 100),
    "est_runtime": maybe, "queue": st.integers(-1, 50), "ckpt_interval": maybe,
})


def by_keywords(r: dict) -> JobSpec:
    """The meaning of a row, spelled out field by field."""
    notice = None
    if r["notice_time"] >= 0:
        notice = Notice(time=r["notice_time"],
                        est_arrival=r["est_arrival"] if r["est_arrival"] >= 0 else r["submit"],
                        nodes=r["est_nodes"] if r["est_nodes"] > 0 else r["nodes"],
                        walltime=r["est_runtime"] if r["est_runtime"] > 0 else r["walltime"])
    return JobSpec(id=r["job_id"], submit=r["submit"], runtime=r["runtime"], nodes=r["nodes"],
                   walltime=r["walltime"], user=r["user"], project=r["group"],
                   job_class=JobClass(r["job_class"]), min_nodes=r["min_nodes"],
                   checkpointable=r["checkpointable"] != 0, ckpt_gb_per_node=r["ckpt_gb"],
                   setup=max(0.0, r["setup"]), requested_start=r["req_start"], notice=notice,
                   queue=r["queue"], ckpt_interval=r["ckpt_interval"])


@settings(max_examples=80, deadline=None)
@given(st.lists(row, max_size=12))
def test_each_column_lands_in_its_field(rows: list[dict]) -> None:
    cols = [[r[name] for r in rows] for name in SPEC_COLUMNS]
    assert specs_of_columns(cols) == [by_keywords(r) for r in rows]


def test_a_row_without_notice_or_setup() -> None:
    r = {name: -1 for name in SPEC_COLUMNS} | {
        "job_id": 4, "submit": 10.0, "runtime": 50.0, "nodes": 8, "walltime": 60.0,
        "job_class": "B", "checkpointable": -1, "ckpt_gb": -1.0, "setup": -1.0,
        "req_start": -1.0, "notice_time": -1.0, "ckpt_interval": -1.0}
    (spec,) = specs_of_columns([[r[name]] for name in SPEC_COLUMNS])
    assert spec.notice is None and spec.checkpointable and spec.setup == 0.0
    assert (spec.id, spec.nodes, spec.walltime, spec.job_class) == (4, 8, 60.0, JobClass.BATCH)
