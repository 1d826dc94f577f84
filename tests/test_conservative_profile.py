"""Conservative backfilling's integer profile and its plan kept between passes (issue 35
item 5): the same breakpoints and reservations as the state-based plan rebuilt from scratch,
and the same decisions as planning every pass from scratch."""

from __future__ import annotations

import bisect

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.cluster import NodePool, PoolState
from schedd.core.engine import Engine
from schedd.core.job import JobSpec
from schedd.policies import make_policy
from schedd.policies.conservative import Conservative, PoolProfile

TOTAL = 16


def rebuilt(now: float, free_now: int, ends: list[tuple[float, int]],
            jobs: list[tuple[int, float]]) -> tuple[list[float], list[int], list[int | None]]:
    """The state-based plan (`Conservative._earliest` / `_reserve` on pool states) of
    `jobs` (nodes, walltime) in order: breakpoints, free nodes at each, reserved indices."""
    times = [now]
    states = [PoolState(TOTAL, free_now)]
    for end, nodes in ends:
        end = max(end, now)
        if end > times[-1]:
            times.append(end)
            states.append(states[-1].copy())
        states[-1].free += nodes
    starts: list[int | None] = []
    for nodes, walltime in jobs:
        found = Conservative._earliest(nodes, walltime, times, states)
        if found is None:
            starts.append(None)
            continue
        i, alloc = found
        starts.append(i)
        Conservative._reserve(times[i], times[i] + walltime, alloc, times, states)
    return times, [s.free for s in states], starts


def step(times: list[float], free: list[int], since: float) -> list[tuple[float, int]]:
    """The profile as a step function from `since` on: (time, free) at each change."""
    out: list[tuple[float, int]] = []
    for t, f in zip(times, free, strict=True):
        t = max(t, since)
        if out and out[-1][0] == t:
            out[-1] = (t, f)
        elif not out or out[-1][1] != f:
            out.append((t, f))
    return out


running = st.lists(st.tuples(st.integers(0, 40).map(float), st.integers(1, 6)), max_size=4)
waiting = st.lists(st.tuples(st.integers(0, TOTAL + 2), st.integers(1, 30).map(float)),
                   max_size=25)


@settings(max_examples=200, deadline=None)
@given(ends=running, jobs=waiting, now=st.integers(0, 10).map(float))
def test_profile_matches_the_state_based_plan(ends, jobs, now):
    ends = sorted(ends)
    free_now = TOTAL - sum(n for _, n in ends)
    if free_now < 0:
        return
    times, free, starts = rebuilt(now, free_now, ends, jobs)
    profile = PoolProfile.of_releases(now, free_now, ends)
    got: list[int | None] = []
    for nodes, walltime in jobs:
        i = profile.earliest(nodes, walltime)
        got.append(i)
        if i is not None:
            profile.reserve(i, profile.times[i] + walltime, nodes)
    assert got == starts
    assert profile.times == times and profile.free == free


@settings(max_examples=200, deadline=None)
@given(ends=running, jobs=waiting, later=st.integers(0, 60).map(float))
def test_advanced_profile_is_the_rebuilt_one_from_then_on(ends, jobs, later):
    """Kept up to date by reservations and then advanced to a later now, the profile is
    the step function rebuilt at that now from the running jobs and the reservations."""
    ends = sorted(ends)
    free_now = TOTAL - sum(n for _, n in ends)
    if free_now < 0:
        return
    profile = PoolProfile.of_releases(0.0, free_now, ends)
    held: list[tuple[float, float, int]] = []
    for nodes, walltime in jobs:
        i = profile.earliest(nodes, walltime)
        if i is not None:
            start = profile.times[i]
            profile.reserve(i, start + walltime, nodes)
            held.append((start, start + walltime, nodes))
    profile.advance(later)

    def rebuilt_at(t: float) -> int:
        return (free_now + sum(n for end, n in ends if end <= t)
                - sum(n for start, end, n in held if start <= t < end))

    def kept_at(t: float) -> int:
        return profile.free[bisect.bisect_right(profile.times, t) - 1]

    assert profile.times[0] == later
    assert profile.times == sorted(set(profile.times))
    points = {later, *profile.times, *(e for e, _ in ends), *(x for h in held for x in h[:2])}
    points = {t for p in points for t in (p, p + 0.5) if t >= later}
    assert all(kept_at(t) == rebuilt_at(t) for t in points)


def run(policy: Conservative, specs: list[JobSpec]) -> list[tuple[int, float]]:
    pool = policy.cluster
    engine = Engine(pool, policy)
    for spec in specs:
        engine.submit(spec)
    engine.run()
    res = engine.results.arrays()
    return sorted(zip(res["id"].tolist(), res["first_start"].tolist(), strict=True))


class FromScratch(Conservative):
    """Conservative planning every pass from scratch (the plan is never kept)."""

    def schedule(self, view):  # type: ignore[no-untyped-def]
        self._plan = None
        return super().schedule(view)


