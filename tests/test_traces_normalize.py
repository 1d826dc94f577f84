"""normalize(): the keep/drop rules, queue order, derived columns, ECCs and JobSpecs."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest
from test_traces_helpers import ecc, ext, row, write

from schedd.core.job import JobClass, JobSpec, Notice
from schedd.traces import COLUMN_NAMES, Trace, TraceError, TraceHeader, normalize, read_trace


def _norm(tmp_path, *lines, **kw):
    return normalize(read_trace(write(tmp_path / "t.swf", *lines)), **kw)


def test_nodes_from_field_8_else_field_5(tmp_path):
    nt = _norm(tmp_path, "; MaxNodes: 100", row(1, procs=10, req_procs=16), row(2, procs=10))
    assert list(nt.columns["nodes"]) == [16, 10]
    assert nt.columns["nodes"].dtype == np.int64


def test_walltime_from_field_9_else_runtime(tmp_path):
    nt = _norm(
        tmp_path,
        "; MaxNodes: 8",
        row(1, runtime=50, req_time=3600),
        row(2, runtime=50),
        row(3, runtime=50, req_time=0),
        row(4, runtime=5000, req_time=60),  # shorter than the runtime: kept as is
    )
    assert list(nt.columns["walltime"]) == [3600, 50, 50, 60]
    assert nt.columns["walltime"].dtype == np.float64


def test_dropped_reasons_and_counts(tmp_path):
    nt = _norm(
        tmp_path,
        "; MaxNodes: 8",
        row(1, runtime=0),
        row(2, runtime=-1),
        row(3, runtime=0, procs=-1),  # breaks two rules: counted once, as the first
        row(4, procs=-1),
        row(5, procs=0, req_procs=-1),
        row(6, procs=9),
        row(7, procs=1, req_procs=9),  # field 8 wins over field 5
        row(8, procs=8),
    )
    assert nt.dropped == {"runtime<=0": 3, "nodes<1": 2, "nodes>max": 2, "submit<0": 0,
                          "duplicate id": 0,
                          "malformed": 0}
    assert list(nt.columns["job_id"]) == [8]
    assert len(nt) == 1


def test_nothing_dropped_still_lists_every_reason(tmp_path):
    nt = _norm(tmp_path, "; MaxNodes: 8", row(1))
    assert nt.dropped == {"runtime<=0": 0, "nodes<1": 0, "nodes>max": 0, "submit<0": 0,
                          "duplicate id": 0,
                          "malformed": 0}


def test_queue_order_is_submit_then_job_id(tmp_path):
    nt = _norm(
        tmp_path,
        row(5, submit=10, user=1),
        row(3, submit=10, user=2),
        row(9, submit=2, user=3),
        row(1, submit=10.5, user=5),
    )
    assert list(nt.columns["job_id"]) == [9, 3, 5, 1]
    assert list(nt.columns["user"]) == [3, 2, 1, 5]  # every column follows the sort


def test_repeated_job_id_is_an_error_or_dropped_when_lenient(tmp_path):
    lines = (row(5, submit=10, user=1), row(3, submit=10, user=2), row(3, submit=12, user=4))
    with pytest.raises(TraceError, match=r"t\.swf:3: expected a new job id, found job 3"):
        _norm(tmp_path, *lines)
    path = tmp_path / "t.swf"
    nt = normalize(read_trace(path), lenient=True)
    assert list(nt.columns["job_id"]) == [3, 5] and list(nt.columns["user"]) == [2, 1]
    assert nt.dropped["duplicate id"] == 1


def test_max_nodes_argument_beats_header(tmp_path):
    lines = ("; MaxNodes: 4", row(1, procs=4), row(2, procs=6))
    assert _norm(tmp_path, *lines).max_nodes == 4
    nt = _norm(tmp_path, *lines, max_nodes=6)
    assert nt.max_nodes == 6 and list(nt.columns["job_id"]) == [1, 2]


def test_machine_size_falls_back_to_maxprocs_then_largest_job(tmp_path):
    assert _norm(tmp_path, "; MaxProcs: 12", row(1, procs=13)).max_nodes == 12
    nt = _norm(tmp_path, row(1, procs=3), row(2, procs=7, runtime=0))
    assert nt.max_nodes == 7  # every job line counts, kept or not
    with pytest.raises(TraceError, match=r"t\.swf: expected a job line or a MaxNodes"):
        _norm(tmp_path)  # nothing to size the machine by: an error naming the file


def test_procs_per_node_rounds_up(tmp_path):
    lines = ("; MaxProcs: 20", row(1, procs=1), row(2, procs=8), row(3, procs=9), row(4, procs=24))
    nt = _norm(tmp_path, *lines, procs_per_node=8)
    assert nt.max_nodes == 3  # ceil(20 / 8)
    assert list(nt.columns["nodes"]) == [1, 1, 2, 3]
    assert list(nt.columns["procs"]) == [1, 8, 9, 24]  # the raw column is untouched


def test_procs_per_node_does_not_scale_maxnodes(tmp_path):
    nt = _norm(tmp_path, "; MaxNodes: 2", "; MaxProcs: 16", row(1, procs=16), procs_per_node=8)
    assert nt.max_nodes == 2 and list(nt.columns["nodes"]) == [2]


@pytest.mark.parametrize("kw", [{"max_nodes": 0}, {"procs_per_node": 0}])
def test_bad_arguments(tmp_path, kw):
    with pytest.raises(ValueError):
        _norm(tmp_path, row(1), **kw)


def test_eccs_of_kept_jobs_sorted(tmp_path):
    nt = _norm(
        tmp_path,
        "; MaxNodes: 4",
        row(1, tail=ext()),
        row(2, procs=99, tail=ext()),  # dropped: its ECCs go too
        ecc(2, 1, "ET", 5),
        ecc(1, 30, "RT", 5),
        ecc(1, 10, "ET", 7),
        ecc(1, 10, "EP", 1),
    )
    assert [(e.time, e.kind, e.line) for e in nt.eccs] == [
        (10, "ET", 6),
        (10, "EP", 7),
        (30, "RT", 5),
    ]


def test_columns_of_kept_jobs(tmp_path):
    nt = _norm(tmp_path, "; MaxNodes: 4", row(1, runtime=0), row(2, user=7))
    assert set(nt.columns) == set(COLUMN_NAMES) | {"nodes", "walltime"}
    assert all(len(c) == 1 for c in nt.columns.values())
    assert nt.columns["user"][0] == 7


def test_specs_plain_swf_job(tmp_path):
    nt = _norm(
        tmp_path,
        "; MaxNodes: 64",
        row(4, submit=1.5, runtime=99.5, procs=8, req_procs=16, req_time=200, user=3, group=5,
            queue=2),
    )  # fmt: skip
    [spec] = nt.specs()
    assert spec == JobSpec(
        id=4, submit=1.5, runtime=99.5, nodes=16, walltime=200.0, user=3, project=5, queue=2
    )
    assert type(spec.id) is int and type(spec.nodes) is int and type(spec.submit) is float


def test_specs_extension_fields(tmp_path):
    nt = _norm(
        tmp_path,
        "; MaxNodes: 64",
        row(1, procs=8, req_time=100, tail=ext(job_class="M", min_nodes=2, checkpointable=0,
                                                ckpt_gb=1.5, setup=-1, ckpt_interval=60)),
        row(2, procs=4, tail=ext(job_class="D", req_start=500, setup=12, checkpointable=1)),
        row(3, procs=4, req_time=50, tail=ext(job_class="O", notice_time=0)),
        row(4, procs=4, tail=ext(job_class="R", notice_time=5, est_arrival=40, est_nodes=8,
                                 est_runtime=70)),
    )  # fmt: skip
    a, b, c, d = nt.specs()
    assert (a.job_class, a.min_nodes, a.checkpointable, a.ckpt_gb_per_node) == (
        JobClass.MALLEABLE, 2, False, 1.5
    )  # fmt: skip
    assert (a.setup, a.ckpt_interval, a.malleable, a.notice) == (0.0, 60.0, True, None)
    assert (b.job_class, b.requested_start, b.setup, b.checkpointable) == (
        JobClass.DEDICATED, 500.0, 12.0, True
    )  # fmt: skip
    assert c.job_class is JobClass.ONDEMAND
    assert c.notice == Notice(time=0.0, est_arrival=0.0, nodes=4, walltime=50.0)  # defaults
    assert d.notice == Notice(time=5.0, est_arrival=40.0, nodes=8, walltime=70.0)
    assert d.job_class is JobClass.REALTIME


def test_specs_is_lazy(tmp_path):
    nt = _norm(tmp_path, *(row(i) for i in range(1, 10)))
    it = nt.specs()
    assert inspect.isgenerator(it)
    assert next(it).id == 1
    assert [s.id for s in it] == list(range(2, 10))


def test_specs_in_blocks_keeps_order(tmp_path, monkeypatch):
    # the package's `normalize` attribute is the function, so fetch the module itself
    monkeypatch.setattr(importlib.import_module("schedd.traces.normalize"), "_SPEC_BLOCK", 3)
    nt = _norm(tmp_path, *(row(i, submit=100 - i) for i in range(1, 11)))
    assert [s.id for s in nt.specs()] == list(range(10, 0, -1))


def test_trace_built_in_memory_with_only_swf_columns():
    n = 3
    cols = {name: np.full(n, -1.0) for name in COLUMN_NAMES[:18]}
    cols["job_id"] = np.array([3, 1, 2])
    cols["submit"] = np.array([5.0, 5.0, 1.0])
    cols["runtime"] = np.array([10.0, 20.0, 30.0])
    cols["procs"] = np.array([1, 2, 3])
    trace = Trace(path="<memory>", header=TraceHeader(max_nodes=2), columns=cols, eccs=[])
    nt = normalize(trace)
    assert list(nt.columns["job_id"]) == [1, 3]
    assert nt.dropped["nodes>max"] == 1
    assert [s.job_class for s in nt.specs()] == [JobClass.BATCH] * 2


@pytest.mark.parametrize("header, k", [
    (["; MaxNodes: 5544", "; MaxProcs: 93312"], 16),  # CEA Curie: 16.8 -> 16 per node
    (["; MaxNodes: 4360", "; MaxProcs: 4360"], 1),  # Theta: fields count nodes
    (["; MaxProcs: 320"], 1),  # only one figure: nothing to divide
    (["; MaxNodes: 100", "; MaxProcs: 150"], 1),  # less than two per node: as nodes
])
def test_procs_per_node_defaults_to_the_header_ratio(tmp_path, header, k):
    nt = _norm(tmp_path, *header, row(1, procs=33))
    assert nt.procs_per_node == k
    assert list(nt.columns["nodes"]) == [-(-33 // k)]
    assert _norm(tmp_path, *header, row(1, procs=33), procs_per_node=1).procs_per_node == 1


def test_select_keeps_a_window_then_a_limit_and_counts_the_rest(tmp_path):
    from schedd.traces.normalize import drop_line, select

    nt = _norm(tmp_path, "; MaxNodes: 8", *(row(i, submit=10 * i) for i in range(1, 11)))
    part = select(nt, start=20, until=80, limit=4)
    assert list(part.columns["job_id"]) == [2, 3, 4, 5]
    assert part.dropped["outside window"] == 4 and part.dropped["after limit"] == 2
    assert drop_line(part, "/x/t.swf") == ("6 of 10 jobs of t.swf not simulated: 4 outside "
                                           "--from/--until, 2 after --limit")
    assert drop_line(part, "t.swf", selected=False) is None
    assert select(nt) is nt
