"""Checkpoint-based backfilling (Niu et al.): Algorithm 2's prediction, Algorithm 3's
preemption at the reservation, on hand-built states; the accuracy transform; metrics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.checkpoint import CheckpointPolicy
from schedd.core.cluster import NodePool
from schedd.core.engine import Engine, EngineOptions
from schedd.core.job import Job, JobSpec
from schedd.core.validate import validate
from schedd.metrics import summarize
from schedd.policies import PolicyError, make_policy
from schedd.policies.ckpt_backfill import RequestQuantile, predict_runtime
from schedd.sim import simulate
from schedd.traces import normalize, read_trace
from schedd.traces.normalize import NormalizedTrace
from schedd.traces.workload import with_estimate_accuracy


def test_algorithm_2_prediction() -> None:
    # Short estimates are kept; long ones are scaled by p; checkpointed jobs are predicted
    # by what is left of their estimate plus the restart extension.
    assert predict_runtime(1000, None, 0.2, 1800, 430) == 1000
    assert predict_runtime(1800, None, 0.2, 1800, 430) == pytest.approx(360)
    assert predict_runtime(10_000, None, 0.2, 1800, 430) == pytest.approx(2000)
    assert predict_runtime(10_000, 2500, 0.2, 1800, 430) == 7500 + 430
    assert predict_runtime(10_000, 12_000, 0.2, 1800, 0) == 0


def _engine(policy_opts: list[str], nodes: int = 10, ckpt_s: float = 50.0) -> Engine:
    cluster = NodePool(nodes)
    options = EngineOptions(checkpoint=CheckpointPolicy(periodic="none", cost_model="fixed",
                                                        fixed_s=ckpt_s))
    return Engine(cluster, make_policy("ckpt-backfill", policy_opts, cluster),
                  options=options)


def _run(engine: Engine) -> dict[int, dict[str, float]]:
    while engine.step():
        validate(engine)
    a = engine.results.arrays()
    return {int(j): {k: v[i].item() for k, v in a.items()} for i, j in enumerate(a["id"])}


def test_backfilled_job_is_checkpointed_at_the_reservation_and_loses_nothing() -> None:
    """10 nodes. A (6 nodes, 1,000 s) runs; the head H (8 nodes) waits for A's end at
    t = 1,000. B (4 nodes) asks 5,000 s but runs 3,000: EASY would not backfill it (4 > 2
    extra nodes); predicted at 0.2 x 5,000 = 1,000 s it fits the window. At 1,000 the
    reservation is due and B is checkpointed (50 s); H starts only at 1,050, when B's
    nodes are back; B resumes after H, reads its checkpoint (50 s) and runs its remaining
    2,000 s: it ends at 1,550 + 50 + 2,000 = 3,600 with no work lost."""
    e = _engine(["p=0.2"])
    e.submit(JobSpec(1, 0, runtime=1000, nodes=6, walltime=1000))  # A
    e.submit(JobSpec(2, 0, runtime=500, nodes=8, walltime=600))  # H
    e.submit(JobSpec(3, 0, runtime=3000, nodes=4, walltime=5000))  # B
    r = _run(e)
    assert r[3]["first_start"] == 0 and r[3]["backfilled"] == 1
    assert r[2]["first_start"] == 1050  # not before B's checkpoint was written
    assert r[3]["preemptions"] == 1 and r[3]["checkpoints"] == 1
    assert r[3]["lost_node_s"] == 0  # the checkpoint kept the work
    assert r[3]["end"] == 3600
    assert e.policy.stats()["preemptions"] == 1
    # The paper's wait counts B's second wait too (1,050 -> 1,550): (0 + 1,050 + 500) / 3;
    # the wait before the first start alone is (0 + 1,050 + 0) / 3.
    s = summarize(e.results.arrays(), total_nodes=10)
    assert s["mean_wait_s"] == pytest.approx(350)
    assert s["mean_wait_all_segments_s"] == pytest.approx(1550 / 3)


def test_preemption_takes_the_largest_backfilled_jobs_first() -> None:
    """A (4 nodes, 100 s) runs; H (7 nodes) waits for t = 100. B1 (2 nodes) and B2 (4
    nodes), both predicted at 0.05 x 2,000 = 100 s, are backfilled. At 100, 3 more nodes
    are needed: B2 alone (the largest) is checkpointed; B1 keeps running."""
    e = _engine(["p=0.05"])
    e.submit(JobSpec(1, 0, runtime=100, nodes=4, walltime=100))  # A
    e.submit(JobSpec(2, 0, runtime=100, nodes=7, walltime=100))  # H
    e.submit(JobSpec(3, 0, runtime=1000, nodes=2, walltime=2000))  # B1
    e.submit(JobSpec(4, 0, runtime=1000, nodes=4, walltime=2000))  # B2
    r = _run(e)
    assert r[4]["preemptions"] == 1 and r[3]["preemptions"] == 0
    assert r[2]["first_start"] == 150  # after B2's 50 s checkpoint
    assert r[3]["end"] == 1000  # B1 never stopped


def test_without_overhead_the_reserved_job_starts_at_its_reservation() -> None:
    e = _engine(["p=0.2"], ckpt_s=0.0)
    e.submit(JobSpec(1, 0, runtime=1000, nodes=6, walltime=1000))
    e.submit(JobSpec(2, 0, runtime=500, nodes=8, walltime=600))
    e.submit(JobSpec(3, 0, runtime=3000, nodes=4, walltime=5000))
    r = _run(e)
    assert r[2]["first_start"] == 1000 and r[3]["end"] == 1500 + 2000


def _prefix(trace: NormalizedTrace, n: int) -> NormalizedTrace:
    return NormalizedTrace(trace.header, trace.max_nodes,
                           {k: v[:n] for k, v in trace.columns.items()}, trace.dropped, [])


@pytest.mark.parametrize(("name", "jobs"), [("lublin_256.swf", 10_000),
                                            ("KTH-SP2-1996-2.swf", 8_000),
                                            ("theta_2023.swf", 4_000)])
@pytest.mark.parametrize("threshold", [[], ["t_thr=1800"]])
def test_p_one_is_classical_easy_job_for_job(shared_traces, name: str, jobs: int,  # noqa: ANN001
                                             threshold: list[str]) -> None:
    """With p = 1 predictions are the estimates: nothing is preempted and every job starts
    exactly when `easy` starts it (KTH and Theta have many equal predicted ends: the
    reservation's spare nodes count every job ending at the shadow time)."""
    trace = _prefix(normalize(read_trace(shared_traces / name)), jobs)
    cluster = NodePool(trace.max_nodes)
    easy = simulate(trace, cluster, make_policy("easy", [], cluster)).results
    ckpt = simulate(trace, cluster,
                    make_policy("ckpt-backfill", ["p=1", *threshold], cluster)).results
    assert np.array_equal(easy["id"], ckpt["id"])
    assert np.array_equal(easy["first_start"], ckpt["first_start"])
    assert ckpt["preemptions"].sum() == 0


def test_spare_nodes_count_every_job_ending_at_the_shadow_time() -> None:
    """10 nodes. A and B (4 nodes each) both end at 100; H (6 nodes) waits for them. At
    the shadow time 100, A alone frees enough for H, and B's 4 nodes are spare too
    (extra = 2 + 4 + 4 - 6 = 4): D (2 nodes, 1,000 s) backfills into them at 0, under
    `easy` and under ckpt-backfill p = 1 (Algorithm 1 read literally stops at A and
    would find extra = 0)."""
    for name, opts in (("easy", []), ("ckpt-backfill", ["p=1"])):
        cluster = NodePool(10)
        e = Engine(cluster, make_policy(name, opts, cluster))
        e.submit(JobSpec(1, 0, runtime=100, nodes=4, walltime=100))  # A
        e.submit(JobSpec(2, 0, runtime=100, nodes=4, walltime=100))  # B
        e.submit(JobSpec(3, 0, runtime=100, nodes=6, walltime=100))  # H
        e.submit(JobSpec(4, 0, runtime=1000, nodes=2, walltime=1000))  # D
        r = _run(e)
        assert r[4]["first_start"] == 0, name
        assert r[3]["first_start"] == 100, name


def _ckpt_sys() -> EngineOptions:
    return EngineOptions(checkpoint=CheckpointPolicy(periodic="sys", sys_interval=500,
                                                     cost_model="fixed", fixed_s=40.0))


@st.composite
def _rigid_jobs(draw) -> list[JobSpec]:  # noqa: ANN001
    n = draw(st.integers(3, 30))
    specs, t = [], 0.0
    for i in range(1, n + 1):
        t += draw(st.sampled_from([0.0, 0.0, 50.0, 100.0, 700.0]))
        walltime = draw(st.sampled_from([100.0, 300.0, 1000.0, 1800.0, 3600.0]))
        runtime = draw(st.sampled_from([walltime, walltime / 2, walltime / 10, 1.5 * walltime]))
        specs.append(JobSpec(i, t, runtime=runtime, nodes=draw(st.integers(1, 8)),
                             walltime=walltime))
    return specs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=_rigid_jobs(), threshold=st.sampled_from(["t_thr=0", "t_thr=1800", "t_thr_q=0"]),
       periodic=st.booleans())