class StateBased(Conservative):
    """Conservative on pool states (the partition-cluster path), as before issue 35."""

    def schedule(self, view):  # type: ignore[no-untyped-def]
        from schedd.core.decisions import Decision, Start
        from schedd.policies.backfill import eligible_queue, releases

        decisions: list[Decision] = []
        now = view.now
        queue = eligible_queue(view, decisions)
        if not queue or view.free_nodes == 0:
            return decisions
        times = [now]
        states = [view.free_state()]
        for end, _, alloc in releases(view, []):
            end = max(end, now)
            if end > times[-1]:
                times.append(end)
                states.append(states[-1].copy())
            states[-1].release(alloc)
        for job in queue:
            if states[0].free_nodes == 0:
                break
            found = self._earliest(job.nodes, job.walltime, times, states)
            if found is None:
                continue
            start_i, alloc = found
            if start_i == 0:
                decisions.append(Start(job.id))
            self._reserve(times[start_i], times[start_i] + job.walltime, alloc, times, states)
        return decisions


specs_strategy = st.lists(
    st.tuples(st.integers(0, 200), st.integers(1, 80), st.integers(1, 12),
              st.floats(1.0, 3.0)),
    min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=specs_strategy)
def test_kept_plan_decides_as_planning_from_scratch(rows):
    """Runtimes below the walltime (early ends: re-plans) and equal to it (kept plans)."""
    specs = []
    for i, (submit, runtime, nodes, over) in enumerate(sorted(rows), start=1):
        walltime = float(runtime) if i % 3 else round(runtime * over)
        specs.append(JobSpec(i, float(submit), float(runtime), nodes, walltime))
    pool = NodePool(12)
    kept = Conservative(make_policy("conservative", [], pool).options, pool)
    got = run(kept, specs)
    assert got == run(FromScratch(kept.options, pool), specs)
    assert got == run(StateBased(kept.options, pool), specs)


def test_a_deep_queue_keeps_its_plan_between_passes():
    """Exact estimates: no job ends early, so after the first pass the plan is only ever
    extended (each job planned once), and decisions match the state-based pass."""
    specs = [JobSpec(i, float(i), 50.0 + (i * 37) % 200, 1 + (i * 5) % 8,
                     50.0 + (i * 37) % 200) for i in range(1, 301)]
    pool = NodePool(8)
    options = make_policy("conservative", [], pool).options
    kept = Conservative(options, pool)
    got = run(kept, specs)
    assert kept.replans == 1 and kept.kept > 100
    assert got == run(StateBased(options, pool), specs)


def unbounded(profile: PoolProfile, nodes: int, walltime: float, now_only: bool = False
              ) -> int | None:
    """`earliest` on a copy of the profile with no bounds recorded: the scan from now."""
    return PoolProfile(list(profile.times), list(profile.free)).earliest(nodes, walltime,
                                                                         now_only)


def test_bounds_by_hand():
    """8 nodes; free 2 until 10, 0 until 20, 8 from 20 on. 2 nodes for 5 s fit now (0);
    2 nodes for 15 s fit only at 20 (the window from 0 meets the empty step at 10), and
    once that is recorded a 2-node job for 15 s or more starts its search at 20. A job of
    2 nodes for 5 s still starts now (a shorter walltime: no bound), and 4 nodes for 15 s
    (more nodes: not bounded by the 2-node answers) at 20 as well."""
    profile = PoolProfile([0.0, 10.0, 20.0], [2, 0, 8])
    assert profile.earliest(2, 15.0) == 2
    assert profile.earliest(2, 5.0) == 0
    assert profile.earliest(2, 30.0) == 2
    assert profile.earliest(4, 15.0) == 2
    # Reserve 8 nodes from 20 to 40: a 2-node 15 s job is now at 40, found from 20 on.
    profile.reserve(2, 40.0, 8)
    assert profile.times == [0.0, 10.0, 20.0, 40.0] and profile.free == [2, 0, 0, 8]
    assert profile.earliest(2, 15.0) == 3
    assert profile.earliest(2, 5.0) == 0
    # Nothing fits 9 nodes: None, and None for anything as wide and longer.
    assert profile.earliest(9, 1.0) is None
    assert profile.earliest(9, 100.0) is None
    # advance forgets the bounds (a pass may find more nodes than the plan held).
    profile.advance(10.0)
    assert profile.times == [10.0, 20.0, 40.0] and profile.free == [0, 0, 8]
    profile.free[:] = [2, 2, 8]
    assert profile.earliest(2, 15.0) == 0


@settings(max_examples=300, deadline=None)
@given(ends=running,
       ops=st.lists(st.tuples(st.integers(0, TOTAL + 1), st.sampled_from([1.0, 2.0, 5.0, 7.5,
                                                                          10.0, 30.0]),
                              st.integers(0, 9)), max_size=40))
def test_bounded_search_is_the_search_from_now(ends, ops):
    """Random reservations with recurring (nodes, walltime) pairs, some searches for now
    only and some advances: every answer is the one a profile with no bounds gives."""
    ends = sorted(ends)
    free_now = TOTAL - sum(n for _, n in ends)
    if free_now < 0:
        return
    profile = PoolProfile.of_releases(0.0, free_now, ends)
    for nodes, walltime, what in ops:
        if what == 0:
            later = profile.times[-1] / 2
            if later > profile.times[0]:
                profile.advance(later)
            continue
        now_only = what == 1
        want = unbounded(profile, nodes, walltime, now_only)
        got = profile.earliest(nodes, walltime, now_only)
        assert got == want
        if got is not None and what % 2 == 0:
            profile.reserve(got, profile.times[got] + walltime, nodes)
