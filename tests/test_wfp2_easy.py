"""easy-wfp2's pass on a node pool (schedd/policies/rt_basic.py `EasyWfp2.schedule`, wfp2.py
`wfp2_easy_order` and `wfp2_easy_queue`): EASY over a few jobs of the wfp2 order instead
of the whole of it (issue 35 item 5, docs/benchmarks.md "Deep queues").

The claim: on a pool, the jobs `easy_pass` starts over `wfp2_easy_queue` are the ones it
starts over the full `wfp2_order`. Held here by hand on small queues, at every pass of
random runs (both queues' decisions compared in the same pass), on whole random runs
against the pass skeleton's full order (every job's start and end), and on random queues
for the orders alone (each is the full order with jobs left out).
"""

from __future__ import annotations

import random

import pytest
from engine_steps import col, finish, until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.cluster_spec import parse_cluster
from schedd.core.decisions import Decision, Start, WakeAt
from schedd.core.engine import Engine
from schedd.core.job import Job, JobClass, JobSpec, JobState
from schedd.core.view import View
from schedd.policies import make_policy
from schedd.policies.backfill import easy_pass
from schedd.policies.base import Policy
from schedd.policies.rt_basic import EasyWfp2
from schedd.policies.rt_common import RealtimePolicy
from schedd.policies.wfp2 import (
    _cube,
    _exact_cubes,
    wfp2_easy_order,
    wfp2_easy_queue,
    wfp2_order,
    wfp2_order_keyed,
)


def job(job_id: int, submit: float, nodes: int, walltime: float) -> Job:
    return Job(job_id, submit, nodes, walltime, -1, -1, JobClass.BATCH, -1, True, -1.0, -1)


def spec(job_id: int, submit: float, nodes: int, runtime: float, walltime: float) -> JobSpec:
    return JobSpec(job_id, submit, runtime, nodes, walltime)


class FullOrder(EasyWfp2):
    """easy-wfp2 as the pass skeleton runs it: EASY over the whole wfp2 order."""

    name = "easy-wfp2-full"

    def schedule(self, view: View) -> list[Decision]:
        return RealtimePolicy.schedule(self, view)


class BothQueues(EasyWfp2):
    """Every pass: EASY over the whole order and over `wfp2_easy_queue`, each on its own
    copy of the free state; they must agree (the full order's decisions are returned)."""

    name = "easy-wfp2-both"

    def __init__(self, options: object, cluster: object) -> None:
        super().__init__(options, cluster)
        self.passes = 0
        self.reduced = 0  # passes where the reduced queue was shorter than the queue

    def schedule(self, view: View) -> list[Decision]:
        full = RealtimePolicy.schedule(self, view)
        state = view.free_state()
        if state.free_nodes:
            queue = list(view.queue)
            few = wfp2_easy_queue(view, queue, self.cluster.total_nodes, state.free_nodes)
            assert easy_pass(view, "first", queue=few, state=state) == full, view.now
            self.passes += 1
            self.reduced += len(few) < len(queue)
        else:
            assert full == []
        return full


def run(policy: EasyWfp2, cluster: object, specs: list[JobSpec]) -> Engine:
    e = Engine(cluster, policy)  # type: ignore[arg-type]
    for s in specs:
        e.submit(s)
    return finish(e, 100_000)


# ------------------------------------------------------------------------------ by hand
def test_cubes_of_whole_walltimes_are_pow_here() -> None:
    """The shortcut `w * w * w` for `w ** 3` is taken only where it was checked to hold."""
    assert _exact_cubes() == all(float(w) ** 3 == float(w) ** 2 * w for w in range(1, 131072))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.floats(1e-300, 1e99), st.integers(1, 300_000).map(float),
                 st.integers(1, 300_000).map(lambda w: w + 0.5)))
def test_cube_is_pow(walltime: float) -> None:
    assert _cube(walltime, _exact_cubes()) == walltime ** 3
    assert _cube(walltime, False) == walltime ** 3