def test_p_one_starts_every_job_when_easy_does(specs: list[JobSpec], threshold: str,
                                               periodic: bool) -> None:
    """Random small workloads with many equal ends, with and without periodic checkpoints
    (which move the engine's predicted ends): p = 1 makes `easy`'s decisions."""
    starts = []
    for name, opts in (("easy", []), ("ckpt-backfill", ["p=1", threshold])):
        cluster = NodePool(8)
        e = Engine(cluster, make_policy(name, opts, cluster),
                   options=_ckpt_sys() if periodic else None)
        e.feed(specs)
        r = _run(e)
        starts.append({j: v["first_start"] for j, v in r.items()})
        assert all(v["preemptions"] == 0 for v in r.values())
    assert starts[0] == starts[1]


def _job(spec: JobSpec) -> Job:
    return Job(spec.id, spec.submit, spec.nodes, spec.walltime, spec.user, spec.project,
               spec.job_class, spec.min_nodes, spec.checkpointable, spec.requested_start,
               spec.queue)


def test_online_threshold_is_a_quantile_of_the_requests_seen() -> None:
    """Requests 600, 1800, 3600, 7200: q = 0.5 puts the threshold at the third (two
    requests below it), q = 0.25 at the second, q = 0 at the first (nothing shielded),
    q = 1 past the last (everything shielded)."""
    jobs = [_job(JobSpec(i, 0, runtime=1, nodes=1, walltime=w))
            for i, w in enumerate([3600.0, 600.0, 7200.0, 1800.0], 1)]
    for q, expected in ((0.5, 3600.0), (0.25, 1800.0), (0.0, 600.0), (1.0, float("inf"))):
        quantile = RequestQuantile(q)
        quantile.add(jobs)
        quantile.add(jobs[:2])  # a job seen again (still waiting) counts once
        assert quantile.value() == expected


