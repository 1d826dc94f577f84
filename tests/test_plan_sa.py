"""`plan-sa` (plan-based scheduling by simulated annealing): decoder, metrics, acceptance
rule, the incremental kernel against a naive reference, determinism, budgets, and the policy
inside the engine.

The reference annealer below decodes every candidate from scratch with a plain list of
(time, free) tuples and no early rejection; on integer data (exact sums) the compiled kernel
must choose exactly the same permutations.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedd.core.cluster import NodePool
from schedd.core.engine import Engine
from schedd.core.job import JobSpec
from schedd.core.validate import validate
from schedd.policies import make_policy, plan_kernel
from schedd.policies.plan_sa import METRICS, PlanOptions, PlanSA, Problem, draws, plan_cost

WAIT, WAIT2, UTIL = METRICS["wait"], METRICS["wait2"], METRICS["util"]


def problem(jobs: list[tuple[int, float, float]], profile: list[tuple[float, int]],
            metric: int, now: float = 0.0) -> Problem:
    """jobs: (nodes, walltime, submit); profile: (time, free nodes) from now on."""
    sizes = np.array([j[0] for j in jobs], dtype=np.int64)
    wall = np.array([j[1] for j in jobs], dtype=np.float64)
    submit = np.array([j[2] for j in jobs], dtype=np.float64)
    lower = np.maximum(now - submit, 0.0)
    if metric == WAIT2:
        lower = lower * lower
    elif metric == UTIL:
        lower = np.zeros(len(jobs))
    times = np.array([p[0] for p in profile], dtype=np.float64)
    return Problem([], sizes, wall, submit, lower, times,
                   np.array([p[1] for p in profile], dtype=np.int64),
                   base_cost=times[-1] if metric == UTIL else 0.0,
                   origin=now if metric == UTIL else 0.0)


# ---------------------------------------------------------------------- the reference
def naive_starts(order, p: Problem) -> dict[int, float]:
    """Each job at the earliest profile time where it fits for its whole walltime."""
    prof = [[float(t), int(f)] for t, f in zip(p.times, p.free, strict=True)]
    starts = {}
    for job in order:
        nodes, wall = int(p.sizes[job]), float(p.walltime[job])
        for k, (t, _) in enumerate(prof):
            # free nodes over [t, t + wall): the segments starting in it, and the one at t
            if all(f >= nodes for tt, f in prof[k:] if tt < t + wall):
                break
        else:
            raise AssertionError("the last segment always fits")
        end = t + wall
        if all(tt != end for tt, _ in prof):
            before = max(i for i, (tt, _) in enumerate(prof) if tt < end)
            prof.insert(before + 1, [end, prof[before][1]])
        for seg in prof:
            if t <= seg[0] < end:
                seg[1] -= nodes
        starts[job] = t
    return starts


def naive_cost(order, p: Problem, metric: int) -> float:
    starts = naive_starts(order, p)
    if metric == UTIL:
        return max([float(p.times[-1])] + [s + p.walltime[j] for j, s in starts.items()])
    waits = [s - p.submit[j] for j, s in starts.items()]
    return float(sum(w * w for w in waits) if metric == WAIT2 else sum(waits))


def reference_anneal(p: Problem, metric: int, options: PlanOptions, pass_no: int
                     ) -> tuple[list[int], float]:
    n = len(p.sizes)
    perm = list(range(n))
    cur = best_cost = naive_cost(perm, p, metric)
    best = perm[:]
    scale = cur - p.origin
    temps = []
    t = options.t0
    while t > options.tth:
        temps.append(t)
        t *= options.r
    total = len(temps) * options.n
    if options.evals:
        total = min(total, options.evals)
    moves_i, moves_j, log_u = draws(options.seed, pass_no, n, total)
    for e in range(total):
        cand = perm[:]
        cand.insert(int(moves_j[e]), cand.pop(int(moves_i[e])))
        cost = naive_cost(cand, p, metric)
        if cost <= cur - scale * temps[e // options.n] * log_u[e]:
            perm, cur = cand, cost
            if cost < best_cost:
                best, best_cost = perm[:], cost
    return best, best_cost


def run_search(p: Problem, metric_name: str, **opts) -> tuple[list[int], PlanSA]:
    policy = PlanSA(PlanOptions(metric=metric_name, **opts), NodePool(int(p.free[-1])))
    policy._counts["passes"] = 1  # as in the first pass
    best = policy.search(p)
    return best.tolist(), policy


# ---------------------------------------------------------------------- decoder
def test_decoder_on_a_hand_worked_profile() -> None:
    # 8 nodes: 2 free now, 5 from t=10, all 8 from t=20.
    p = problem([(4, 15.0, 0.0), (2, 5.0, 0.0), (3, 10.0, 0.0), (2, 3.0, 0.0)],
                [(0.0, 2), (10.0, 5), (20.0, 8)], WAIT)
    cost, starts = plan_cost([0, 1, 2, 3], p, WAIT)
    # A (4 x 15): not at 0 (2 free), at 10 (5 free, then 8) -> [10, 25), leaving 1 / 4 / 8.
    # B (2 x 5): at 0, the gap [0, 5) before t=10 -> 0 free until 5.
    # C (3 x 10): not at 0 (0), 5 (2), 10 (1); at 20 (4 free, 8 from 25) -> [20, 30).
    # D (2 x 3): at 5 (2 free over [5, 8), next breakpoint 10).
    assert starts.tolist() == [10.0, 0.0, 20.0, 5.0]
    assert cost == 35.0


def test_decoder_skips_past_a_shortage() -> None:
    # 4 free now, 1 over [5, 10), 4 after: a 3-node job of 10 s must wait for t=10; one of
    # 5 s fits exactly before the shortage (its end falls on the breakpoint).
    p = problem([(3, 10.0, 0.0), (3, 5.0, 0.0)], [(0.0, 4), (5.0, 1), (10.0, 4)], WAIT)
    assert plan_cost([0, 1], p, WAIT)[1].tolist() == [10.0, 0.0]
    assert plan_cost([1, 0], p, WAIT)[1].tolist() == [10.0, 0.0]


FIG1_JOBS = [(3, 2.0, 0.0), (3, 1.0, 0.0), (3, 2.0, 0.0), (2, 2.0, 0.0), (1, 4.0, 0.0)]


def test_paper_fig1_plan_beats_greedy_packing_on_makespan() -> None:
    """Fig. 1 in numbers: 8 idle nodes, five jobs (nodes, hours). The queue order fills the
    machine now (J1 + J2 + J4 = 8 nodes) and ends at 6 h; the plan leaves a node idle now
    and ends at 4 h, never using all 8 nodes at once."""
    p = problem(FIG1_JOBS, [(0.0, 8)], UTIL)
    greedy_cost, greedy = plan_cost(range(5), p, UTIL)
    assert greedy.tolist() == [0.0, 0.0, 1.0, 0.0, 2.0] and greedy_cost == 6.0
    best, _ = run_search(p, "util")
    cost, starts = plan_cost(best, p, UTIL)
    optimum = min(naive_cost(o, p, UTIL) for o in itertools.permutations(range(5)))
    assert cost == optimum == 4.0
    for t in starts:
        used = sum(FIG1_JOBS[j][0] for j in range(5)
                   if starts[j] <= t < starts[j] + FIG1_JOBS[j][1])
        assert used < 8


@st.composite
def problems(draw, max_jobs: int = 12):
    total = draw(st.integers(1, 16))
    running = draw(st.lists(st.tuples(st.integers(1, total), st.integers(1, 50)),
                            max_size=6))
    profile = [[0.0, total]]
    for nodes, end in sorted(running, key=lambda r: r[1]):
        if profile[0][1] < nodes:
            continue  # does not fit the machine any more
        profile[0][1] -= nodes
        for seg in profile[1:]:
            seg[1] -= nodes
        if float(end) != profile[-1][0]:
            profile.append([float(end), profile[-1][1]])
        profile[-1][1] += nodes
    jobs = draw(st.lists(st.tuples(st.integers(1, total), st.integers(1, 40).map(float),
                                   st.integers(-100, 0).map(float)),
                         min_size=1, max_size=max_jobs))
    return jobs, [(t, f) for t, f in profile]


@settings(max_examples=200, deadline=None)
@given(case=problems(), data=st.data())
def test_decoder_matches_the_naive_decoder_and_respects_capacity(case, data) -> None:
    jobs, profile = case
    p = problem(jobs, profile, WAIT)
    order = data.draw(st.permutations(range(len(jobs))))
    _, starts = plan_cost(order, p, WAIT)
    expected = naive_starts(order, p)
    assert {j: float(s) for j, s in enumerate(starts)} == expected
    # Capacity: at every start, running + planned jobs fit what the profile frees.
    for t in set(starts.tolist()):
        k = max(i for i, (tt, _) in enumerate(profile) if tt <= t)
        used = sum(jobs[j][0] for j in range(len(jobs))
                   if starts[j] <= t < starts[j] + jobs[j][1])
        assert used <= profile[k][1]


def test_metric_functions_on_a_hand_plan() -> None:
    # Two 2-node jobs on 2 nodes, free from t=100; submitted at 40 and 70.
    jobs = [(2, 50.0, 40.0), (2, 10.0, 70.0)]
    # The plan: job 0 over [100.5, 150.5), job 1 over [150.5, 160.5); waits 60.5 and 80.5.
    for metric, expected in ((WAIT, 141.0), (WAIT2, 60.5**2 + 80.5**2), (UTIL, 160.5)):
        p = problem(jobs, [(100.0, 0), (100.5, 2)], metric, now=100.0)
        cost, starts = plan_cost([0, 1], p, metric)
        assert starts.tolist() == [100.5, 150.5]
        assert cost == expected


# ---------------------------------------------------------------------- acceptance rule
@pytest.mark.parametrize(("u", "accepted"), [(0.30, True), (0.40, False)])
def test_metropolis_acceptance(u: float, accepted: bool) -> None:
    """Current cost 100 (= the scale), candidate 110, T = 0.1: accepted with probability
    exp(-(110 - 100) / (100 x 0.1)) = e^-1 = 0.368, i.e. for u = 0.30 and not for 0.40."""
    # Two 1-node jobs on 1 node, of 100 s and 110 s: order (0, 1) waits 0 + 100, the move
    # of job 0 after job 1 gives (1, 0), which waits 110 + 0.
    p2 = problem([(1, 100.0, 0.0), (1, 110.0, 0.0)], [(0.0, 1)], WAIT)
    perm = np.arange(2, dtype=np.int64)
    best = perm.copy()
    rows = 1
    snaps = (np.empty((2, rows, 4)), np.empty((2, rows, 4), dtype=np.int64),
             np.zeros((2, rows), dtype=np.int64), np.zeros((2, rows)), np.zeros((2, rows)))
    owner = np.zeros(rows, dtype=np.int64)
    cur = plan_kernel.init_snapshots(perm, p2.times, p2.free, 1, p2.sizes, p2.walltime,
                                     p2.submit, p2.lower, WAIT, 0.0, 8, *snaps, owner)
    assert cur == 100.0
    scalars = np.zeros(plan_kernel.N_SCALARS)
    scalars[plan_kernel.CUR_COST] = scalars[plan_kernel.BEST_COST] = cur
    plan_kernel.anneal(perm, best, p2.times, p2.free, 1, p2.sizes, p2.walltime, p2.submit,
                       p2.lower, 0.0, WAIT, 100.0, 8, np.array([0.1]), 1,
                       np.array([0], dtype=np.int64), np.array([1], dtype=np.int64),
                       np.array([math.log(u)]), 0, 1, *snaps, owner, scalars,
                       np.empty(4), np.empty(4, dtype=np.int64))
    assert (perm.tolist() == [1, 0]) is accepted
    assert scalars[plan_kernel.CUR_COST] == (110.0 if accepted else 100.0)
    assert best.tolist() == [0, 1]  # a worse plan is never the best so far
    assert scalars[plan_kernel.BEST_COST] == 100.0


# ---------------------------------------------------------------------- the kernel
@pytest.mark.parametrize("metric_name", list(METRICS))
@pytest.mark.parametrize("seed", range(4))
def test_incremental_kernel_makes_the_reference_annealers_choices(metric_name, seed) -> None:
    """Snapshots, convergence and early rejection change how fast, never what: on integer
    data the kernel's P_best and cost equal the naive annealer's."""
    # Few distinct job shapes: moves often swap look-alike jobs, so candidates converge
    # onto the current plan's profile while their prefix costs differ.
    rng = np.random.default_rng(seed)
    jobs = [(int(rng.choice([1, 2, 4])), float(rng.choice([10, 20, 30])),
             float(-rng.integers(0, 90))) for _ in range(40)]
    profile = [(0.0, 2), (5.0, 5), (17.0, 8)]
    metric = METRICS[metric_name]
    p = problem(jobs, profile, metric)
    options = PlanOptions(metric=metric_name, seed=seed, tth=0.01, n=40)
    expected, expected_cost = reference_anneal(p, metric, options, pass_no=1)
    best, policy = run_search(p, metric_name, seed=seed, tth=0.01, n=40)
    assert best == expected
    assert policy.last is not None and policy.last.best_cost == expected_cost
    assert plan_cost(best, p, metric)[0] == expected_cost
    stats = policy.stats()
    assert stats["aborted_decodes"] > 0
    if metric != UTIL:
        assert stats["converged_decodes"] > 0


@pytest.mark.parametrize("seed", range(10))
def test_search_finds_the_optimum_of_small_queues(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    jobs = [(int(rng.integers(1, 6)), float(rng.integers(1, 20)), 0.0) for _ in range(6)]
    for name, metric in METRICS.items():
        p = problem(jobs, [(0.0, 3), (7.0, 6)], metric)
        best, _ = run_search(p, name, seed=seed)
        optimum = min(naive_cost(o, p, metric) for o in itertools.permutations(range(6)))
        assert naive_cost(best, p, metric) == optimum


def test_best_plan_is_never_worse_than_the_queue_order() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        jobs = [(int(rng.integers(1, 64)), float(rng.uniform(60, 9000)),
                 float(-rng.uniform(0, 5000))) for _ in range(n)]
        for name, metric in METRICS.items():
            p = problem(jobs, [(0.0, 10), (300.5, 40), (4000.25, 64)], metric)
            best, policy = run_search(p, name, evals=300)
            assert policy.last is not None
            assert policy.last.best_cost <= policy.last.initial_cost
            assert plan_cost(best, p, metric)[0] == pytest.approx(policy.last.best_cost,
                                                                  rel=1e-12)


# ---------------------------------------------------------------------- budget
class FakeClock:
    """Wall time that advances 1 ms per evaluation the kernel runs."""

    def __init__(self, monkeypatch) -> None:
        self.now = 0.0
        real = plan_kernel.anneal

        def anneal(*args):
            begin, end = args[18], args[19]
            real(*args)
            self.now += 0.001 * (end - begin)

        monkeypatch.setattr(plan_kernel, "anneal", anneal)
        monkeypatch.setattr("schedd.policies.plan_sa.time.perf_counter", lambda: self.now)


def deep_problem(n: int = 200) -> Problem:
    rng = np.random.default_rng(3)
    jobs = [(int(rng.integers(1, 64)), float(rng.uniform(60, 9000)), 0.0) for _ in range(n)]
    return problem(jobs, [(0.0, 8), (100.0, 30), (2000.0, 64)], WAIT2)


@pytest.mark.parametrize("own_budget", [0.0, 0.05])
def test_clock_budget_stops_within_one_evaluation(monkeypatch, own_budget: float) -> None:
    policy = PlanSA(PlanOptions(budget=own_budget), NodePool(64))
    clock = FakeClock(monkeypatch)  # after the constructor's warm-up
    deadline = 0.08  # the daemon's pass budget (after its margin)
    policy.bind_budget(lambda: clock.now >= deadline, lambda: deadline - clock.now)
    policy._counts["passes"] = 1
    policy.search(deep_problem())
    assert policy.last is not None and not policy.last.finished
    limit = min(deadline, own_budget or math.inf)
    # 1 ms per evaluation: no more evaluations than the budget holds, plus at most one.
    assert limit * 1000 <= policy.last.evaluations <= limit * 1000 + 1
    assert policy.stats()["budget_stops"] == 1
    assert policy.last.best_cost <= policy.last.initial_cost


def test_without_a_clock_the_search_is_bounded_by_evaluations() -> None:
    p = deep_problem(60)
    _, full = run_search(p, "wait2")
    assert full.last is not None and full.last.evaluations == 8800  # 88 temperatures x 100
    _, capped = run_search(p, "wait2", evals=500)
    assert capped.last is not None and capped.last.evaluations == 500
    assert capped.stats()["budget_stops"] == 0


# ---------------------------------------------------------------------- in the engine
def _engine(policy_opts: list[str], specs: list[JobSpec], nodes: int = 16) -> Engine:
    cluster = NodePool(nodes)
    engine = Engine(cluster, make_policy("plan-sa", policy_opts, cluster))
    engine.feed(specs)
    return engine


def test_fig1_in_the_engine_ends_two_hours_earlier_than_easy() -> None:
    specs = [JobSpec(i + 1, 0.0, h * 3600, n, h * 3600) for i, (n, h, _) in enumerate(FIG1_JOBS)]
    ends = {}
    for name, opts in (("easy", []), ("plan-sa", ["metric=util"])):
        cluster = NodePool(8)
        engine = Engine(cluster, make_policy(name, opts, cluster))
        engine.feed(specs)
        engine.run()
        ends[name] = float(engine.results.column("end").max())
    assert ends == {"easy": 6 * 3600.0, "plan-sa": 4 * 3600.0}


def test_policy_starts_what_the_plan_starts_now_and_is_deterministic() -> None:
    rng = np.random.default_rng(11)
    specs = [JobSpec(i + 1, float(i * 30), float(rng.integers(60, 3000)),
                     int(rng.integers(1, 12)), float(rng.integers(3000, 6000)))
             for i in range(60)]
    runs = []
    for _ in range(2):
        engine = _engine(["metric=wait2", "seed=5", "evals=400"], specs)
        while engine.step():
            validate(engine)
        runs.append(engine.results.arrays())
    for name in runs[0]:
        assert np.array_equal(runs[0][name], runs[1][name])
    other = _engine(["metric=wait2", "seed=6", "evals=400"], specs)
    other.run()
    assert len(other.results) == 60


def test_bad_options_are_refused_with_a_sentence() -> None:
    from schedd.policies import PolicyError

    for opts, text in ((["r=1.5"], "between 0 and 1"), (["tth=2"], "t0 > tth > 0"),
                       (["metric=fast"], "must be one of"), (["n=0"], "at least 1")):
        with pytest.raises(PolicyError, match=text):
            make_policy("plan-sa", opts, NodePool(4))


# ---------------------------------------------------------------------- end to end
def _simulate_cli(tmp_path, name: str, trace, env_extra: dict[str, str]) -> bytes:
    import os
    import subprocess
    import sys

    out = tmp_path / name
    env = dict(os.environ, **env_extra)
    subprocess.run([sys.executable, "-m", "schedd", "simulate", "--trace", str(trace),
                    "--policy", "plan-sa", "--opt", "metric=wait2", "--opt", "evals=60",
                    "--opt", "seed=3", "--out", str(out), "--no-progress"],
                   check=True, capture_output=True, text=True, env=env)
    return (out / "jobs.swf").read_bytes() + (out / "summary.json").read_bytes()


def test_cli_runs_are_byte_identical_compiled_or_interpreted(tmp_path) -> None:
    """Same trace, options and seed: identical outputs, twice compiled and once with
    numba's JIT off (the kernel then runs as Python)."""
    from importlib.resources import files

    lines = files("schedd.data").joinpath("sample-lublin256-1000.swf").read_text().splitlines()
    jobs = [line for line in lines if line.strip() and not line.startswith(";")][:150]
    trace = tmp_path / "excerpt.swf"
    trace.write_text("; MaxNodes: 256\n" + "\n".join(jobs) + "\n")
    first = _simulate_cli(tmp_path, "a", trace, {})
    assert first == _simulate_cli(tmp_path, "b", trace, {})
    assert first == _simulate_cli(tmp_path, "c", trace, {"NUMBA_DISABLE_JIT": "1"})
    import json

    stats = json.loads((tmp_path / "a" / "summary.json").read_text())["policy_stats"]
    assert stats["searches"] > 50 and stats["improved_passes"] > 0  # it did search