def test_a_tie_between_a_narrow_job_and_the_wide_one_goes_to_queue_order() -> None:
    """Jobs 2 (2 nodes, walltime 1000) and 3 (8 nodes, walltime 50) are submitted at 10,
    the pass's time: both score 0, so queue order: 2 starts on the 2 free nodes, then 3
    is the head (shadow 100, extra 0). Were 3 put first, 2 would be a candidate running
    past the shadow on more than the extra nodes, and would wait."""
    _, view = _at_ten([spec(2, 10, 2, 1000, 1000), spec(3, 10, 8, 50, 50)])
    few = wfp2_easy_queue(view, list(view.queue), 8, 2)
    assert [j.id for j in few] == [2, 3]
    assert [d.job_id for d in easy_pass(view, "first", queue=few, state=view.free_state())
            if isinstance(d, Start)] == [2]


def test_easy_order_keeps_narrow_jobs_and_the_first_wide_one() -> None:
    """now = 16, 64 nodes, 8 free. Scores q^2 / w^3 x nodes / 64:
    1: q 16, w 4, 16 nodes -> 256/64 x 1/4 = 1.0 (wide)
    2: q 12, w 2, 8 nodes -> 144/8 x 1/8 = 2.25
    3: q 8, w 2, 32 nodes -> 64/8 x 1/2 = 4.0 (wide)
    4: q 8, w 4, 4 nodes -> 1 x 1/16 = 0.0625
    5: q 0 -> 0, 1 node
    Full order 3, 2, 1, 4, 5; kept: 3 (the first wide), 2, 4, 5."""
    jobs = [job(1, 0, 16, 4), job(2, 4, 8, 2), job(3, 8, 32, 2), job(4, 8, 4, 4),
            job(5, 16, 1, 1)]
    assert [j.id for j in wfp2_order(jobs, 16.0, 64)] == [3, 2, 1, 4, 5]
    assert [j.id for j in wfp2_easy_order(jobs, 16.0, 64, 8)] == [3, 2, 4, 5]
    assert [j.id for j in wfp2_easy_order(jobs, 16.0, 64, 32)] == [3, 2, 1, 4, 5]
    # Every job wide: the first of the order alone.
    assert [j.id for j in wfp2_easy_order(jobs, 16.0, 64, 0)] == [3]


def test_easy_order_ties_between_the_wide_job_and_narrow_ones() -> None:
    """Jobs submitted together with one walltime score in proportion to their nodes, and
    all score 0 at their submission: ties go to queue order, between the first wide job
    and the narrow ones too (2 nodes free)."""
    jobs = [job(1, 10, 4, 100), job(2, 10, 1, 100), job(3, 10, 4, 100), job(4, 10, 2, 100)]
    # At now = 10 every score is 0: queue order, the first wide job (1) before 2 and 4.
    assert [j.id for j in wfp2_easy_order(jobs, 10.0, 8, 2)] == [1, 2, 4]
    # Later: 1 and 3 (4 nodes) outrank 4 (2 nodes) outranks 2 (1 node).
    assert [j.id for j in wfp2_easy_order(jobs, 20.0, 8, 2)] == [1, 4, 2]
    # A narrow job first in the queue and tied with the wide one stays before it.
    jobs = [job(1, 10, 1, 100), job(2, 10, 4, 100), job(3, 10, 1, 100)]
    assert [j.id for j in wfp2_easy_order(jobs, 10.0, 8, 2)] == [1, 2, 3]


def test_an_unordered_queue_gets_the_whole_order() -> None:
    jobs = [job(2, 4, 8, 2), job(1, 0, 16, 4), job(5, 16, 1, 1)]
    assert wfp2_easy_order(jobs, 16.0, 64, 8) == wfp2_order(jobs, 16.0, 64)
    assert len(wfp2_easy_order(jobs, 16.0, 64, 8)) == 3


