"""EASY on partition clusters remembers, within a pass, the request sizes that cannot start
(issue 21, decision latency): a size that did not fit, and, until a start changes the states,
a size whose job would run past the shadow time and delay the head. It must decide exactly
what the plain walk decides, where every candidate is allocated a partition, tested against
the head's reservation and released."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from test_policies_invariants import (
    CLUSTERS,
    SETTINGS,
    check_retired,
    run_named,
    same_results,
    simulate,
    workloads,
)

from schedd.core.cluster import Cluster
from schedd.core.cluster_spec import parse_cluster
from schedd.core.decisions import Decision, Start
from schedd.core.job import JobSpec
from schedd.core.view import View
from schedd.policies.backfill import (
    eligible_queue,
    releases,
    retake,
    shadow_of,
    start_from_head,
)
from schedd.policies.base import Policy


class PlainPartitionEasy(Policy):
    """The oracle: EASY's partition-state walk with no memory between candidates."""

    name = "easy-plain"
    summary = "EASY, partition path, every candidate tried (tests only)"
    order = "first"

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        queue = eligible_queue(view, decisions)
        if view.free_nodes == 0 or not queue:
            return decisions
        state = view.free_state()
        started = start_from_head(queue, state, decisions)
        if len(started) == len(queue):
            return decisions
        head = queue[len(started)]
        shadow, shadow_state = shadow_of(head, state, releases(view, started))
        candidates = list(queue[len(started) + 1:])
        if self.order == "best":
            candidates.sort(key=lambda j: -j.nodes)
        elif self.order == "sjf":
            candidates.sort(key=lambda j: j.walltime)
        for job in candidates:
            if state.free_nodes == 0:
                break
            if not state.fits(job.nodes):
                continue
            alloc = state.allocate(job.nodes)
            assert alloc is not None
            if view.now + job.walltime > shadow and retake(shadow_state, alloc) is None:
                state.release(alloc)
                continue
            decisions.append(Start(job.id, block=alloc.block))
        return decisions


def plain(order: str, cluster: Cluster) -> Policy:
    policy = PlainPartitionEasy(None, cluster)
    policy.order = order
    return policy


def test_a_size_that_would_delay_the_head_is_tried_again_after_a_start():
    """bgq:4, midplanes M0-M3 (pairs M0M1 and M2M3). At 0 jobs 1 (ends 1,000), 2 (ends 10)
    and 3 (ends 9,000), 512 nodes each, take M0, M1 and M2. At 10 job 2 has left M1 free
    (M3 too), and 4 (1,024 nodes, the head), 5 (512, 5,000 s), 6 (512, 500 s) and 7 (512,
    3,000 s) arrive. The head fits at 1,000 on M0M1 (its shadow time). Job 5 would get M1
    and hold it past 1,000: it waits, and the pass remembers 512 as delaying. Job 6 ends
    before 1,000: it starts on M1. That start forgets the size: job 7 is tried again, gets
    M3, which the head does not need, and starts although it runs past the shadow time.
    The head runs 1,000-1,100 on M0M1; then job 5 starts."""
    cluster = parse_cluster("bgq:4")
    specs = [JobSpec(1, 0.0, 1000.0, 512, 1000.0), JobSpec(2, 0.0, 10.0, 512, 10.0),
             JobSpec(3, 0.0, 9000.0, 512, 9000.0), JobSpec(4, 10.0, 100.0, 1024, 100.0),
             JobSpec(5, 10.0, 5000.0, 512, 5000.0), JobSpec(6, 10.0, 500.0, 512, 500.0),
             JobSpec(7, 10.0, 3000.0, 512, 3000.0)]
    engine = run_named("easy", cluster, specs)
    r = check_retired(engine, specs)
    start = dict(zip(r["id"].tolist(), r["first_start"].tolist(), strict=True))
    assert start == {1: 0.0, 2: 0.0, 3: 0.0, 4: 1000.0, 5: 1100.0, 6: 10.0, 7: 10.0}
    same_results(engine, simulate(cluster, plain("first", cluster), specs))


@pytest.mark.parametrize("cluster_spec", ["bgq:4", "mira-blocks"])
@pytest.mark.parametrize(("name", "order"),
                         [("easy", "first"), ("easy-bestfit", "best"), ("easy-sjf", "sjf")])
def test_easy_decides_as_the_plain_walk(cluster_spec: str, name: str, order: str) -> None:
    cluster = CLUSTERS[cluster_spec]

    @settings(SETTINGS, max_examples=30)
    @given(specs=workloads(cluster, min_jobs=20, max_jobs=60))
    def check(specs: list[JobSpec]) -> None:
        same_results(run_named(name, cluster, specs),
                     simulate(cluster, plain(order, cluster), specs))

    check()