@given(walltimes=st.lists(st.sampled_from([60.0, 600.0, 1800.0, 3600.0, 7200.0, 86_400.0])
                          | st.floats(1.0, 1e6), min_size=1, max_size=60),
       q=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]),
       batches=st.integers(1, 5))
def test_online_quantile_equals_the_sorted_rank(walltimes: list[float], q: float,
                                                batches: int) -> None:
    """After any sequence of arrivals (in batches, some jobs seen twice), the threshold is
    the request of rank floor(q x n) among the n seen, or infinite when that is n."""
    jobs = [_job(JobSpec(i, 0, runtime=1, nodes=1, walltime=w))
            for i, w in enumerate(walltimes, 1)]
    quantile = RequestQuantile(q)
    step = max(1, len(jobs) // batches)
    for lo in range(0, len(jobs), step):
        quantile.add(jobs[max(0, lo - 1):lo + step])  # overlapping: repeats count once
        seen = sorted(walltimes[:lo + step])
        k = int(q * len(seen))
        assert quantile.value() == (seen[k] if k < len(seen) else float("inf"))


def test_online_threshold_shields_the_shortest_share_of_requests() -> None:
    """A (6 nodes, 600 s) runs; H (8 nodes) waits for t = 600; B (4 nodes) asks 5,000 s
    and runs 400. The requests seen are 600, 600, 5,000: with q = 0.5 the threshold is
    600, B is scaled to 500 s, fits the window and backfills at 0. With q = 1 every job is
    shielded (classical): B cannot backfill (4 nodes > 2 spare) and starts when H ends."""
    def run(q: str) -> dict[int, dict[str, float]]:
        e = _engine(["p=0.1", f"t_thr_q={q}"], nodes=10, ckpt_s=0.0)
        e.submit(JobSpec(1, 0, runtime=600, nodes=6, walltime=600))  # A
        e.submit(JobSpec(2, 0, runtime=100, nodes=8, walltime=600))  # H
        e.submit(JobSpec(3, 0, runtime=400, nodes=4, walltime=5000))  # B
        r = _run(e)
        assert e.policy.stats()["t_thr_final_s"] == (600 if q == "0.5" else -1)
        return r

    assert run("0.5")[3]["first_start"] == 0
    assert run("1")[3]["first_start"] == 700


def _cascade_engine(e_walltime: float, e_runtime: float) -> Engine:
    """12 nodes, checkpoints free, p = 0.1 for every job. A (6 nodes, 1,000 s) runs; H (7
    nodes) waits for t = 1,000; B (4 nodes, asks 5,000 s, runs 3,000) is predicted 500 s
    and backfilled at 0; so is E (2 nodes). At 1,000 B has outlived its prediction: H's
    reservation preempts B (the largest; 6 + 4 >= 7) and H starts, leaving 3 nodes; B is
    back at the head and needs 4."""
    e = _engine(["p=0.1", "t_thr=0"], nodes=12, ckpt_s=0.0)
    e.submit(JobSpec(1, 0, runtime=1000, nodes=6, walltime=1000))  # A
    e.submit(JobSpec(2, 0, runtime=10_000, nodes=7, walltime=10_000))  # H
    e.submit(JobSpec(3, 0, runtime=3000, nodes=4, walltime=5000))  # B
    e.submit(JobSpec(4, 0, runtime=e_runtime, nodes=2, walltime=e_walltime))  # E
    return e


def test_cascade_counts_preemptions_for_jobs_that_were_checkpointed() -> None:
    """E asks 20,000 s (predicted 2,000: beyond H's window, it backfills into the 5 spare
    nodes) and runs 15,000. B's reservation at 1,000 counts on E's prediction, 2,000; at
    2,000 E is still running, so B's reservation preempts E: a cascade (a preemption caused
    by the reservation of a job that had itself been checkpointed)."""
    e = _cascade_engine(20_000, 15_000)
    r = _run(e)
    assert r[2]["first_start"] == 1000
    assert r[3]["preemptions"] == 1 and r[4]["preemptions"] == 1
    assert r[3]["end"] == 2000 + 2000  # resumed at 2,000 with 2,000 s of work left
    stats = e.policy.stats()
    assert stats["preemptions"] == 2 and stats["preempting_reservations"] == 2
    assert stats["cascade_reservations"] == 1 and stats["cascade_preemptions"] == 1


def test_a_prediction_already_outlived_does_not_make_a_new_reservation_due() -> None:
    """E asks 5,000 s (predicted 500, backfilled in H's window) and runs 4,000. At 1,000,
    when B becomes the head, E has outlived its prediction: E is predicted by its estimate
    (5,000), so B's new reservation is not due at once (which would preempt E, a cascade
    built on a prediction known to be wrong); B starts when E ends at 4,000."""
    e = _cascade_engine(5000, 4000)
    r = _run(e)
    assert r[3]["preemptions"] == 1 and r[4]["preemptions"] == 0
    assert r[4]["end"] == 4000 and r[3]["end"] == 4000 + 2000
    stats = e.policy.stats()
    assert stats["preemptions"] == 1 and stats["cascade_preemptions"] == 0


def test_bad_options_and_partitions_are_refused() -> None:
    with pytest.raises(PolicyError, match="p must be in"):
        make_policy("ckpt-backfill", ["p=0"], NodePool(4))
    for bad in ("t_thr=-5", "t_thr=nan"):
        with pytest.raises(PolicyError, match="t_thr must be -1"):
            make_policy("ckpt-backfill", [bad], NodePool(4))
    for bad in ("t_thr_q=1.5", "t_thr_q=nan"):
        with pytest.raises(PolicyError, match="t_thr_q must be in"):
            make_policy("ckpt-backfill", [bad], NodePool(4))
    from schedd.core.cluster_spec import parse_cluster

    with pytest.raises(PolicyError, match="node pool"):
        make_policy("ckpt-backfill", [], parse_cluster("bgq:2"))


def test_estimate_accuracy_transform(shared_traces) -> None:  # noqa: ANN001
    raw = read_trace(shared_traces / "KTH-SP2-1996-2.swf")
    run, req = raw.columns["runtime"], raw.columns["req_time"]
    exact = with_estimate_accuracy(raw, 0.0).columns["req_time"]
    half = with_estimate_accuracy(raw, 0.5).columns["req_time"]
    same = with_estimate_accuracy(raw, 1.0).columns["req_time"]
    known = (req > 0) & (run >= 0)
    assert np.allclose(exact[known], run[known])
    assert np.allclose(half[known], (run[known] + req[known]) / 2, atol=1e-3)
    assert np.array_equal(same, req)


def test_paper_metrics_on_hand_built_results() -> None:
    """Two jobs over a 100 s span on 10 nodes: job 1 waits 0, runs 100 on 4 nodes;
    job 2 waits 20 then 30 more after a checkpoint, holds 6 nodes for 50 s, wasting 60
    node-seconds of checkpoint and restart."""
    cols = {
        "submit": [0.0, 0.0], "first_start": [0.0, 20.0], "end": [100.0, 100.0],
        "executed": [100.0, 50.0], "alloc_nodes": [4, 6], "walltime": [100.0, 100.0],
        "job_class": [0, 0], "final_state": [0, 0], "preemptions": [0, 1],
        "failures": [0, 0], "checkpoints": [0, 1], "busy_node_s": [400.0, 300.0],
        "useful_node_s": [400.0, 240.0], "lost_node_s": [0.0, 0.0],
        "ckpt_node_s": [0.0, 30.0], "restart_node_s": [0.0, 30.0],
        "setup_node_s": [0.0, 0.0], "t_pre": [0.0, 5.0], "ckpt_by_system": [1, 1],
        "start_delay": [0.0, 0.0], "backfilled": [0, 1],
    }
    s = summarize({k: np.asarray(v) for k, v in cols.items()}, total_nodes=10)
    assert s["mean_queue_length"] == pytest.approx(50 / 100)  # job 2 waited 50 s in all
    assert s["mean_wait_s"] == pytest.approx((0 + 20) / 2)  # before the first start
    assert s["mean_wait_all_segments_s"] == pytest.approx((0 + 50) / 2)  # the paper's
    assert s["backfill_ratio"] == 0.5 and s["preemption_ratio"] == 0.5
    assert s["checkpoints_per_node_day"] == pytest.approx(6 / (10 * 100 / 86400))
    assert s["wasted_ratio"] == pytest.approx(60 / 700)


# ---------------------------------------------------------------------- properties
@st.composite
def _workloads(draw) -> list[JobSpec]:  # noqa: ANN001
    n = draw(st.integers(5, 40))
    specs, t = [], 0.0
    for i in range(1, n + 1):
        t += draw(st.sampled_from([0.0, 0.0, 10.0, 100.0, 1000.0]))
        walltime = draw(st.sampled_from([600.0, 1800.0, 3600.0, 7200.0, 20_000.0]))
        runtime = draw(st.floats(1.0, walltime * 1.2))
        specs.append(JobSpec(i, t, runtime=runtime, nodes=draw(st.integers(1, 16)),
                             walltime=walltime))
    return specs


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(specs=_workloads(), p=st.sampled_from([0.1, 0.2, 0.5]),
       ckpt_s=st.sampled_from([0.0, 30.0]))
def test_every_job_runs_its_work_once_and_runs_are_deterministic(
        specs: list[JobSpec], p: float, ckpt_s: float) -> None:
    """Whatever the workload: every job retires once, with all of its work done (JIT
    checkpoints lose nothing), invariants hold after every instant, same input same
    results."""
    results = []
    for _ in range(2):
        e = _engine([f"p={p}"], nodes=16, ckpt_s=ckpt_s)
        e.feed(specs)
        r = _run(e)
        results.append(e.results.arrays())
        assert sorted(r) == [s.id for s in specs]
        for s in specs:
            work = min(s.runtime, s.walltime)
            assert r[s.id]["useful_node_s"] == pytest.approx(work * s.nodes, rel=1e-9)
            assert r[s.id]["lost_node_s"] == 0
            assert r[s.id]["first_start"] >= s.submit
    for name in results[0]:
        assert np.array_equal(results[0][name], results[1][name]), name


def _ordered_as_before(queue: list[Job], first_in_line: list[int], reserved: int | None
                       ) -> list[Job]:
    """The queue order of the pass before it walked the queue once (the reference)."""
    jobs = list(queue)
    if not first_in_line and reserved is None:
        return jobs
    waiting = {j.id: j for j in jobs}
    front = [reserved] if reserved in waiting else []
    front += [j for j in first_in_line if j in waiting and j != reserved]
    ahead = set(front)
    return [waiting[j] for j in front] + [j for j in jobs if j.id not in ahead]


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.integers(1, 40), unique=True, max_size=30),
       stopped=st.lists(st.integers(1, 45), max_size=8),
       reserved=st.none() | st.integers(1, 45))