def test_a_narrow_head_after_a_start_and_what_can_backfill() -> None:
    """8 nodes. Job 1 (6 nodes, walltime 100) runs from 0; at 10, 2 nodes are free and the
    queue holds (scores q^2 / w^3 x nodes / 8):
      2: submit 1, 1 node, w 10 -> 81/1000 x 1/8 = 0.010125
      3: submit 2, 2 nodes, w 10 -> 64/1000 x 2/8 = 0.016
      4: submit 3, 8 nodes, w 50 -> 49/125000 x 1 = 0.000392 (wide)
      5: submit 4, 1 node, w 1000 -> 36/1e9 x 1/8 (runs past the shadow)
      6: submit 5, 1 node, w 20 -> 25/8000 x 1/8 = 0.000390625 (ends by the shadow)
    Order 3, 2, 4, 6, 5. Job 3 starts (2 nodes, none left); 2 is the head: its shadow is
    job 3's end, 20 (2 nodes free then), extra 1; nothing is left to backfill with no free
    node, so the queue the pass needs is 3, 2 and no candidate."""
    _, view = _at_ten([spec(2, 1, 1, 10, 10), spec(3, 2, 2, 10, 10), spec(4, 3, 8, 50, 50),
                       spec(5, 4, 1, 1000, 1000), spec(6, 5, 1, 20, 20)])
    few = wfp2_easy_queue(view, list(view.queue), 8, 2)
    assert [j.id for j in few] == [3, 2]
    assert [d.job_id for d in easy_pass(view, "first", queue=few, state=view.free_state())
            if isinstance(d, Start)] == [3]
    full = wfp2_order(view.queue, 10.0, 8)
    assert [j.id for j in full] == [3, 2, 4, 6, 5]
    assert easy_pass(view, "first", queue=full, state=view.free_state()) == \
        easy_pass(view, "first", queue=few, state=view.free_state())


def test_a_wide_head_and_the_candidates_kept() -> None:
    """The same machine with job 3 gone: at 10, 2 free; order 2, 4, 6, 5. Job 2 starts
    (1 node left); 4 (8 nodes) is the head, shadow 100 (job 1's end; job 2's end 20 frees
    its node before), extra 0. Candidates: 6 ends at 30 <= 100 (kept), 5 ends at 1010,
    past the shadow, on 1 node > extra 0 (left out)."""
    _, view = _at_ten([spec(2, 1, 1, 10, 10), spec(4, 3, 8, 50, 50),
                       spec(5, 4, 1, 1000, 1000), spec(6, 5, 1, 20, 20)])
    few = wfp2_easy_queue(view, list(view.queue), 8, 2)
    assert [j.id for j in few] == [2, 4, 6]
    starts = [d.job_id for d in easy_pass(view, "first", queue=few, state=view.free_state())
              if isinstance(d, Start)]
    assert starts == [2, 6]
    full = wfp2_order(view.queue, 10.0, 8)
    assert [j.id for j in full] == [2, 4, 6, 5]
    assert easy_pass(view, "first", queue=full, state=view.free_state()) == \
        easy_pass(view, "first", queue=few, state=view.free_state())


class Hold(Policy):
    """Starts job 1 at 0 and nothing else; wakes at 10 (the pass the tests look at)."""

    name = "hold"

    def schedule(self, view: View) -> list[Decision]:
        return [Start(1), WakeAt(10.0)] if view.now == 0 else []


def _at_ten(specs: list[JobSpec]) -> tuple[Engine, View]:
    """8 nodes; job 1 (6 nodes, walltime 100) runs from 0, the others wait; at 10."""
    c = parse_cluster("nodes:8")
    e = Engine(c, Hold(None, c))
    for s in (spec(1, 0, 6, 100, 100), *specs):
        e.submit(s)
    until(e, 10)
    assert e.now == 10.0 and e.jobs[1].state is JobState.RUNNING
    return e, View(e)


# ------------------------------------------------------------------------ random queues
WALLTIMES = [1.0, 2.0, 3.0, 60.0, 3600.0, 7200.5, 86400.0, 131071.0, 131072.0, 200000.0,
             1e7 + 0.5]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from([1, 2, 3, 16, 64, 512, 1024]),
                          st.sampled_from(WALLTIMES)), max_size=60),
       st.integers(0, 80), st.integers(0, 1100), st.booleans(), st.booleans(),
       st.randoms(use_true_random=False))
