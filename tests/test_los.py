"""The twelve schedulers of Table III of the LOS paper (schedd/policies/los.py; Kumar, Shae &
Jamjoom, /work/shared/papers/los-delayed-hybrid-elastic.md, Section III, Algorithms 1-3).

Hand-worked cases in the engine: the paper's Fig. 2 (7, 4, 6 on 10 processors, also in
32-node units), Delayed-LOS's skip counts (Algorithm 1 lines 3-11), LOS's reservation
(Reservation_DP refuses a job that outlasts the freeze time beyond the freeze capacity),
dedicated jobs starting exactly at their requested start (or at the first release after
which they fit when running jobs hold their nodes), and the ECC processor (applied FCFS by
the -E schedulers and EASY, refused and logged by the others). Property tests: dedicated
jobs known in advance that fit together always start on time; on batch workloads the -D
names equal their batch names, Hybrid-LOS equals Delayed-LOS, and every -E name equals its
base name without ECCs; C_s = 0 makes Delayed-LOS LOS; allocation units never change an
exact schedule nor let a selection exceed the free nodes. Last, the CLI end to end on a
generated Lublin workload with dedicated jobs and ECCs.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.checkpoint import CheckpointPolicy
from schedd.core.cluster_spec import parse_cluster
from schedd.core.engine import Ecc, Engine, EngineOptions
from schedd.core.job import JobClass, JobSpec
from schedd.core.results import CLASS_CODES
from schedd.core.validate import validate
from schedd.metrics import summarize
from schedd.policies import POLICIES, make_policy
from schedd.policies.base import PolicyError
from schedd.policies.los import TABLE_III, EasyE

NO_OVERHEADS = EngineOptions(checkpoint=CheckpointPolicy(periodic="none"))
SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

POOL_ONLY = sorted(cls.name for cls in TABLE_III if cls is not EasyE)
WITH_CS = {"delayed-los", "hybrid-los", "delayed-los-e", "hybrid-los-e"}
WITH_UNIT = {"los", "los-d", "los-e", "los-de"} | WITH_CS
DEDICATED_NAMES = ["easy-d", "los-d", "hybrid-los", "easy-de", "los-de", "hybrid-los-e"]
ECC_NAMES = ["easy", "easy-e", "easy-de", "los-e", "los-de", "delayed-los-e", "hybrid-los-e"]
NO_ECC_NAMES = ["easy-d", "los", "los-d", "delayed-los", "hybrid-los"]


# ---------------------------------------------------------------------- driving
def new_engine(name: str, specs: Sequence[JobSpec], cluster: str = "nodes:10",
               opts: Sequence[str] = (), options: EngineOptions = NO_OVERHEADS) -> Engine:
    machine = parse_cluster(cluster)
    engine = Engine(machine, make_policy(name, list(opts), machine), options=options)
    engine.feed(sorted(specs, key=lambda s: (s.submit, s.id)))
    return engine


def finish(engine: Engine) -> Engine:
    validate(engine)
    while engine.step():
        validate(engine)
    return engine


def simulate(name: str, specs: Sequence[JobSpec], cluster: str = "nodes:10",
             opts: Sequence[str] = (), eccs: Sequence[Ecc] = (),
             options: EngineOptions = NO_OVERHEADS) -> Engine:
    engine = new_engine(name, specs, cluster, opts, options)
    for ecc in eccs:
        engine.elastic(ecc)
    return finish(engine)


def column(engine: Engine, name: str) -> dict[int, float]:
    r = engine.results.arrays()
    return dict(zip(r["id"].tolist(), r[name].tolist(), strict=True))


def starts(engine: Engine) -> dict[int, float]:
    return column(engine, "first_start")


def ends(engine: Engine) -> dict[int, float]:
    return column(engine, "end")


def same_results(a: Engine, b: Engine) -> None:
    ra, rb = a.results.arrays(), b.results.arrays()
    assert len(ra["id"]) == len(rb["id"])
    for name in ra:
        assert np.array_equal(ra[name], rb[name]), f"column {name} differs"


def batch(job_id: int, submit: float, nodes: int, runtime: float,
          walltime: float | None = None) -> JobSpec:
    return JobSpec(job_id, submit, runtime, nodes, runtime if walltime is None else walltime)


def dedicated(job_id: int, submit: float, nodes: int, runtime: float, requested_start: float,
              walltime: float | None = None) -> JobSpec:
    return JobSpec(job_id, submit, runtime, nodes, runtime if walltime is None else walltime,
                   job_class=JobClass.DEDICATED, requested_start=requested_start)


def with_unit(name: str, unit: int) -> list[str]:
    return [f"unit={unit}"] if name in WITH_UNIT else []


# ---------------------------------------------------------------------- workloads
@st.composite
def workloads(draw, total: int, multiple: int = 1, p_dedicated: float = 0.0,
              max_jobs: int = 30) -> list[JobSpec]:
    """1-30 jobs sorted by submit (ties common); sizes are multiples of `multiple`; about
    `p_dedicated` of them dedicated with a requested start ahead; some killed at walltime."""
    n = draw(st.integers(1, max_jobs), label="jobs")
    top = total // multiple
    t = 0.0
    specs = []
    for job_id in range(1, n + 1):
        t += draw(st.sampled_from([0, 0, 1, 30, 200, 900, 3600]), label="gap")
        nodes = multiple * draw(st.one_of(st.integers(1, max(1, top // 4)),
                                          st.integers(1, top)), label="nodes")
        runtime = float(draw(st.integers(1, 5000), label="runtime"))
        walltime = draw(st.one_of(st.just(runtime), st.integers(1, 8000).map(float)),
                        label="walltime")
        if p_dedicated and draw(st.floats(0, 1), label="class") < p_dedicated:
            rs = t + draw(st.integers(0, 5000), label="rs")
            specs.append(dedicated(job_id, t, nodes, runtime, rs, walltime))
        else:
            specs.append(batch(job_id, t, nodes, runtime, walltime))
    return specs


# ---------------------------------------------------------------------- Fig. 2
@pytest.mark.parametrize(("cluster", "scale", "unit"), [("nodes:10", 1, 1),
                                                        ("nodes:320", 32, 32)])
@pytest.mark.parametrize(("name", "started", "used"), [
    ("easy", {1}, 7), ("easy-d", {1}, 7), ("los", {1}, 7), ("los-d", {1}, 7),
    ("delayed-los", {2, 3}, 10), ("hybrid-los", {2, 3}, 10),
])
def test_fig2_los_starts_the_head_delayed_los_packs_the_rear_two(
        name: str, started: set[int], used: int, cluster: str, scale: int, unit: int) -> None:
    """Jobs of 7, 4 and 6 processors arrive at t=0 on an empty 10-processor machine: LOS
    (like EASY) starts the head, utilisation 7; Delayed-LOS's Basic_DP takes 4 + 6 = 10
    and counts one skip for the head (Algorithm 1 lines 6-11)."""
    specs = [batch(1, 0, 7 * scale, 100), batch(2, 0, 4 * scale, 100),
             batch(3, 0, 6 * scale, 100)]
    engine = new_engine(name, specs, cluster, with_unit(name, unit))
    engine.step()
    validate(engine)
    assert engine.now == 0
    assert set(engine.running) == started
    assert engine.state.free_nodes == (10 - used) * scale
    policy = engine.policy
    if name in WITH_CS:
        assert policy.scount == {1: 1}
        assert policy.stats()["head_skips"] == 1 and policy.stats()["basic_dp"] == 1
    elif name != "easy":
        assert policy.scount.get(1, 0) == 0 and policy.stats()["head_skips"] == 0


# ---------------------------------------------------------------------- after the head
@pytest.mark.parametrize(("name", "opts"), [("los", []), ("delayed-los", ["cs=0"])])
def test_after_head_wait_leaves_the_rest_of_the_machine_until_the_next_event(
        name: str, opts: list[str]) -> None:
    """10 nodes, at t=0 jobs of 4, 3 and 2 nodes (100 s each) and at t=50 one of 1 node.
    LOS starts the head whenever it fits (Delayed-LOS too once scount >= C_s; C_s = 0 here):
    by default the pass goes on with the next head, so all three start at 0. Read literally
    (Algorithm 1 lines 3-5 end the cycle, `after_head=wait`), one head starts per event:
    the 4 at t=0; the 3 at t=50 (the arrival is the next event); the 2 at t=100 when the 4
    ends; the 1 at t=150 when the 3 ends, although a node was free all along."""
    specs = [batch(1, 0, 4, 100), batch(2, 0, 3, 100), batch(3, 0, 2, 100),
             batch(4, 50, 1, 10)]
    assert starts(simulate(name, specs, opts=opts)) == {1: 0, 2: 0, 3: 0, 4: 50}
    literal = simulate(name, specs, opts=[*opts, "after_head=wait"])
    assert starts(literal) == {1: 0, 2: 50, 3: 100, 4: 150}


# ---------------------------------------------------------------------- skip counts
def skip_stream(rounds: int) -> list[JobSpec]:
    """A 7-node head (id 1) on 10 nodes, and every 100 s a fresh pair of 4 + 5 nodes that
    Basic_DP prefers to it (9 > 7); each pair ends exactly when the next arrives."""
    specs = [batch(1, 0, 7, 1000)]
    for r in range(rounds):
        specs += [batch(10 + 2 * r, 100 * r, 4, 100), batch(11 + 2 * r, 100 * r, 5, 100)]
    return specs


@pytest.mark.parametrize("cs", [0, 1, 2, 4])
def test_head_is_skipped_exactly_cs_times_then_starts(cs: int) -> None:
    """With C_s = cs the head fits in the passes at 0, 100, ... and is skipped there
    (scount += 1); the wake-up passes at 50, 150, ... find 1 node free, the head does not
    fit and its count stays (Algorithm 1 only counts lines 6-11). After cs skips the head
    starts in the first pass where it fits (lines 3-5). cs = 0 starts it at once, as LOS."""
    rounds = 6
    engine = new_engine("delayed-los", skip_stream(rounds), opts=[f"cs={cs}"])
    for r in range(rounds):
        engine.wake_at(100 * r + 50)
    policy = engine.policy
    seen = []
    while 1 not in engine.running:
        passes = engine.stats["passes"]
        assert engine.step()
        validate(engine)
        assert engine.stats["passes"] > passes
        seen.append((engine.now, policy.scount.get(1, 0)))
        if engine.now % 100 == 50:  # the head did not fit in this pass
            assert engine.state.free_nodes < 7
    assert engine.now == 100 * cs
    # Skipped at 0, 100, ..., 100 (cs - 1); unchanged at the wake-ups in between.
    expected = [(100.0 * r, r + 1) for r in range(cs)]
    expected = sorted(expected + [(100.0 * r + 50, r + 1) for r in range(cs)])
    assert seen[:-1] == expected
    assert policy.stats()["cs_starts"] == 1
    finish(engine)
    assert starts(engine)[1] == 100 * cs
    assert starts(simulate("los", skip_stream(rounds)))[1] == 0  # LOS never skips it


def test_a_head_chosen_by_basic_dp_is_not_counted() -> None:
    """Fig. 2, then at t=100 (the 4 and the 6 end) a 3-node job arrives: Basic_DP takes
    7 + 3 = 10, the head starts with its one skip from t=0, and not by the threshold."""
    specs = [batch(1, 0, 7, 500), batch(2, 0, 4, 100), batch(3, 0, 6, 100), batch(4, 100, 3, 50)]
    engine = simulate("delayed-los", specs)
    assert starts(engine) == {1: 100, 2: 0, 3: 0, 4: 100}
    stats = engine.policy.stats()
    assert stats["head_skips"] == 1 and stats["cs_starts"] == 0


def test_hybrid_los_counts_a_skip_in_every_pass_before_a_dedicated_start() -> None:
    """Algorithm 2 lines 22 and 30: with a dedicated job waiting, a head that Reservation_DP
    does not select is counted even when it does not fit; Delayed-LOS (Algorithm 1) does
    not count a head that does not fit."""
    specs = [batch(1, 0, 8, 1000), dedicated(2, 0, 2, 100, 5000), batch(3, 1, 5, 100)]
    counts = {}
    for name in ("hybrid-los", "delayed-los"):
        engine = new_engine(name, specs)
        for t in (10, 20):
            engine.wake_at(t)
        engine.run(until=20)
        validate(engine)
        counts[name] = engine.policy.scount.get(3, 0)
        assert set(engine.running) == {1}
    assert counts == {"hybrid-los": 3, "delayed-los": 0}  # passes at 1, 10 and 20


# ---------------------------------------------------------------------- LOS's reservation
@pytest.mark.parametrize("name", ["los", "los-e", "los-d", "easy"])
@pytest.mark.parametrize(("x_nodes", "y_walltime"), [(3, 50), (3, 99), (3, 100), (1, 50)])
def test_reservation_dp_keeps_the_freeze_capacity(name: str, x_nodes: int,
                                                  y_walltime: float) -> None:
    """10 nodes: job 1 (5 nodes, ends at 100) and job 2 (1 node, ends at 1000) start; the
    head, job 3 (8 nodes), is blocked: freeze at 100 with 1 node spare. Job 4 (3 nodes,
    500 s) would outlast the freeze and exceed its capacity: refused, though it fits now
    and comes first (with 1 node it fits the spare and starts). Job 5 (3 nodes) starts if
    it ends before the freeze; LOS counts one ending exactly then as still running
    (Algorithm 1 line 16), EASY lets it end by the shadow time. The head starts at 100."""
    specs = [batch(1, 0, 5, 100), batch(2, 0, 1, 1000), batch(3, 0, 8, 200),
             batch(4, 0, x_nodes, 500), batch(5, 0, 3, y_walltime)]
    engine = simulate(name, specs)
    start = starts(engine)
    assert start[1] == start[2] == 0
    assert start[3] == 100
    assert (start[4] == 0) == (x_nodes == 1)
    if x_nodes == 3:
        assert start[4] == 300  # after the head
    ends_before_freeze = y_walltime < 100 or (name == "easy" and y_walltime == 100)
    assert (start[5] == 0) == ends_before_freeze
    if name != "easy":
        assert engine.policy.stats()["reservation_dp"] >= 1


# ---------------------------------------------------------------------- dedicated jobs
def guard_case() -> list[JobSpec]:
    """10 nodes. Dedicated job 1: 6 nodes at t=100 for 50 s. Batch jobs at t=0: job 2
    (6 nodes, 200 s) would take its nodes; job 3 (4 nodes, 300 s) runs past 100 on the
    4 nodes spare then; job 4 (5 nodes, 80 s) ends before 100."""
    return [dedicated(1, 0, 6, 50, 100), batch(2, 0, 6, 200), batch(3, 0, 4, 300),
            batch(4, 0, 5, 80)]


@pytest.mark.parametrize("name", DEDICATED_NAMES)
def test_dedicated_job_starts_at_its_requested_start(name: str) -> None:
    engine = simulate(name, guard_case())
    start = starts(engine)
    assert start[1] == 100 and column(engine, "start_delay")[1] == 0
    assert start[3] == 0 and start[4] == 0  # spare at 100, or done by 100
    assert start[2] >= 150  # held back until the dedicated job is over
    assert engine.policy.stats()["dedicated_moved"] == 1


@pytest.mark.parametrize("name", ["easy", "los", "delayed-los"])
def test_batch_schedulers_let_batch_jobs_take_a_dedicated_jobs_nodes(name: str) -> None:
    """The contrast: without a dedicated queue job 2 starts at 0 and the dedicated job
    waits for it (Table III's batch names)."""
    engine = simulate(name, guard_case())
    assert starts(engine)[2] == 0
    assert starts(engine)[1] == 200 and column(engine, "start_delay")[1] == 100


@pytest.mark.parametrize("name", DEDICATED_NAMES)
def test_dedicated_job_is_late_only_when_running_jobs_hold_its_nodes(name: str) -> None:
    """Jobs 1 (4 nodes, to 200) and 2 (4 nodes, to 300) run when dedicated job 3 (5 nodes
    at 100) is submitted: it starts at 200, the first release after which it fits, and the
    results and the summary report 100 s of delay."""
    specs = [batch(1, 0, 4, 200), batch(2, 0, 4, 300), dedicated(3, 10, 5, 50, 100)]
    engine = simulate(name, specs)
    assert starts(engine)[3] == 200
    r = engine.results.arrays()
    delay = column(engine, "start_delay")
    assert delay == {1: 0, 2: 0, 3: 100}
    assert CLASS_CODES[r["job_class"][r["id"].tolist().index(3)]] == "D"
    summary = summarize(r, total_nodes=10)["dedicated"]
    assert summary["jobs"] == summary["started"] == summary["delayed"] == 1
    assert summary["mean_delay_s"] == summary["max_delay_s"] == 100


@pytest.mark.parametrize("name", DEDICATED_NAMES)
def test_a_late_dedicated_job_holds_back_only_jobs_that_would_outlast_its_real_start(
        name: str) -> None:
    """Dedicated job 3 (5 nodes at 100) cannot start before 200, when job 1's nodes come
    back. Job 4 (2 nodes, 20 to 170) ends before then, so it may run on the 2 idle nodes
    (Algorithm 2 lines 24-26 move the freeze to the release); job 5 (2 nodes, 20 to 220)
    would outlast 200 and take nodes job 3 needs, so it waits until job 3 is done."""
    specs = [batch(1, 0, 4, 200), batch(2, 0, 4, 300), dedicated(3, 10, 5, 50, 100),
             batch(4, 20, 2, 150), batch(5, 20, 2, 200)]
    s = starts(simulate(name, specs))
    assert s[3] == 200 and s[4] == 20
    assert s[5] >= 250


@st.composite
def known_dedicated_workloads(draw) -> tuple[int, list[JobSpec]]:
    """Dedicated jobs all submitted at t=0 (before any batch job) with requested starts
    ahead, whose reserved intervals [start, start + walltime) never need more than the
    machine together; then batch jobs from t=0 on (runtimes may differ from walltimes)."""
    total = draw(st.sampled_from([4, 10, 16]), label="nodes")
    reserved: list[tuple[float, float, int]] = []
    specs = []
    for job_id in range(1, draw(st.integers(1, 5), label="dedicated") + 1):
        start = float(draw(st.integers(1, 3000), label="rs"))
        walltime = float(draw(st.integers(1, 1500), label="walltime"))
        nodes = draw(st.integers(1, total), label="nodes")
        trial = [*reserved, (start, start + walltime, nodes)]
        peak = max(sum(n for s, e, n in trial if s <= t < e) for t, _, _ in trial)
        if peak > total:
            continue
        reserved = trial
        runtime = draw(st.one_of(st.just(walltime), st.integers(1, 2000).map(float)),
                       label="runtime")
        specs.append(dedicated(job_id, 0, nodes, runtime, start, walltime))
    t = 0.0
    for job_id in range(100, 100 + draw(st.integers(0, 25), label="batch")):
        t += draw(st.sampled_from([0, 0, 1, 50, 300, 900]), label="gap")
        walltime = float(draw(st.integers(1, 3000), label="walltime"))
        runtime = draw(st.one_of(st.just(walltime), st.integers(1, 3000).map(float)),
                       label="runtime")
        specs.append(batch(job_id, t, draw(st.integers(1, total), label="nodes"), runtime,
                           walltime))
    return total, specs


@pytest.mark.parametrize("name", ["easy-d", "los-d", "hybrid-los"])
def test_dedicated_jobs_known_in_advance_that_fit_together_start_on_time(name: str) -> None:
    """Nothing runs when the dedicated jobs are submitted and they never need more than
    the machine together: every batch job is started around them, so each starts exactly
    at its requested start, whatever the batch jobs' sizes, walltimes and runtimes."""

    @SETTINGS
    @given(case=known_dedicated_workloads())
    def check(case: tuple[int, list[JobSpec]]) -> None:
        total, specs = case
        engine = simulate(name, specs, f"nodes:{total}", with_unit(name, 1))
        assert len(engine.results) == len(specs)
        start = starts(engine)
        late = {s.id: (s.requested_start, start[s.id]) for s in specs
                if s.requested_start >= 0 and start[s.id] != s.requested_start}
        assert not late, f"dedicated jobs (requested, started): {late}"

    check()


# ---------------------------------------------------------------------- equivalences
@pytest.mark.parametrize(("base", "variant", "p_dedicated"), [
    ("easy", "easy-d", 0.0), ("los", "los-d", 0.0), ("delayed-los", "hybrid-los", 0.0),
    ("los-e", "los-de", 0.0), ("delayed-los-e", "hybrid-los-e", 0.0),
    ("easy", "easy-e", 0.3),
    ("easy-d", "easy-de", 0.3), ("los", "los-e", 0.3), ("los-d", "los-de", 0.3),
    ("delayed-los", "delayed-los-e", 0.3), ("hybrid-los", "hybrid-los-e", 0.3),
])
def test_equivalent_names_give_identical_results(base: str, variant: str,
                                                 p_dedicated: float) -> None:
    """Without dedicated jobs a dedicated queue changes nothing (the -D names, Hybrid-LOS
    vs Delayed-LOS at the same C_s); without ECCs the ECC processor changes nothing (the
    -E names, with dedicated jobs too)."""

    @SETTINGS
    @given(total=st.sampled_from([8, 10, 64]), data=st.data(), cs=st.integers(0, 4))
    def check(total: int, data, cs: int) -> None:
        specs = data.draw(workloads(total, p_dedicated=p_dedicated))
        runs = [simulate(name, specs, f"nodes:{total}",
                         [f"cs={cs}"] if name in WITH_CS else [])
                for name in (base, variant)]
        assert len(runs[0].results) == len(specs)
        same_results(*runs)

    check()


@pytest.mark.parametrize(("delayed", "plain"), [("delayed-los", "los"),
                                                ("hybrid-los", "los-d"),
                                                ("hybrid-los-e", "los-de")])
def test_cs_zero_makes_delayed_los_los(delayed: str, plain: str) -> None:
    """C_s = 0: the head never waits for Basic_DP (Algorithm 1 lines 3-5 from the start)
    and a due dedicated job gets scount = 0 = C_s: the schedule of LOS (with the same
    dedicated queue)."""

    @SETTINGS
    @given(specs=workloads(10, p_dedicated=0.25))
    def check(specs: list[JobSpec]) -> None:
        same_results(simulate(delayed, specs, opts=["cs=0"]), simulate(plain, specs))

    check()


# ---------------------------------------------------------------------- the ECC processor
def ecc_case() -> list[JobSpec]:
    """10 nodes: job 1 (6 nodes, to 100) and job 2 (4 nodes, to 20) start at 0; job 3
    (8 nodes, 100 s) is the blocked head from t=1 with its freeze at 100 and 2 nodes spare;
    job 4 (4 nodes, 50 s) waits from t=2 and, at t=20, ends before the freeze."""
    return [batch(1, 0, 6, 100), batch(2, 0, 4, 20), batch(3, 1, 8, 100), batch(4, 2, 4, 50)]


@pytest.mark.parametrize("name", ECC_NAMES)
def test_queued_et_pushes_a_job_behind_the_reservation(name: str) -> None:
    """ET 100 s for the waiting job 4 at t=10: at t=20 it would now run past the freeze on
    more nodes than are spare, so it waits until the head (100-200) is done."""
    engine = simulate(name, ecc_case(), eccs=[Ecc(4, 10, "ET", 100)])
    assert engine.ecc_log == [(Ecc(4, 10, "ET", 100), "applied")]
    assert engine.stats["eccs_applied"] == 1 and engine.stats["eccs_rejected"] == 0
    assert starts(engine) == {1: 0, 2: 0, 3: 100, 4: 200}
    assert ends(engine)[4] == 350 and column(engine, "walltime")[4] == 150


@pytest.mark.parametrize("name", NO_ECC_NAMES)
def test_schedulers_without_an_ecc_processor_refuse_and_log_commands(name: str) -> None:
    eccs = [Ecc(4, 10, "ET", 100), Ecc(1, 10, "ET", 50), Ecc(1, 11, "RT", 30)]
    engine = simulate(name, ecc_case(), eccs=eccs)
    refusal = f"rejected: policy {name} has no ECC processor"
    assert engine.ecc_log == [(ecc, refusal) for ecc in eccs]
    assert engine.stats["eccs_applied"] == 0 and engine.stats["eccs_rejected"] == 3
    assert starts(engine) == {1: 0, 2: 0, 3: 100, 4: 20}
    assert ends(engine) == {1: 100, 2: 20, 3: 200, 4: 70}
    assert column(engine, "walltime") == column(engine, "orig_walltime")


@pytest.mark.parametrize("name", ECC_NAMES)
@pytest.mark.parametrize(("kind", "amount", "end"), [("ET", 50, 150), ("RT", 30, 70)])
def test_running_et_rt_move_the_end(name: str, kind: str, amount: float, end: float) -> None:
    """ET/RT for running job 1 (to 100) at t=10: its walltime and end move, and the head
    (job 3), which waits for its nodes, starts at the new end."""
    engine = new_engine(name, ecc_case())
    engine.elastic(Ecc(1, 10, kind, amount))
    engine.run(until=10)
    validate(engine)
    assert engine.running[1].walltime == end
    finish(engine)
    assert ends(engine)[1] == end
    assert starts(engine)[3] == end
    assert engine.ecc_log[0][1] == "applied"


@pytest.mark.parametrize("name", ECC_NAMES)
def test_queued_rt_shortens_the_job(name: str) -> None:
    engine = simulate(name, ecc_case(), eccs=[Ecc(4, 10, "RT", 20)])
    assert starts(engine)[4] == 20 and ends(engine)[4] == 50
    assert column(engine, "walltime")[4] == 30 and column(engine, "orig_walltime")[4] == 50


@pytest.mark.parametrize(("commands", "outcomes", "end"), [
    ([("ET", 30), ("RT", 40)], ["applied", "applied"], 10),
    ([("RT", 40), ("ET", 30)], ["rejected: walltime would not stay positive", "applied"], 50),
])
def test_commands_are_applied_first_come_first_served(commands, outcomes, end) -> None:
    """Two commands for running job 2 (walltime 20) at t=5, in submission order: ET 30 then
    RT 40 leaves 10 s; RT 40 first would make the walltime negative and is refused."""
    eccs = [Ecc(2, 5, kind, amount) for kind, amount in commands]
    engine = simulate("los-e", ecc_case(), eccs=eccs)
    assert engine.ecc_log == list(zip(eccs, outcomes, strict=True))
    assert ends(engine)[2] == end


@pytest.mark.parametrize("name", ["los-e", "hybrid-los-e", "easy-de"])
def test_ecc_max_per_job_refuses_later_commands(name: str) -> None:
    eccs = [Ecc(2, 5, "ET", 30), Ecc(2, 6, "RT", 40), Ecc(1, 6, "ET", 10)]
    options = dataclasses.replace(NO_OVERHEADS, ecc_max_per_job=1)
    engine = simulate(name, ecc_case(), eccs=eccs, options=options)
    assert [outcome for _, outcome in engine.ecc_log] == [
        "applied", "rejected: job already had 1 commands", "applied"]
    assert engine.stats["eccs_applied"] == 2 and engine.stats["eccs_rejected"] == 1
    assert ends(engine)[2] == 50 and ends(engine)[1] == 110


# ---------------------------------------------------------------------- granularity
@pytest.mark.parametrize("name", ["los", "los-d", "delayed-los", "hybrid-los"])
def test_unit_32_is_exact_when_sizes_are_multiples_of_32(name: str) -> None:
    """On 320 nodes with sizes in multiples of 32, capacities in 32-node units lose
    nothing: the schedule equals the one computed in nodes."""

    @SETTINGS
    @given(specs=workloads(320, multiple=32, p_dedicated=0.2), fine=st.sampled_from([0, 1]))
    def check(specs: list[JobSpec], fine: int) -> None:
        coarse = simulate(name, specs, "nodes:320", ["unit=32"])
        assert coarse.policy.unit == 32
        exact = simulate(name, specs, "nodes:320", [f"unit={fine}"])
        assert exact.policy.unit == 1
        assert len(coarse.results) == len(specs)
        same_results(coarse, exact)

    check()


@pytest.mark.parametrize("name", ["los", "los-d", "delayed-los", "hybrid-los"])
def test_rounded_units_never_start_more_than_is_free(name: str) -> None:
    """Sizes that are not multiples of the unit (8 or 32 on 100 nodes, or the automatic
    unit 2 of 1,000 nodes): every selection fits the free nodes (the engine refuses a
    start that does not, and `validate` runs after every instant), and every job runs:
    rounding never keeps a job waiting for ever."""

    @SETTINGS
    @given(machine=st.sampled_from([("nodes:100", 8), ("nodes:100", 32), ("nodes:1000", 0)]),
           data=st.data())
    def check(machine: tuple[str, int], data) -> None:
        cluster, unit = machine
        total = parse_cluster(cluster).total_nodes
        specs = data.draw(workloads(total, p_dedicated=0.2))
        engine = simulate(name, specs, cluster, [f"unit={unit}"])
        assert engine.policy.unit == (unit or 2)
        assert len(engine.results) == len(specs)

    check()


@pytest.mark.parametrize(("cluster", "opts", "nodes"), [("nodes:1001", [], 1001),
                                                        ("nodes:100", ["unit=8"], 99)])
def test_a_head_that_fits_in_nodes_but_not_in_units_still_starts(cluster: str, opts: list[str],
                                                                 nodes: int) -> None:
    """A lone job that fits the idle machine: 1,001 nodes at the automatic unit of 2 are
    500 units but the job needs 501; likewise 99 nodes in units of 8. No DP can pick it,
    and no later event would bring another pass: the policy starts it directly."""
    engine = simulate("delayed-los", [batch(1, 0, nodes, 100)], cluster, opts)
    assert starts(engine) == {1: 0}
    assert engine.policy.stats()["unit_starts"] == 1 and engine.policy.scount.get(1, 0) == 0


# ---------------------------------------------------------------------- options
@pytest.mark.parametrize(("name", "opts", "message"), [
    ("los", ["lookahead=0"], "los: lookahead must be at least 1 job"),
    ("hybrid-los-e", ["lookahead=-3"], "hybrid-los-e: lookahead must be at least 1 job"),
    ("delayed-los", ["unit=-1"], "delayed-los: unit must be 0 (automatic) or a node count"),
    ("los-d", ["unit=-1"], "los-d: unit must be 0 (automatic) or a node count"),
    ("delayed-los", ["cs=-1"], "delayed-los: cs must not be negative"),
    ("hybrid-los", ["cs=-1"], "hybrid-los: cs must not be negative"),
    ("los", ["cs=3"], "policy los has no option 'cs'"),
    ("easy-d", ["unit=32"], "policy easy-d has no option 'unit'"),
    ("delayed-los", ["cs=x"], "delayed-los: option cs expects"),
    ("los", ["unit=321"], "los: unit 321 is larger than the machine (320 nodes)"),
])
def test_bad_options_are_refused_with_a_sentence(name: str, opts: list[str],
                                                 message: str) -> None:
    with pytest.raises(PolicyError) as err:
        make_policy(name, opts, parse_cluster("nodes:320"))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("cluster", ["bgq:4", "mira-blocks"])
@pytest.mark.parametrize("name", POOL_ONLY)
def test_partition_clusters_are_refused(name: str, cluster: str) -> None:
    with pytest.raises(PolicyError, match=r"use a node pool \(nodes:N\)") as err:
        make_policy(name, [], parse_cluster(cluster))
    assert str(err.value).startswith(f"{name} packs node counts")


def test_table_iii_is_registered_with_its_ecc_processors() -> None:
    expected = {"easy": True, "easy-e": True, "easy-d": False, "easy-de": True,
                "los": False, "los-d": False, "los-e": True, "los-de": True,
                "delayed-los": False, "hybrid-los": False, "delayed-los-e": True,
                "hybrid-los-e": True}
    assert {n: POLICIES[n].processes_eccs for n in expected} == expected
    defaults = make_policy("hybrid-los-e", [], parse_cluster("nodes:320"))
    assert (defaults.lookahead, defaults.unit, defaults.cs) == (50, 1, 7)
    assert make_policy("los", [], parse_cluster("nodes:4360")).unit == 8


def test_easy_e_is_easy_under_another_name() -> None:
    """Table III: EASY-E is EASY's code (the engine's ECC processor serves both)."""
    specs = ecc_case() + [dedicated(5, 0, 3, 60, 150)]
    eccs = [Ecc(4, 10, "ET", 100), Ecc(1, 30, "RT", 10)]
    same_results(simulate("easy-e", specs, eccs=eccs), simulate("easy", specs, eccs=eccs))


# ---------------------------------------------------------------------- CLI
def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"schedd {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def add_second_command(cwf: Path) -> int:
    """Append an ET of 1 s for the first job with an ET, at the same time (the generator
    gives a job at most one command; after an ET the job is still live): returns its id."""
    for line in cwf.read_text().splitlines():
        fields = line.split()
        if line.startswith(";") or len(fields) < 21 or fields[19] != "ET":
            continue
        fields[20] = "1"
        text = cwf.read_text()
        cwf.write_text(text + ("" if text.endswith("\n") else "\n") + " ".join(fields) + "\n")
        return int(fields[0])
    raise AssertionError(f"{cwf} has no ECC line")


def test_cli_lublin_workload_through_hybrid_los(tmp_path: Path) -> None:
    trace = tmp_path / "w.cwf"
    made = schedd("workload", "lublin", "--jobs", "80", "--seed", "1", "--pd", "0.3",
                  "--ecc", "--out", str(trace)).stdout
    assert "80 jobs" in made
    n_eccs = sum(1 for line in trace.read_text().splitlines()
                 if not line.startswith(";") and line.split()[19:20] in (["ET"], ["RT"]))
    assert n_eccs > 0

    def run(out: str, policy: str, *extra: str) -> dict:
        schedd("simulate", "--trace", str(trace), "--cluster", "nodes:320", "--policy",
               policy, *extra, "--out", str(tmp_path / out), "--no-progress")
        return json.loads((tmp_path / out / "summary.json").read_text())

    elastic = run("a", "hybrid-los-e", "--opt", "unit=32", "--opt", "cs=3")
    again = run("b", "hybrid-los-e", "--opt", "unit=32", "--opt", "cs=3")
    plain = run("c", "hybrid-los")
    for summary in (elastic, plain):
        assert summary["jobs"] == summary["started"] == 80
        assert summary["final_states"]["completed"] == 80
        assert summary["dedicated"]["jobs"] > 0
        assert summary["dedicated"]["started"] == summary["dedicated"]["jobs"]
        assert summary["policy_stats"]["dedicated_moved"] == summary["dedicated"]["jobs"]
        assert summary["engine"]["eccs_applied"] + summary["engine"]["eccs_rejected"] == n_eccs
    assert elastic["run"]["policy_options"] == {"lookahead": 50, "unit": 32,
                                                "after_head": "continue", "cs": 3}
    assert elastic["engine"]["eccs_applied"] > 0
    assert plain["engine"]["eccs_applied"] == 0 and plain["engine"]["eccs_rejected"] == n_eccs
    assert again == elastic
    for name in ("jobs.csv", "jobs.swf"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    add_second_command(trace)
    unlimited = run("d", "hybrid-los-e", "--opt", "unit=32", "--opt", "cs=3")
    limited = run("e", "hybrid-los-e", "--opt", "unit=32", "--opt", "cs=3", "--ecc-max", "1")
    assert limited["run"]["engine_options"]["ecc_max_per_job"] == 1
    assert unlimited["engine"]["eccs_applied"] == elastic["engine"]["eccs_applied"] + 1
    assert limited["engine"]["eccs_applied"] == elastic["engine"]["eccs_applied"]
    assert limited["engine"]["eccs_rejected"] == elastic["engine"]["eccs_rejected"] + 1


# ---------------------------------------------------------------------- experiments/los.py
def test_experiment_confidence_interval_is_students_t() -> None:
    """The mean +- 95% half-width that experiments/los.py reports: hand-worked for 1..5
    (mean 3, sd sqrt(2.5), t(4) = 2.776: 2.776 x 1.5811 / sqrt(5) = 1.9629), and the t
    quantile beyond the table against published values (t(40) = 2.0211, t(1000) =
    1.9623)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "experiments" / "los.py"
    spec = importlib.util.spec_from_file_location("los_experiment", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    mean, half = module.mean_ci([1, 2, 3, 4, 5])
    assert mean == 3.0 and half == pytest.approx(1.9629, abs=1e-4)
    assert module.t95(4) == 2.776 and module.t95(30) == 2.042
    assert module.t95(40) == pytest.approx(2.0211, abs=1e-3)
    assert module.t95(1000) == pytest.approx(1.9623, abs=1e-4)
    assert np.isnan(module.mean_ci([7.0])[1])
