"""Property tests of every registered policy on small random workloads.

For each policy in POLICIES on `nodes:64`, `bgq:4` and `mira-blocks` (the LOS family packs
node counts: `nodes:64` only): a whole simulation with
`validate(engine)` after every step ends with every job retired, no job started before its
submission (or, for dedicated jobs, before its requested start), executed time equal to
min(runtime, walltime) (no overheads configured), and two runs give identical results.
After every pass the first eligible waiting job does not fit the free machine (except for
plan-based, skip-counting and dedicated-reserving policies, which may keep it waiting on
purpose); for the policies that order their queue by Cobalt's wfp2 utility it is the first
job of that order.

Also: FCFS starts jobs in queue order; EASY (all three orders, all three clusters) never
starts a queue head later than the shadow time computed while it was the head; and on a node
pool EASY's generic partition-state code path (`easy_pass(..., generic=True)`) produces
exactly the schedule of the integer fast path, for every candidate order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.bgq import BlockCluster
from schedd.core.checkpoint import CheckpointPolicy
from schedd.core.cluster import Cluster, NodePool
from schedd.core.cluster_spec import parse_cluster
from schedd.core.engine import Engine, EngineOptions
from schedd.core.job import JobClass, JobSpec
from schedd.core.results import CLASS_CODES, STATE_CODES
from schedd.core.validate import validate
from schedd.core.view import View
from schedd.policies import POLICIES, make_policy
from schedd.policies.backfill import easy_pass
from schedd.policies.base import Policy
from schedd.policies.los import TABLE_III, EasyE
from schedd.policies.rt_common import wfp2_order

# The package's own baselines: policies that never preempt (test plugins may register more
# while the suite runs; preempting policies have their own property tests).
# tests/test_realtime_policies.py has those of rt-preempt and wcjs.
PREEMPTING = {"ckpt-backfill", "hybrid", "rt-preempt", "wcjs"}
# Plan-based policies may keep a job that fits now waiting for a better plan (the paper's
# Fig. 1); tests/test_plan_sa.py checks their plans instead.
PLANNING = {"plan-sa"}
# Delayed-LOS and Hybrid-LOS (Algorithms 1-2 of the LOS paper) may skip a fitting head up to
# C_s times (Basic_DP, or Reservation_DP around a dedicated job); tests/test_los.py checks
# the skip counts instead.
SKIPPING = {"delayed-los", "hybrid-los", "delayed-los-e", "hybrid-los-e"}
# Dedicated-queue variants keep a fitting batch head waiting when starting it would take
# nodes a future dedicated job needs (DedicatedGuard); tests/test_los.py checks the starts.
DEDICATED_RESERVING = {"easy-d", "easy-de", "los-d", "los-de"}
# Slurm's emulation starts jobs when its scheduler threads run (a pass after a submission,
# a job's end, a backfill cycle), not at every instant; tests/test_slurm_policy.py checks
# its timing instead.
TIMED = {"slurm"}
# The agent starts the job its chooser picked, which stays picked until it starts, even
# when a dedicated job's requested start later puts another at the queue's head.
CHOSEN = {"agent"}
HEAD_MAY_WAIT = PLANNING | SKIPPING | DEDICATED_RESERVING | TIMED | CHOSEN
# EASY over Cobalt's wfp2 order instead of the (submit, id) queue order (rt-hpq: real-time
# jobs first, each class in wfp2 order): their head is the first job of that order.
WFP2_ORDERED = {"easy-wfp2", "rt-hpq"}
# The LOS family packs node counts and refuses partition clusters (all of Table III but
# easy-e, which is EASY's code).
# Slurm's emulation runs on node pools and slurm.conf machines (schedd/slurm).
POOL_ONLY = {cls.name for cls in TABLE_III if cls is not EasyE} | {"slurm"}
BUILT_IN = sorted(n for n, cls in POLICIES.items()
                  if cls.__module__.startswith("schedd.") and n not in PREEMPTING)

NO_OVERHEADS = EngineOptions(checkpoint=CheckpointPolicy(periodic="none"))
CLUSTERS = {spec: parse_cluster(spec) for spec in ("nodes:64", "bgq:4", "mira-blocks")}
POLICY_CLUSTERS = [
    pytest.param(policy, spec, id=f"{policy}-{spec}")
    for policy in BUILT_IN for spec in CLUSTERS
    if spec == "nodes:64" or policy not in POOL_ONLY
]
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------- workloads
def node_counts(cluster: Cluster) -> st.SearchStrategy[int]:
    """Any size on a pool; on a block machine a partition size first (small ones more
    often, so the machine is shared), then a request that rounds up to it."""
    if isinstance(cluster, NodePool):
        return st.one_of(st.integers(1, max(1, cluster.total_nodes // 4)),
                         st.integers(1, cluster.total_nodes))
    assert isinstance(cluster, BlockCluster)
    sizes = cluster.sizes
    lows = {s: (sizes[i - 1] if i else 0) for i, s in enumerate(sizes)}
    small = sizes[: max(1, len(sizes) // 2)]
    return st.one_of(st.sampled_from(small), st.sampled_from(sizes)).flatmap(
        lambda s: st.integers(lows[s] + 1, s))


@st.composite
def workloads(draw, cluster: Cluster, min_jobs: int = 5, max_jobs: int = 40) -> list[JobSpec]:
    """5-40 jobs sorted by submit (ties common), some killed at their walltime, some
    dedicated (requested start ahead), some malleable (policies start them at their
    maximum, so they compute at reference speed)."""
    n = draw(st.integers(min_jobs, max_jobs), label="jobs")
    ids = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True))
    kinds = ["B", "B", "B", "B", "D", "M"]
    t = 0.0
    specs = []
    for job_id in ids:
        t += draw(st.sampled_from([0, 0, 1, 30, 200, 900, 3600]), label="gap")
        nodes = draw(node_counts(cluster), label="nodes")
        runtime = float(draw(st.integers(1, 5000), label="runtime"))
        walltime = draw(st.one_of(st.just(runtime), st.integers(1, 8000).map(float)),
                        label="walltime")
        kind = draw(st.sampled_from(kinds), label="class")
        extra: dict = {}
        if kind == "D":
            extra = {"job_class": JobClass.DEDICATED,
                     "requested_start": t + draw(st.integers(0, 5000), label="rs")}
        elif kind == "M":
            extra = {"job_class": JobClass.MALLEABLE,
                     "min_nodes": draw(st.integers(1, nodes), label="min")}
        specs.append(JobSpec(job_id, t, runtime, nodes, walltime, **extra))
    return specs


# ---------------------------------------------------------------------- driving
def eligible(engine: Engine) -> list:
    return [j for j in engine.queue if j.requested_start <= engine.now]


def head_is_blocked(engine: Engine) -> None:
    """After a pass of any of these policies the first eligible waiting job does not fit
    the free machine (FCFS and EASY start the head first; conservative reserves the head
    first, at now if it fits: releases only add resources)."""
    queue = eligible(engine)
    if queue:
        head = queue[0]
        if engine.policy.name in WFP2_ORDERED:
            order = wfp2_order(queue, engine.now, engine.cluster.total_nodes)
            if engine.policy.name == "rt-hpq":  # stable: wfp2 order within each class
                order.sort(key=lambda j: j.job_class is not JobClass.REALTIME)
            head = order[0]
        assert not engine.state.copy().allocate(head.nodes), (
            f"t={engine.now:g}: head job {head.id} ({head.nodes} nodes) fits "
            f"{engine.state.free_nodes} free nodes but was left waiting")


def simulate(cluster: Cluster, policy: Policy, specs: list[JobSpec], after_step=None
             ) -> Engine:
    engine = Engine(cluster, policy, options=NO_OVERHEADS)
    engine.feed(specs)
    validate(engine)
    while engine.step():
        validate(engine)
        if policy.name not in HEAD_MAY_WAIT:
            head_is_blocked(engine)
        if after_step is not None:
            after_step(engine)
    return engine


def run_named(name: str, cluster: Cluster, specs: list[JobSpec]) -> Engine:
    return simulate(cluster, make_policy(name, [], cluster), specs)


def same_results(a: Engine, b: Engine) -> None:
    ra, rb = a.results.arrays(), b.results.arrays()
    assert ra.keys() == rb.keys()
    for name in ra:
        assert np.array_equal(ra[name], rb[name]), f"column {name} differs"


def check_retired(engine: Engine, specs: list[JobSpec]) -> dict[str, np.ndarray]:
    """Every job ran once, whole, after its submission, and nothing is left."""
    cluster = engine.cluster
    r = engine.results.arrays()
    assert len(engine.results) == len(specs)
    assert not engine.jobs and not engine.queue and not engine.running
    assert engine.next_time() is None
    assert not engine.reservations
    assert engine.state.free_nodes == cluster.total_nodes
    by_id = {s.id: s for s in specs}
    assert sorted(r["id"].tolist()) == sorted(by_id)
    for i, job_id in enumerate(r["id"].tolist()):
        spec = by_id[job_id]
        start, end = r["first_start"][i], r["end"][i]
        work = min(spec.runtime, spec.walltime)
        where = f"job {job_id} ({spec})"
        assert start >= spec.submit, f"{where} started at {start}"
        assert r["wait"][i] >= 0 and r["wait"][i] == pytest.approx(start - spec.submit)
        assert r["executed"][i] == pytest.approx(work, rel=1e-9, abs=1e-6), where
        assert end == pytest.approx(start + work, rel=1e-9, abs=1e-6), where
        state = STATE_CODES[r["final_state"][i]]
        assert state == ("completed" if spec.runtime <= spec.walltime else "killed"), where
        assert r["preemptions"][i] == 0 and r["failures"][i] == 0
        assert r["alloc_nodes"][i] == cluster.alloc_size(spec.nodes), where
        assert r["busy_node_s"][i] == pytest.approx(r["alloc_nodes"][i] * work, rel=1e-9)
        if spec.job_class is JobClass.DEDICATED:
            assert CLASS_CODES[r["job_class"][i]] == "D"
            assert start >= spec.requested_start, f"{where} started before its request"
    return r


# ---------------------------------------------------------------------- every policy
@pytest.mark.parametrize(("policy", "cluster_spec"), POLICY_CLUSTERS)
def test_policy_retires_every_job_deterministically(policy: str, cluster_spec: str) -> None:
    cluster = CLUSTERS[cluster_spec]

    @SETTINGS
    @given(specs=workloads(cluster))
    def check(specs: list[JobSpec]) -> None:
        first = run_named(policy, cluster, specs)
        check_retired(first, specs)
        second = run_named(policy, cluster, specs)
        same_results(first, second)

    check()


@pytest.mark.parametrize("cluster_spec", list(CLUSTERS))
def test_fcfs_starts_in_queue_order(cluster_spec: str) -> None:
    """FCFS never lets a later job pass an earlier one (dedicated jobs aside: they join
    the queue at their requested start)."""
    cluster = CLUSTERS[cluster_spec]

    @SETTINGS
    @given(specs=workloads(cluster))
    def check(specs: list[JobSpec]) -> None:
        r = check_retired(run_named("fcfs", cluster, specs), specs)
        start = dict(zip(r["id"].tolist(), r["first_start"].tolist(), strict=True))
        order = [s for s in sorted(specs, key=lambda s: (s.submit, s.id))
                 if s.job_class is not JobClass.DEDICATED]
        starts = [start[s.id] for s in order]
        assert starts == sorted(starts)

    check()


# ---------------------------------------------------------------------- EASY code paths
class GenericEasy(Policy):
    """EASY forced through the partition-state path (`generic=True`) on a node pool."""

    name = "easy-generic"
    summary = "EASY via the generic path (tests only)"
    order = "first"

    def schedule(self, view: View):
        return easy_pass(view, self.order, generic=True)


def generic_easy(order: str, cluster: Cluster) -> Policy:
    policy = GenericEasy(None, cluster)
    policy.order = order
    return policy


@pytest.mark.parametrize(("name", "order"),
                         [("easy", "first"), ("easy-bestfit", "best"), ("easy-sjf", "sjf")])
def test_easy_generic_path_matches_fast_path_on_node_pool(name: str, order: str) -> None:
    @settings(SETTINGS, max_examples=40)
    @given(size=st.sampled_from([1, 7, 16, 64]), data=st.data())
    def check(size: int, data) -> None:
        cluster = NodePool(size)
        specs = data.draw(workloads(cluster))
        fast = run_named(name, cluster, specs)
        generic = simulate(cluster, generic_easy(order, cluster), specs)
        check_retired(generic, specs)
        same_results(fast, generic)

    check()


# ---------------------------------------------------------------------- EASY's promise
def shadow_time(engine: Engine, nodes: int) -> float:
    """When a request of `nodes` fits at the latest, if every running job ends at its
    predicted end (its walltime: an upper bound here). Works on partition states too."""
    state = engine.state.copy()
    if state.fits(nodes):
        return engine.now
    for end, job_id in engine._by_end:
        allocation = engine.running[job_id].allocation
        assert allocation is not None
        state.release(allocation)
        if state.fits(nodes):
            return end
    raise AssertionError(f"{nodes} nodes never fit")


@pytest.mark.parametrize("cluster_spec", list(CLUSTERS))
@pytest.mark.parametrize("policy", ["easy", "easy-bestfit", "easy-sjf"])
def test_easy_never_delays_the_head_past_its_shadow_time(policy: str, cluster_spec: str
                                                         ) -> None:
    """Once a job heads the queue, backfilling never starts it later than the shadow time
    computed then (no dedicated jobs: nothing can overtake the head)."""
    cluster = CLUSTERS[cluster_spec]

    @SETTINGS
    @given(specs=workloads(cluster))
    def check(specs: list[JobSpec]) -> None:
        specs = [s for s in specs if s.job_class is not JobClass.DEDICATED]
        promised: dict[int, float] = {}

        def record(engine: Engine) -> None:
            if engine.queue:
                head = engine.queue[0]
                shadow = shadow_time(engine, head.nodes)
                promised[head.id] = min(promised.get(head.id, shadow), shadow)

        engine = simulate(cluster, make_policy(policy, [], cluster), specs, record)
        r = check_retired(engine, specs)
        start = dict(zip(r["id"].tolist(), r["first_start"].tolist(), strict=True))
        late = {j: (start[j], t) for j, t in promised.items() if start[j] > t + 1e-9}
        assert not late, f"heads started after their shadow time (start, shadow): {late}"

    check()