def test_easy_order_is_the_full_order_thinned(rows, later, free, fractional, swap, rng):
    """`wfp2_easy_order` against the key-function order: the jobs of at most `free` nodes
    and the first wider one, in that order; a queue out of order gets the whole order."""
    jobs = [job(i, submit + (0.25 if fractional else 0.0), nodes, walltime)
            for i, (submit, nodes, walltime) in enumerate(rows)]
    rng.shuffle(jobs)
    jobs.sort(key=lambda j: (j.submit, j.id))
    if swap and len(jobs) > 1 and jobs[0].submit != jobs[-1].submit:
        i = rng.randrange(len(jobs) - 1)
        jobs[i], jobs[i + 1] = jobs[i + 1], jobs[i]
    now = 40.0 + later
    full = wfp2_order_keyed(jobs, now, 1024)
    got = [j.id for j in wfp2_easy_order(jobs, now, 1024, free)]
    ordered = all((a.submit, a.id) < (b.submit, b.id) for a, b in zip(jobs, jobs[1:], strict=False))
    if not ordered:
        assert got == [j.id for j in full]
        return
    wide = [j for j in full if j.nodes > free][:1]
    assert got == [j.id for j in full if j.nodes <= free or j in wide]


# ---------------------------------------------------------------------- random runs
def workloads(nodes: int):  # noqa: ANN201
    walltimes = st.sampled_from([1.0, 5.0, 30.0, 60.0, 100.0, 600.5, 3600.0, 131072.0,
                                 200000.0])
    row = st.tuples(st.integers(0, 400), st.integers(1, nodes), st.floats(0.2, 1.0),
                    walltimes, st.booleans())
    return st.lists(row, min_size=1, max_size=80)


def specs_of(rows) -> list[JobSpec]:  # noqa: ANN001
    out = []
    for i, (submit, nodes, frac, walltime, exact) in enumerate(rows):
        runtime = walltime if exact else max(1.0, round(walltime * frac))
        out.append(spec(i + 1, float(submit), nodes, min(runtime, walltime), walltime))
    return sorted(out, key=lambda s: (s.submit, s.id))


@pytest.mark.parametrize("cluster", ["nodes:16", "nodes:64"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_pass_starts_the_same_jobs(cluster, data) -> None:
    """At every pass of a random run, EASY over `wfp2_easy_queue` and over the whole
    order decide the same."""
    c = parse_cluster(cluster)
    rows = data.draw(workloads(c.total_nodes))
    pol = BothQueues(EasyWfp2.Options(), c)
    run(pol, c, specs_of(rows))
    assert pol.passes >= 1


@pytest.mark.parametrize("cluster", ["nodes:16", "nodes:64"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_whole_runs_match_the_full_order(cluster, data) -> None:
    """easy-wfp2 as shipped against EASY over the whole order: every job starts and ends
    at the same time."""
    c = parse_cluster(cluster)
    specs = specs_of(data.draw(workloads(c.total_nodes)))
    opts = EasyWfp2.Options()
    fast = run(make_policy("easy-wfp2", [], c), c, specs)  # type: ignore[arg-type]
    slow = run(FullOrder(opts, c), c, specs)
    for name in ("first_start", "end", "final_state", "backfilled"):
        assert col(fast, name) == col(slow, name)


def test_a_deep_random_queue_thins_and_matches() -> None:
    """A queue hundreds deep on 64 nodes (most passes reduce the queue), every pass
    compared."""
    rng = random.Random(7)
    rows = [(rng.randrange(0, 2000), rng.choice([1, 1, 2, 4, 8, 16, 32, 64]),
             rng.uniform(0.2, 1.0), rng.choice([60.0, 600.0, 3600.0, 7200.0, 86400.0]),
             rng.random() < 0.3) for _ in range(600)]
    c = parse_cluster("nodes:64")
    pol = BothQueues(EasyWfp2.Options(), c)
    run(pol, c, specs_of(rows))
    assert pol.reduced > pol.passes // 2