def test_ordered_queue_is_the_one_of_before(ids: list[int], stopped: list[int],
                                            reserved: int | None) -> None:
    """Checkpointed and reserved jobs first, waiting or not (ids up to 45 are not all in
    the queue), repeated or not: the same jobs in the same order as before."""
    policy = make_policy("ckpt-backfill", [], NodePool(10))
    policy.first_in_line = list(stopped)  # type: ignore[attr-defined]
    policy.reserved = reserved  # type: ignore[attr-defined]
    queue = [_job(JobSpec(i, float(i), runtime=1, nodes=1, walltime=60.0)) for i in ids]
    got = policy._ordered(queue)  # type: ignore[attr-defined]
    assert [j.id for j in got] == [j.id for j in _ordered_as_before(queue, stopped, reserved)]


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.sampled_from([0, 1, 2, 5, 63, 64, 1000, (1 << 20) - 1, 1 << 20,
                                     (1 << 20) + 7, 1 << 40, -1, -5])
                    | st.integers(0, 3000), unique=True, min_size=1, max_size=40),
       q=st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]), data=st.data())
def test_online_quantile_with_any_job_ids(ids: list[int], q: float, data) -> None:  # noqa: ANN001
    """Ids in the list of flags, past it, past its limit and negative (a set for those),
    arriving in any order and seen again: the threshold is the sorted rank's."""
    walltimes = {i: float(data.draw(st.integers(1, 50))) for i in ids}
    quantile = RequestQuantile(q)
    seen: set[int] = set()
    for _ in range(4):
        batch = data.draw(st.lists(st.sampled_from(ids), unique=True))
        quantile.add([_job(JobSpec(i, 0, runtime=1, nodes=1, walltime=walltimes[i]))
                      for i in batch])
        seen.update(batch)
        ranked = sorted(walltimes[i] for i in seen)
        k = int(q * len(ranked))
        assert quantile.value() == (ranked[k] if k < len(ranked) else float("inf"))