def test_partition_miss_bars_the_job_and_the_nodes_go_to_the_next() -> None:
    """bgq:4 with 512-node jobs on M00 and M02: 1,024 nodes are free but no 1,024-node
    partition is. The best node-count plan starts the 10 s, 1,024-node job A now (B would
    wait 10 s instead of A waiting 5,000 s); the machine cannot
    place it, so the plan is decoded again with A barred from now and the 512-node job B
    behind it starts instead."""
    from schedd.core.cluster_spec import parse_cluster
    from schedd.core.decisions import Start
    from schedd.core.view import View

    cluster = parse_cluster("bgq:4")
    engine = Engine(cluster)
    for job_id in (1, 2):
        engine.submit(JobSpec(job_id, 0.0, 9000.0, 512, 9000.0))
    engine.run(until=0.0)  # no policy yet: both wait
    for job_id, block in ((1, 0), (2, 2)):
        engine.apply(Start(job_id, block=block))
    engine.submit(JobSpec(3, 0.0, 10.0, 1024, 10.0))  # A: short, so the best plan runs it first
    engine.submit(JobSpec(4, 0.0, 5000.0, 512, 5000.0))  # B
    engine.run(until=0.0)
    policy = make_policy("plan-sa", ["metric=wait"], cluster)
    decisions = policy.schedule(View(engine))
    assert [(d.job_id, cluster.block_name(d.block)) for d in decisions] == [(4, "M01")]
    assert policy.stats()["partition_misses"] == 1
