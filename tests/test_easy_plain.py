"""The plain-EASY fast path (schedd/policies/easy_plain.py) gives exactly what the general
engine gives: every result column, every segment and wait the recorder keeps, the engine's
counters, clock and busy integral, the summary, and every output file. And it is taken
only where no mechanism it leaves out could act."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.checkpoint import CheckpointPolicy
from schedd.core.cluster import NodePool
from schedd.core.cluster_spec import parse_cluster
from schedd.core.decisions import DecisionError
from schedd.core.engine import Engine, EngineOptions
from schedd.policies import make_policy
from schedd.policies.backfill import easy_pass
from schedd.policies.base import Policy
from schedd.policies.easy_plain import plain_easy_order
from schedd.sim import RunResult, simulate, write_outputs
from schedd.traces import NormalizedTrace, normalize, read_trace
from schedd.traces.swf import COLUMN_NAMES, EccCommand, Trace, TraceHeader, absent_column

EASY_FAMILY = ["easy", "easy-bestfit", "easy-sjf", "easy-e"]
RECORDER_COLUMNS = ["seg_job", "seg_start", "seg_end", "seg_nodes", "seg_block", "seg_reason",
                    "wait_job", "wait_start", "wait_end", "wait_node_s", "lvl_time",
                    "lvl_kind", "lvl_delta"]
OUTPUT_FILES = ["jobs.swf", "jobs.csv", "summary.json", "segments.csv", "timeseries.csv"]


def trace_of(rows: list[dict], max_nodes: int) -> NormalizedTrace:
    """A normalized trace of `rows` (column -> value; absent columns take the SWF file's
    'absent' value), through the same keep/sort rules as a file."""
    n = len(rows)
    columns = {name: np.array(absent_column(name, n)) for name in COLUMN_NAMES}
    for i, row in enumerate(rows):
        for name, value in row.items():
            columns[name][i] = value
    header = TraceHeader(max_nodes=max_nodes, lines=[f"; MaxNodes: {max_nodes}"])
    return normalize(Trace(path="<test>", header=header, columns=columns, eccs=[]))


def run(trace: NormalizedTrace, policy: str, general: bool, nodes: int | None = None,
        options: EngineOptions | None = None) -> RunResult:
    cluster = NodePool(nodes or trace.max_nodes)
    return simulate(trace, cluster, make_policy(policy, [], cluster), record=True,
                    engine_options=options, general=general)


def assert_same_run(fast: RunResult, general: RunResult) -> None:
    assert fast.results.keys() == general.results.keys()
    for name, col in fast.results.items():
        assert col.dtype == general.results[name].dtype, name
        assert col.tobytes() == general.results[name].tobytes(), name
    assert fast.recorder is not None and general.recorder is not None
    for name in RECORDER_COLUMNS:
        assert getattr(fast.recorder, name) == getattr(general.recorder, name), name
    assert fast.engine.stats == general.engine.stats
    assert fast.engine.now == general.engine.now
    assert fast.engine.busy_integral() == general.engine.busy_integral()
    assert fast.summary == general.summary


@st.composite
def plain_workloads(draw) -> tuple[list[dict], int]:
    """Jobs only the plain path's mechanisms touch: ties of submit time (ids in any
    order), kills at the walltime, setup times, fractional times, every class without a
    notice or requested start, malleable bounds, checkpointable flags without intervals."""
    total = draw(st.integers(1, 64), label="nodes")
    n = draw(st.integers(0, 60), label="jobs")
    ids = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True))
    t = draw(st.sampled_from([0.0, 0.5, 1e6]), label="t0")
    # Without setup times the fast path tries only the arrivals at an instant with no
    # end since a pass that left the head waiting: both kinds of trace are drawn.
    setups = [-1.0, 0.0, 0.0, 5.0, 0.3] if draw(st.booleans(), label="setup") else [0.0]
    rows = []
    for job_id in ids:
        t += draw(st.sampled_from([0.0, 0.0, 0.25, 1.0, 30.0, 200.0, 900.0, 3600.0]))
        nodes = draw(st.integers(1, total))
        runtime = draw(st.sampled_from([1.0, 7.5, 60.0, 600.0, 3600.0, 0.1]))
        walltime = draw(st.sampled_from([runtime, runtime, 2 * runtime, runtime / 2, 3600.0,
                                         1.0]))
        row = {"job_id": job_id, "submit": t, "runtime": runtime, "req_procs": nodes,
               "procs": nodes, "req_time": walltime,
               "user": draw(st.integers(-1, 3)), "queue": draw(st.integers(-1, 2)),
               "job_class": draw(st.sampled_from("BBBROM")),
               "checkpointable": draw(st.sampled_from([-1, 0, 1])),
               "setup": draw(st.sampled_from(setups))}
        if row["job_class"] == "M":
            row["min_nodes"] = draw(st.integers(1, nodes))
        rows.append(row)
    return rows, total


@pytest.mark.parametrize("policy", EASY_FAMILY)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=plain_workloads())
def test_fast_path_equals_the_general_engine(policy: str, workload) -> None:  # noqa: ANN001
    rows, total = workload
    trace = trace_of(rows, total)
    cluster = NodePool(total)
    engine = Engine(cluster, make_policy(policy, [], cluster))
    assert plain_easy_order(engine, trace) is not None  # the fast path is what is tested
    assert_same_run(run(trace, policy, general=False, nodes=total),
                    run(trace, policy, general=True, nodes=total))


@pytest.mark.parametrize("periodic", ["none", "app"])
def test_fast_path_with_a_checkpoint_mode_that_models_none_for_these_jobs(periodic: str
                                                                         ) -> None:
    """Under "none" nothing is checkpointed; under "app" only checkpointable jobs are, so
    a trace of jobs that are not still runs plain (and records who pays: ckpt_by_system)."""
    rows = [{"job_id": i, "submit": 10.0 * i, "runtime": 100.0, "req_procs": 1 + i % 3,
             "req_time": 150.0, "checkpointable": 0} for i in range(1, 30)]
    trace = trace_of(rows, 4)
    options = EngineOptions(checkpoint=CheckpointPolicy(periodic=periodic))
    cluster = NodePool(4)
    assert plain_easy_order(Engine(cluster, make_policy("easy", [], cluster),
                                   options=options), trace) == "first"
    assert_same_run(run(trace, "easy", False, options=options),
                    run(trace, "easy", True, options=options))


def test_a_job_ending_at_its_start_instant_is_handled_in_a_second_round() -> None:
    """At t = 1e17 a 1 s job ends at the same float instant it starts: the engine handles
    its end and passes again at that instant; so does the fast path (two passes)."""
    rows = [{"job_id": 1, "submit": 1e17, "runtime": 1.0, "req_procs": 2, "req_time": 1.0},
            {"job_id": 2, "submit": 1e17, "runtime": 1.0, "req_procs": 2, "req_time": 1.0}]
    trace = trace_of(rows, 2)
    fast, general = run(trace, "easy", False), run(trace, "easy", True)
    assert_same_run(fast, general)
    assert fast.engine.stats["passes"] == 3
    assert fast.results["first_start"].tolist() == [1e17, 1e17]


def test_an_arrival_after_a_backfilled_job_with_setup_sees_the_shadow_that_setup_moved(
        ) -> None:
    """4 nodes. Job 1 (2 nodes) runs 0-100. At t=1 the head, job 2, needs all 4: its shadow
    time is 100 (job 1's end), no extra nodes. Job 3 (1 node, walltime 99, setup 5) ends
    by the shadow as EASY reckons it (1 + 99 = 100) and is backfilled; the engine predicts
    its end with the setup, at 105. At t=2 job 4 (1 node, walltime 100) arrives and
    nothing has ended: the pass computes the shadow again from the predicted ends, now
    105, so job 4 (2 + 100 = 102) is backfilled. Under the shadow the pass at t=1 left
    (100) it would not be: trying only the arrivals is exact without setup times alone."""
    rows = [{"job_id": 1, "submit": 0.0, "runtime": 100.0, "req_procs": 2, "req_time": 100.0},
            {"job_id": 2, "submit": 1.0, "runtime": 10.0, "req_procs": 4, "req_time": 100.0},
            {"job_id": 3, "submit": 1.0, "runtime": 99.0, "req_procs": 1, "req_time": 99.0,
             "setup": 5.0},
            {"job_id": 4, "submit": 2.0, "runtime": 100.0, "req_procs": 1, "req_time": 100.0}]
    starts = _starts_both_ways(rows, 4)
    assert (starts[3], starts[4]) == ((1.0, 1), (2.0, 1))


def test_arrivals_alone_are_tried_under_the_shadow_and_extra_the_last_pass_left() -> None:
    """Without setup times. 4 nodes; job 1 (2 nodes) runs 0-100; the head, job 2 (3
    nodes, walltime 10), waits for it from t=0.5: shadow 100, extra 4 - 3 = 1 node.
    Nothing ends before t=93, so each arrival is tried alone: job 3 (1 node, walltime
    500) at t=1 takes the extra node; job 4 (1 node, walltime 500) at t=2 finds none
    left and waits; job 5 (1 node, walltime 90) at t=3 ends by the shadow and starts.
    Job 2 starts at 100 when job 1 ends, and job 4 at 110 when job 2 ends."""
    rows = [{"job_id": 1, "submit": 0.0, "runtime": 100.0, "req_procs": 2, "req_time": 100.0},
            {"job_id": 2, "submit": 0.5, "runtime": 10.0, "req_procs": 3, "req_time": 10.0},
            {"job_id": 3, "submit": 1.0, "runtime": 500.0, "req_procs": 1, "req_time": 500.0},
            {"job_id": 4, "submit": 2.0, "runtime": 500.0, "req_procs": 1, "req_time": 500.0},
            {"job_id": 5, "submit": 3.0, "runtime": 90.0, "req_procs": 1, "req_time": 90.0}]
    starts = _starts_both_ways(rows, 4)
    assert [starts[i][0] for i in (1, 2, 3, 4, 5)] == [0.0, 100.0, 1.0, 110.0, 3.0]


def _starts_both_ways(rows: list[dict], total: int) -> dict[int, tuple[float, int]]:
    """Job id -> (first start, backfilled) under `easy`, once the fast path and the
    general engine are checked to give the same run."""
    trace = trace_of(rows, total)
    fast = run(trace, "easy", False)
    assert_same_run(fast, run(trace, "easy", True))
    res = fast.results
    return {i: (s, b) for i, s, b in zip(res["id"].tolist(), res["first_start"].tolist(),
                                         res["backfilled"].tolist(), strict=True)}


def _real(shared_traces: Path, name: str) -> NormalizedTrace:
    return normalize(read_trace(shared_traces / f"{name}.swf"))


@pytest.mark.parametrize("name", ["lublin_256", "KTH-SP2-1996-2", "theta_2023",
                                  "mira_2018_wk1_cobalt2swf"])
def test_every_output_file_is_byte_identical_on_the_real_traces(shared_traces, tmp_path,
                                                                 name: str) -> None:
    trace = _real(shared_traces, name)
    policies = EASY_FAMILY if name == "lublin_256" else ["easy"]
    for policy in policies:
        for general in (False, True):
            result = run(trace, policy, general)
            out = tmp_path / f"{policy}-{general}"
            write_outputs(out, trace, result, {"trace": name, "policy": policy,
                                               "cluster": "pool", "total_nodes": 1})
        for file in OUTPUT_FILES:
            fast = (tmp_path / f"{policy}-False" / file).read_bytes()
            assert fast == (tmp_path / f"{policy}-True" / file).read_bytes(), (policy, file)


def test_the_cli_flag_runs_the_general_engine_to_the_same_files(shared_traces, tmp_path
                                                                ) -> None:
    trace = shared_traces / "lublin_256.swf"
    for flag, out in (([], "fast"), (["--general-engine"], "general")):
        subprocess.run([sys.executable, "-m", "schedd", "simulate", "--trace", str(trace),
                        "--out", str(tmp_path / out), "--quiet", "--no-progress", *flag],
                       check=True, capture_output=True)
    for file in OUTPUT_FILES:
        assert ((tmp_path / "fast" / file).read_bytes()
                == (tmp_path / "general" / file).read_bytes()), file


# ------------------------------------------------------------------- when it is not taken

PLAIN_ROWS = [{"job_id": i, "submit": 5.0 * i, "runtime": 50.0, "req_procs": 2,
               "req_time": 60.0} for i in range(1, 9)]


def _order(trace: NormalizedTrace, policy: str = "easy", cluster=None,  # noqa: ANN001
           options: EngineOptions | None = None) -> str | None:
    cluster = cluster or NodePool(4)
    return plain_easy_order(Engine(cluster, make_policy(policy, [], cluster),
                                   options=options), trace)


def test_plain_runs_of_every_easy_order_take_it() -> None:
    trace = trace_of(PLAIN_ROWS, 4)
    assert [_order(trace, p) for p in EASY_FAMILY] == ["first", "best", "sjf", "first"]


@pytest.mark.parametrize("policy", ["fcfs", "conservative", "los", "easy-d", "easy-wfp2",
                                    "ckpt-backfill"])
def test_other_policies_do_not(policy: str) -> None:
    assert _order(trace_of(PLAIN_ROWS, 4), policy) is None


def test_a_policy_of_its_own_with_an_easy_order_does_not() -> None:
    """A plugin policy that names an order, even one that calls easy_pass, is not Easy:
    only the shipped EASY pass is known to be what the fast path does."""

    class Mine(Policy):
        name = "mine"
        order = "first"

        def schedule(self, view):  # noqa: ANN001, ANN202
            return easy_pass(view, "first")

    cluster = NodePool(4)
    engine = Engine(cluster, Mine(None, cluster))
    assert plain_easy_order(engine, trace_of(PLAIN_ROWS, 4)) is None


def test_blue_gene_partitions_do_not() -> None:
    cluster = parse_cluster("mira")
    rows = [dict(r, req_procs=512) for r in PLAIN_ROWS]
    assert _order(trace_of(rows, 49_152), cluster=cluster) is None


@pytest.mark.parametrize("options", [
    EngineOptions(mtbf_s=3600.0),
    EngineOptions(keep_finished=True),
    EngineOptions(checkpoint=CheckpointPolicy(periodic="sys")),
], ids=["failures", "keep-finished", "periodic-sys"])
def test_engine_options_that_act_on_plain_jobs_do_not(options: EngineOptions) -> None:
    assert _order(trace_of(PLAIN_ROWS, 4), options=options) is None


@pytest.mark.parametrize("change", [
    {"req_start": 100.0, "job_class": "D"},
    {"notice_time": 1.0, "job_class": "O"},
    {"ckpt_interval": 10.0, "checkpointable": 1},
], ids=["dedicated", "notice", "trace-interval"])
def test_jobs_a_mechanism_listens_to_do_not(change: dict) -> None:
    rows = [dict(r) for r in PLAIN_ROWS]
    rows[3].update(change)
    assert _order(trace_of(rows, 4)) is None
    trace = trace_of(rows, 4)
    assert_same_run(run(trace, "easy", False), run(trace, "easy", True))  # both: engine


def test_a_repeated_id_gets_the_engines_error() -> None:
    """Queue order allows an id again at a later submit time; the engine refuses it when
    it arrives, and so the run is the engine's."""
    trace = trace_of(PLAIN_ROWS, 4)
    columns = {k: np.concatenate([v, v[1:2]]) for k, v in trace.columns.items()}
    columns["submit"][-1] = 1000.0  # job 2 again, last in queue order
    trace = NormalizedTrace(trace.header, trace.max_nodes, columns, trace.dropped, [])
    assert _order(trace) is None
    for general in (False, True):
        with pytest.raises(DecisionError, match="submitted twice"):
            run(trace, "easy", general)


def test_a_nan_checkpoint_interval_is_not_taken_for_none() -> None:
    rows = [dict(r, checkpointable=1) for r in PLAIN_ROWS]
    rows[2]["ckpt_interval"] = float("nan")
    assert _order(trace_of(rows, 4)) is None
    assert _order(trace_of([dict(r, checkpointable=1) for r in PLAIN_ROWS], 4)) == "first"


def test_elastic_commands_do_not() -> None:
    trace = trace_of(PLAIN_ROWS, 4)
    trace.eccs.append(EccCommand(job_id=2, time=20.0, kind="ET", amount=10.0, line=0))
    assert _order(trace) is None


def test_a_job_too_large_for_the_machine_gets_the_engines_error() -> None:
    trace = trace_of(PLAIN_ROWS, 4)
    for general in (False, True):
        with pytest.raises(DecisionError, match="asks for 2 nodes; .* has 1"):
            run(trace, "easy", general, nodes=1)


def test_a_run_that_validates_every_instant_uses_the_engine(monkeypatch) -> None:  # noqa: ANN001
    import schedd.sim as sim

    def refuse(*_args, **_kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the fast path ran")

    monkeypatch.setattr(sim, "run_plain_easy", refuse)
    trace = trace_of(PLAIN_ROWS, 4)
    cluster = NodePool(4)
    result = simulate(trace, cluster, make_policy("easy", [], cluster), check_invariants=True)
    assert len(result.results["id"]) == len(PLAIN_ROWS)
    assert np.all(result.results["final_state"] == 0)
