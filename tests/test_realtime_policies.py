"""The real-time policies (schedd/policies/rt_common.py, rt_basic.py, wcjs.py; Nickolay et
al., ../shared/papers/realtime-jobs-bgq-preemption-checkpointing.md §4, §6, with the weights
and thresholds of ../shared/papers/realtime-author-implementation-notes.md).

Every scenario drives a real engine with the policy and calls `validate()` after every step;
times, blocks, victims and costs are worked by hand in the docstrings. Covered:

1. ESD (eqs. 56-58), the wfp2 order (ties included), job categories at their boundaries,
   threshold presets and parsing errors, the scheme -> preemption mode mapping.
2. wcjs's weighted cost (Algorithm 2): W_sd, W_ckpt, W_done computed on a Blue Gene/Q and
   each eligibility rule on its own (real-time job, larger parent, checkpointing job, batch
   job over its threshold, non-checkpointable job), ties by block name, a free partition
   first, one placement by preemption per pass, the high-priority queue order.
3. wcjs's two queues (Algorithm 1): the threshold crossing, low-priority real-time jobs;
   what an unplaced high-priority RTJ holds back (blocking=authors: only the low-priority
   RTJs; strict: the whole low-priority queue) and the no-stall rule in every mode (an
   RTJ no partition can be vacated for, a 32,768-node one on `mira`, holds nothing back).
4. JIT checkpoints: the real-time job starts when the last victim's checkpoint is written,
   on a claim nothing else may use; on a Blue Gene/Q and on a node pool.
5. rt-preempt's NO/SYS/APP/JIT-CKPT schemes (result columns, summary keys, eqs. 1-20), and
   the CLI's `--ckpt` from the policy's scheme.
6. rt-hpq (backfill and strict blocking); 7. rt-preempt's victim choice.
8. Property tests over random mixed workloads on `bgq:8` and `nodes:64`.
9. --requeue-remaining: the remaining-walltime arithmetic (JIT, SYS-CKPT, NO-CKPT) and its
   effect on wfp2 order, ESD and category.

Checkpoint times follow eq. 34 (CheckpointModel): 512 s for a 512-2048-node partition,
4 s per node below 128 nodes (48 s for 12 nodes, 64 s for 16, 128 s for 32).
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
from engine_steps import col, finish, state, step, until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedd.core.bgq import BlockCluster
from schedd.core.checkpoint import CheckpointPolicy
from schedd.core.cluster import Cluster
from schedd.core.cluster_spec import parse_cluster
from schedd.core.decisions import Decision, Preempt, PreemptMode, Start, WakeAt
from schedd.core.engine import Engine, EngineOptions
from schedd.core.job import Job, JobClass, JobSpec, JobState
from schedd.core.validate import validate
from schedd.core.view import View
from schedd.metrics import summarize
from schedd.policies import make_policy
from schedd.policies.base import PolicyError
from schedd.policies.rt_common import (
    SCHEMES,
    THRESHOLD_PRESETS,
    RealtimePolicy,
    category,
    esd_running,
    esd_waiting,
    parse_thresholds,
    wfp2_order,
)
from schedd.policies.wcjs import Wcjs
from schedd.policies.wfp2 import wfp2_order_keyed

RUNNING, CHECKPOINTING, PREEMPTED, QUEUED = (JobState.RUNNING, JobState.CHECKPOINTING,
                                             JobState.PREEMPTED, JobState.QUEUED)
LOG3 = math.log2(3.0)  # W_sd of a job with ESD 1 (it never waited)
# wcjs with every RTJ high priority from its submission (ESD >= 1 always holds).
HIGH_AT_ONCE = "rt_thresholds=1,1,1,1"


# ---------------------------------------------------------------------- building blocks
def batch(job_id: int, submit: float, nodes: int, runtime: float,
          walltime: float | None = None, **extra) -> JobSpec:
    return JobSpec(job_id, submit, runtime, nodes, runtime if walltime is None else walltime,
                   **extra)


def rtj(job_id: int, submit: float, nodes: int, runtime: float,
        walltime: float | None = None, **extra) -> JobSpec:
    return JobSpec(job_id, submit, runtime, nodes, runtime if walltime is None else walltime,
                   job_class=JobClass.REALTIME, **extra)


def opts_for(policy: str, scheme: str) -> list[str]:
    """`ckpt=scheme`, and for wcjs every RTJ high priority from its submission."""
    return [f"ckpt={scheme}", HIGH_AT_ONCE] if policy == "wcjs" else [f"ckpt={scheme}"]


def build(cluster: str, policy: str, opts: Sequence[str] = (), specs: Sequence[JobSpec] = (),
          periodic: str = "none", requeue_remaining: bool = False, **ckpt
          ) -> tuple[Engine, RealtimePolicy]:
    c = parse_cluster(cluster)
    pol = make_policy(policy, list(opts), c)
    assert isinstance(pol, RealtimePolicy)
    e = Engine(c, pol, options=EngineOptions(
        checkpoint=CheckpointPolicy(periodic=periodic, **ckpt),  # type: ignore[arg-type]
        requeue_remaining=requeue_remaining))
    for spec in specs:
        e.submit(spec)
    return e, pol


def block(engine: Engine, job_id: int) -> str:
    alloc = engine.jobs[job_id].allocation
    assert alloc is not None and alloc.block >= 0, f"job {job_id} holds no block"
    assert isinstance(engine.cluster, BlockCluster)
    return engine.cluster.block_name(alloc.block)


def moves(engine: Engine, job_id: int) -> list[tuple[float, JobState]]:
    return [(t, s) for t, s, _ in engine.jobs[job_id].history]


def record_costs(policy: RealtimePolicy) -> dict[int, float | None]:
    """Wrap the policy's per-victim cost: job id -> the last cost computed for it."""
    costs: dict[int, float | None] = {}
    name = "cost" if isinstance(policy, Wcjs) else "_cost"
    inner = getattr(policy, name)

    def cost(victim: Job) -> float | None:
        costs[victim.id] = c = inner(victim)
        return c

    setattr(policy, name, cost)
    return costs


@dataclass
class Vacate:
    """One partition vacated in a pass: the real-time job, its victims as they were."""

    time: float
    rtj: int
    modes: list[PreemptMode]
    victims: list[Job]
    victim_alloc: dict[int, int]  # victim id -> nodes held
    victim_esd: dict[int, float]
    ckpt_ends: dict[int, float]  # victim id -> when a JIT checkpoint would be written
    victim_walltime: dict[int, float] = field(default_factory=dict)  # as seen when taken


class Passes:
    """Records every pass of a real-time policy (wraps its `schedule`)."""

    def __init__(self, policy: RealtimePolicy):
        self.policy = policy
        self.passes: list[tuple[float, list[Decision]]] = []
        self.vacates: list[Vacate] = []
        inner = policy.schedule

        def schedule(view: View) -> list[Decision]:
            before = set(policy.claims)
            decisions = inner(view)
            self.passes.append((view.now, list(decisions)))
            self._vacates(view, decisions, set(policy.claims) - before)
            return decisions

        policy.schedule = schedule  # type: ignore[method-assign]

    def _vacates(self, view: View, decisions: list[Decision], new_claims: set[int]) -> None:
        preempts = [d for d in decisions if isinstance(d, Preempt)]
        if not preempts:
            assert not new_claims
            return
        # JIT: a claim; otherwise the real-time job's Start follows its victims' Preempts
        # (under JIT a Start there is another real-time job's, on free resources).
        ids = sorted(new_claims) or [
            d.job_id for i, d in enumerate(decisions[1:], 1)
            if isinstance(d, Start) and isinstance(decisions[i - 1], Preempt)]
        assert len(ids) == 1, f"t={view.now:g}: {len(ids)} partitions vacated in one pass"
        victims = [view.running[d.job_id] for d in preempts]
        self.vacates.append(Vacate(
            view.now, ids[0], [d.mode for d in preempts], victims,
            {v.id: v.alloc_nodes for v in victims},
            {v.id: esd_running(v) for v in victims},
            {v.id: view.now + view.checkpoint_seconds(v.id) for v in victims},
            {v.id: v.walltime for v in victims}))

    def at(self, t: float) -> list[list[Decision]]:
        return [d for time, d in self.passes if time == t]


# ---------------------------------------------------------------------- 1. shared pieces
def job(job_id: int, submit: float, nodes: int, walltime: float,
        cls: JobClass = JobClass.BATCH) -> Job:
    return Job(job_id, submit, nodes, walltime, -1, -1, cls, -1, True, -1.0, -1)


def test_esd_waiting_eq56_by_hand():
    """ESD = (walltime + now - submit) / walltime: 400 s walltime, submitted at 100, now
    700 -> (400 + 600) / 400 = 2.5; at its submission it is exactly 1."""
    j = job(1, 100, 8, 400)
    assert esd_waiting(j, 700) == 2.5
    assert esd_waiting(j, 100) == 1.0


def test_esd_running_eqs57_58_by_hand():
    """Eq. 58: estimatedEndTime = walltime + now - runningTime = start + walltime; eq. 57:
    (estimatedEndTime - submit) / walltime. Submitted at 100, started at 600, walltime
    1,000 -> (1600 - 100) / 1000 = 1.5."""
    j = job(1, 100, 8, 1000)
    j.predicted_end = 1600.0
    assert esd_running(j) == 1.5


def test_esd_running_of_an_engine_job_is_its_walltime_end():
    """The same through the engine: job 2 (8 nodes, walltime 1,000) waits for job 1 (16
    nodes, 500 s) from 100 to 500, so at any time while it runs ESD = (500 + 1000 - 100) /
    1000 = 1.4, whatever the time (its runtime, 300 s, is not visible)."""
    e, _ = build("nodes:16", "easy-wfp2", (), [batch(1, 0, 16, 500), batch(2, 100, 8, 300, 1000)])
    until(e, 500)
    assert state(e, 2) is RUNNING
    assert esd_running(e.jobs[2]) == 1.4
    finish(e)


def test_wfp2_order_by_hand_with_ties():
    """Score q^2 / w^3 x nodes / 64 at now = 16 (q = seconds queued, w = walltime):
    a: q 8, w 4, 16 nodes -> 64/64 x 1/4 = 0.25;   b: q 12, w 4, 16 nodes -> 2.25 x 1/4;
    c: q 4, w 2, 32 nodes -> 16/8 x 1/2 = 1.0;     d: q 4, w 4, 64 nodes -> 0.25 x 1;
    e: q 2, w 2, 32 nodes -> 4/8 x 1/2 = 0.25;     f, g: q 0 -> 0.
    Descending: c (1.0), b (0.5625), then the 0.25 tie a (submit 8), d (12), e (14) in
    submit order (their ids go the other way), then f and g (both submitted now) by id."""
    jobs = [job(15, 8, 16, 4), job(2, 4, 16, 4), job(3, 12, 32, 2), job(14, 12, 64, 4),
            job(13, 14, 32, 2), job(7, 16, 1, 1), job(6, 16, 64, 100)]
    order = [j.id for j in wfp2_order(jobs, 16.0, 64)]
    assert order == [3, 2, 15, 14, 13, 6, 7]
    # The order does not depend on the input order.
    assert [j.id for j in wfp2_order(reversed(jobs), 16.0, 64)] == order


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.sampled_from([1, 2, 16, 64, 512, 1024]),
                          st.sampled_from([1.0, 2.0, 60.0, 3600.0, 7200.5, 86400.0])),
                max_size=60),
       st.integers(0, 80), st.booleans(), st.sampled_from(["queue", "shuffled", "swap"]),
       st.randoms(use_true_random=False))
def test_wfp2_order_is_the_key_function_order(rows, later, fractional, arrival, rng):
    """The compiled sort (schedd/policies/wfp2.py) against sorted() with the key function
    on random queues: many equal scores (same submit, walltime and nodes), ids against
    submit order; in (submit, id) order as the view's queue (the sort of scores alone), or
    not (the tuple sort)."""
    jobs = [job(i, submit + (0.25 if fractional else 0.0), nodes, walltime)
            for i, (submit, nodes, walltime) in enumerate(rows)]
    rng.shuffle(jobs)
    if arrival != "shuffled":
        jobs.sort(key=lambda j: (j.submit, j.id))
        if arrival == "swap" and len(jobs) > 1:  # one pair out of order
            i = rng.randrange(len(jobs) - 1)
            jobs[i], jobs[i + 1] = jobs[i + 1], jobs[i]
    now = 40.0 + later
    fast = [j.id for j in wfp2_order(jobs, now, 1024)]
    assert fast == [j.id for j in wfp2_order_keyed(jobs, now, 1024)]

@pytest.mark.parametrize(("nodes", "walltime", "expected"), [
    (4096, 7200, "narrow-short"), (4096, 7201, "narrow-long"),
    (4608, 7200, "wide-short"), (4608, 7201, "wide-long"),
    (512, 60, "narrow-short"), (49152, 10**6, "wide-long"),
])
def test_category_boundaries(nodes, walltime, expected):
    assert ("narrow-short", "narrow-long", "wide-short", "wide-long")[
        category(nodes, walltime, 4096, 7200)] == expected


def test_wcjs_categorises_by_partition_size():
    """On `mira` a 4,000-node request occupies 4,096 (narrow), 4,097 occupies 8,192 (wide);
    on a pool the request is the allocation, and 4,608 is wide."""
    mira = make_policy("wcjs", [], parse_cluster("mira"))
    pool = make_policy("wcjs", [], parse_cluster("nodes:49152"))
    assert isinstance(mira, Wcjs) and isinstance(pool, Wcjs)
    assert mira.category_of(job(1, 0, 4000, 7200)) == 0
    assert mira.category_of(job(1, 0, 4097, 7200)) == 2
    assert mira.category_of(job(1, 0, 4096, 7201)) == 1
    assert pool.category_of(job(1, 0, 4096, 7200)) == 0
    assert pool.category_of(job(1, 0, 4608, 7201)) == 3


def test_threshold_presets_and_overrides():
    c = parse_cluster("bgq:4")
    default = make_policy("wcjs", [], c)
    curie = make_policy("wcjs", ["thresholds=curie"], c)
    mixed = make_policy("wcjs", ["thresholds=curie", "rt_thresholds=1, 1.2, 3, 4.5"], c)
    assert isinstance(default, Wcjs) and isinstance(curie, Wcjs) and isinstance(mixed, Wcjs)
    assert (default.rt_thr, default.bj_thr) == ((1.1, 1.1, 2.0, 1.59), (1.5, 1.5, 17.31, 4.77))
    assert THRESHOLD_PRESETS["mira"] == (default.rt_thr, default.bj_thr)
    assert (curie.rt_thr, curie.bj_thr) == ((1.1, 1.1, 2.0, 2.0), (1.5, 3.21, 13.5, 6.02))
    assert (mixed.rt_thr, mixed.bj_thr) == ((1.0, 1.2, 3.0, 4.5), curie.bj_thr)
    assert parse_thresholds("1.1,1.1,2.0,1.59", "rt_thresholds", "wcjs") == (1.1, 1.1, 2.0, 1.59)


@pytest.mark.parametrize("text", ["1,2,3", "1,2,3,4,5", "a,b,c,d", "0.9,1,1,1", "1,1,1,inf",
                                  "nan,1,1,1", "1,,1,1"])
@pytest.mark.parametrize("key", ["rt_thresholds", "bj_thresholds"])
def test_threshold_parsing_errors_are_one_sentence(key, text):
    with pytest.raises(PolicyError) as err:
        make_policy("wcjs", [f"{key}={text}"], parse_cluster("bgq:4"))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"wcjs: {key} needs four numbers >= 1")
    assert msg.endswith(f"got {text!r}") and ". " not in msg.replace("e.g. ", "")


@pytest.mark.parametrize("opt", ["w_done=0", "ckpt_scale_s=0", "sd_offset=0.5", "done_s=-1",
                                 "done_fraction=-0.1", "narrow_max=0", "short_max_s=0"])
def test_bad_weights_are_one_sentence(opt):
    with pytest.raises(PolicyError, match=r"^wcjs: weights must be positive") as err:
        make_policy("wcjs", [opt], parse_cluster("bgq:4"))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("scheme", "mode", "periodic"), [
    ("none", PreemptMode.RESTART, "none"), ("sys", PreemptMode.LAST_CHECKPOINT, "sys"),
    ("app", PreemptMode.LAST_CHECKPOINT, "app"), ("jit", PreemptMode.JIT, "none")])
@pytest.mark.parametrize("policy", ["rt-preempt", "wcjs"])
def test_scheme_preempt_mode_and_periodic_checkpoints(policy, scheme, mode, periodic):
    """Table 1 -> engine: the Preempt decisions carry the scheme's mode, and the policy asks
    for the engine's periodic checkpoint mode the scheme assumes."""
    assert SCHEMES[scheme] == (mode, periodic)
    e, pol = build("bgq:1", policy, opts_for(policy, scheme),
                   [batch(1, 0, 512, 5000), rtj(2, 100, 512, 100)], periodic=periodic)
    assert pol.periodic_checkpoints() == periodic
    log = Passes(pol)
    until(e, 100)
    assert [v.modes for v in log.vacates] == [[mode]]
    finish(e)


# ---------------------------------------------------------------------- 2. weighted cost
def test_weighted_cost_by_hand_on_four_midplanes():
    """bgq:4, wcjs ckpt=sys (SYS-CKPT every 2,000 compute s, each checkpoint 512 s), four
    512-node batch jobs (walltime = runtime), each alone on a midplane from its submission:
      J1 submit    0, W 4,000 -> M00: checkpoint 2000-2512; predicted end 4,512
      J2 submit  100, W 8,000 -> M01 (least blocking): checkpoint 2100-2612; end 9,636
      J3 submit 1500, W 5,000 -> M02: checkpoint 3500-4012 (in progress at 3,700); end 7,524
      J4 submit 2000, W 2,500 -> M03: no checkpoint yet; end 5,012
    RTJ 9 (512 nodes) arrives at 3,700, high priority at once. Per job at 3,700:
      ESD (eq. 57, predicted end - submit over walltime): 4512/4000 = 1.128,
                    9536/8000 = 1.192, 6024/5000 = 3012/2500 = 1.2048 (all <= 1.5: eligible);
      compute since the last completed checkpoint: 1188, 1088, 2000, 1700 s;
      remaining: 812 <= min(1000, 900) -> J1 W_done 5; the others 1.
    Cost = 512 x W_done x max(1 + ln(t / 900), 1) x log2(2 + ESD): J2 is cheapest, so the
    RTJ takes M01 at once and J2 goes back to its checkpoint (loses 1,088 s)."""
    specs = [batch(1, 0, 512, 4000), batch(2, 100, 512, 8000), batch(3, 1500, 512, 5000),
             batch(4, 2000, 512, 2500), rtj(9, 3700, 512, 300)]
    e, pol = build("bgq:4", "wcjs", ["ckpt=sys", HIGH_AT_ONCE], specs, periodic="sys",
                   sys_interval=2000)
    costs = record_costs(pol)
    until(e, 3699)
    assert {j: block(e, j) for j in (1, 2, 3, 4)} == {1: "M00", 2: "M01", 3: "M02", 4: "M03"}
    assert [e.jobs[j].predicted_end for j in (1, 2, 3, 4)] == [4512, 9636, 7524, 5012]
    assert not costs
    until(e, 3700)

    def w(t: float) -> float:
        return max(1 + math.log(t / 900), 1)

    expected = {
        1: 512 * 5 * w(1188) * math.log2(2 + 4512 / 4000),
        2: 512 * 1 * w(1088) * math.log2(2 + 9536 / 8000),
        3: 512 * 1 * w(2000) * math.log2(2 + 6024 / 5000),
        4: 512 * 1 * w(1700) * math.log2(2 + 3012 / 2500),
    }
    assert costs == pytest.approx(expected, rel=1e-12)
    assert min(expected, key=expected.__getitem__) == 2
    assert state(e, 9) is RUNNING and block(e, 9) == "M01"
    assert state(e, 2) is PREEMPTED
    assert all(state(e, j) is RUNNING for j in (1, 3, 4))
    finish(e)
    assert col(e, "lost_node_s")[2] == 512 * 1088
    assert col(e, "preemptions") == {1: 0, 2: 1, 3: 0, 4: 0, 9: 0}


@pytest.mark.parametrize(("walltime", "t", "chosen"), [
    (1000, 750, "M01"),   # remaining 250 <= min(0.25 x 1000, 900): W_done 5 on M00
    (1000, 749, "M00"),   # remaining 251: W_done 1, a tie -> M00 by name
    (8000, 7100, "M01"),  # remaining 900 <= min(2000, 900)
    (8000, 7099, "M00"),  # remaining 901 > 900 (the done_s cap; 0.25 x 8000 = 2000)
])
def test_w_done_boundary(walltime, t, chosen):
    """bgq:2, ckpt=jit. J1 (M00, walltime = runtime = `walltime`) and J2 (M01, 20,000 s)
    from 0: same ESD (1), same compute since start (no checkpoints), so they cost the same
    but for W_done. J1 close to its end costs exactly 5 x J2."""
    e, pol = build("bgq:2", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(1, 0, 512, walltime), batch(2, 0, 512, 20_000), rtj(9, t, 512, 100)])
    costs = record_costs(pol)
    until(e, t)
    w_ckpt = max(1 + math.log(t / 900), 1)
    base = 512 * w_ckpt * LOG3
    assert costs == pytest.approx({1: base * (5 if chosen == "M01" else 1), 2: base},
                                  rel=1e-12)
    victim = 1 if chosen == "M00" else 2
    assert state(e, victim) is CHECKPOINTING and state(e, 3 - victim) is RUNNING
    until(e, t + 512)
    assert block(e, 9) == chosen and e.jobs[9].first_start == t + 512
    finish(e)


@pytest.mark.parametrize("policy", ["wcjs", "rt-preempt"])
def test_ties_go_to_the_first_partition_by_name(policy):
    """bgq:4, four identical batch jobs on M00..M03: every partition costs the same, so
    the RTJ takes M00 (NO-CKPT: at once) and job 1 (on M00) restarts later."""
    specs = [batch(j, 0, 512, 5000) for j in (1, 2, 3, 4)] + [rtj(9, 100, 512, 100)]
    e, pol = build("bgq:4", policy, opts_for(policy, "none"),
                   specs)
    until(e, 100)
    assert block(e, 9) == "M00"
    assert state(e, 1) is PREEMPTED and all(state(e, j) is RUNNING for j in (2, 3, 4))
    finish(e)


@pytest.mark.parametrize("policy", ["wcjs", "rt-preempt"])
def test_a_partition_running_a_realtime_job_is_not_eligible(policy):
    """bgq:2. RTJ 1 starts on M00 at 0, batch job 2 on M01 (walltime 1,000). RTJ 3
    arrives at 750. wcjs: job 2 is close to its end (W_done 5), so M00 would cost a fifth
    of M01; rt-preempt: both cost 512, a tie that M00 would win. Either way M00 is out
    because it runs an RTJ: job 2 is preempted, RTJ 1 never."""
    opts = opts_for(policy, "none")
    e, pol = build("bgq:2", policy, opts,
                   [rtj(1, 0, 512, 5000), batch(2, 0, 512, 1000), rtj(3, 750, 512, 100)])
    costs = record_costs(pol)
    until(e, 0)
    assert (block(e, 1), block(e, 2)) == ("M00", "M01")
    until(e, 750)
    assert costs.get(1, None) is None
    assert block(e, 3) == "M01" and state(e, 2) is PREEMPTED and state(e, 1) is RUNNING
    finish(e)
    assert col(e, "preemptions") == {1: 0, 2: 1, 3: 0}


def test_a_larger_parent_running_a_job_makes_its_children_ineligible():
    """bgq:4, wcjs ckpt=jit. P (1,024 nodes, 5,000 s) on M00-M01, J3 and J4 (512 nodes,
    1,000 s) on M02 and M03. RTJ 9 (512) at 750: P alone would cost 1024 x log2(3) = 1,623,
    J3 or J4 5 x 512 x log2(3) = 4,057 (close to their ends). But P is larger than the RTJ's
    partition, so M00 and M01 are out; M02 and M03 tie -> M02. The RTJ starts when J3's
    checkpoint is written, at 750 + 512."""
    e, pol = build("bgq:4", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(1, 0, 1024, 5000), batch(3, 0, 512, 1000), batch(4, 0, 512, 1000),
                    rtj(9, 750, 512, 100)])
    costs = record_costs(pol)
    until(e, 0)
    assert (block(e, 1), block(e, 3), block(e, 4)) == ("M00-M01", "M02", "M03")
    until(e, 750)
    assert costs[1] is None
    assert costs[3] == costs[4] == pytest.approx(5 * 512 * LOG3, rel=1e-12)
    assert state(e, 3) is CHECKPOINTING and state(e, 1) is RUNNING and state(e, 4) is RUNNING
    until(e, 1262)
    assert block(e, 9) == "M02" and e.jobs[9].first_start == 1262
    finish(e)
    assert col(e, "preemptions") == {1: 0, 3: 1, 4: 0, 9: 0}


@pytest.mark.parametrize(("rtj_nodes", "victim"), [(16, None), (24, 2)])
def test_larger_jobs_are_not_eligible_on_a_node_pool(rtj_nodes, victim):
    """nodes:64, wcjs ckpt=jit: job 1 (40 nodes) and job 2 (24) fill the pool. An RTJ of 16
    may take neither (both are larger), so it waits; one of 24 may take job 2."""
    e, pol = build("nodes:64", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(1, 0, 40, 5000), batch(2, 0, 24, 5000), rtj(9, 100, rtj_nodes, 100)])
    until(e, 100)
    if victim is None:
        assert state(e, 1) is RUNNING and state(e, 2) is RUNNING and state(e, 9) is QUEUED
    else:
        assert state(e, victim) is CHECKPOINTING and state(e, 1) is RUNNING
        until(e, 100 + 96)  # 24 nodes: 4 x 24 s
        assert e.jobs[9].first_start == 196
    finish(e)


def test_a_checkpointing_job_makes_its_partition_ineligible():
    """bgq:2, wcjs ckpt=jit. J1 (M00) and J2 (M01) from 0. RTJ 8 at 100 takes M00 (a tie)
    and J1 starts its JIT checkpoint (100-612). RTJ 8 is cancelled at 200, which drops its
    claim, so M00 is held only by the checkpointing J1. RTJ 9 at 300: J1 would cost exactly
    what J2 costs and win the tie, but a checkpointing job is not preempted: J2 goes."""
    e, pol = build("bgq:2", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(1, 0, 512, 5000), batch(2, 0, 512, 5000), rtj(8, 100, 512, 100),
                    rtj(9, 300, 512, 100)])
    until(e, 100)
    assert state(e, 1) is CHECKPOINTING and list(pol.claims) == [8]
    e.wake_at(200)
    until(e, 200)
    e.cancel(8)  # at 200, handled by the next step
    step(e)
    assert e.now == 200 and 8 not in e.jobs
    assert not pol.claims and state(e, 1) is CHECKPOINTING
    costs = record_costs(pol)
    until(e, 300)
    assert costs[1] is None
    assert state(e, 2) is CHECKPOINTING and list(pol.claims) == [9]
    until(e, 812)
    assert block(e, 9) == "M01" and e.jobs[9].first_start == 812
    finish(e)
    assert col(e, "preemptions")[1] == 1 and col(e, "final_state")[8] == 2  # cancelled


@pytest.mark.parametrize(("blocker", "chosen"), [(900, "M00"), (1000, "M01")])
def test_a_batch_job_over_its_threshold_is_not_eligible(blocker, chosen):
    """bgq:2, wcjs ckpt=jit, narrow batch threshold 1.5. X (1,024 nodes) runs 0..`blocker`.
    B1 (512, 1,800 s, submitted at 0) waits for it and starts at `blocker` on M00: ESD =
    (blocker + 1800) / 1800 = 1.5 exactly for 900 (eligible: only above the threshold is
    out), 1.556 for 1,000. B2 (512, 1,200 s, submitted at `blocker`) starts then on M01.
    RTJ 9 arrives 900 s later: B2 has 300 <= min(300, 900) s left (W_done 5), both have
    computed 900 s (W_ckpt 1). B1 costs 512 x log2(2 + ESD), far less than B2's 5 x 512 x
    log2(3) -> M00 when B1 is eligible, else M01."""
    t = blocker + 900
    e, pol = build("bgq:2", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(1, 0, 1024, blocker), batch(2, 0, 512, 1800),
                    batch(3, blocker, 512, 1200), rtj(9, t, 512, 100)])
    costs = record_costs(pol)
    until(e, blocker)
    assert (block(e, 2), block(e, 3)) == ("M00", "M01")
    until(e, t)
    esd = (blocker + 1800) / 1800
    assert costs[3] == pytest.approx(5 * 512 * LOG3, rel=1e-12)
    if chosen == "M00":
        assert esd == 1.5 and costs[2] == pytest.approx(512 * math.log2(3.5), rel=1e-12)
    else:
        assert esd > 1.5 and costs[2] is None
    until(e, t + 512)
    assert block(e, 9) == chosen and e.jobs[9].first_start == t + 512
    finish(e)


@pytest.mark.parametrize(("policy", "scheme", "chosen"), [
    ("wcjs", "jit", "M01"), ("wcjs", "sys", "M01"), ("wcjs", "none", "M00"),
    ("rt-preempt", "jit", "M01"), ("rt-preempt", "app", "M01"), ("rt-preempt", "none", "M00"),
])
def test_a_non_checkpointable_job_is_eligible_under_no_ckpt_only(policy, scheme, chosen):
    """bgq:2. N1 (M00, cannot checkpoint, 4,000 s) and B2 (M01, 1,000 s) from 0; RTJ 9 at
    750. N1 is the cheaper victim (wcjs: B2 is close to its end; rt-preempt: a tie won by
    M00), but only NO-CKPT may preempt a job that cannot checkpoint."""
    opts = opts_for(policy, scheme)
    e, pol = build("bgq:2", policy, opts,
                   [batch(1, 0, 512, 4000, checkpointable=False), batch(2, 0, 512, 1000),
                    rtj(9, 750, 512, 100)], periodic=SCHEMES[scheme][1])
    log = Passes(pol)
    until(e, 750)
    assert [[v.id for v in x.victims] for x in log.vacates] == [[1 if chosen == "M00" else 2]]
    finish(e)
    assert col(e, "preemptions")[1] == (chosen == "M00")


@pytest.mark.parametrize("policy", ["wcjs", "rt-preempt"])
def test_a_free_partition_is_used_first_without_preemption(policy):
    """bgq:4 with M00..M02 busy: the RTJ takes the free M03 and nobody is preempted."""
    opts = opts_for(policy, "none")
    e, pol = build("bgq:4", policy, opts,
                   [batch(1, 0, 512, 5000), batch(2, 0, 512, 5000), batch(3, 0, 512, 5000),
                    rtj(9, 100, 512, 100)])
    log = Passes(pol)
    until(e, 100)
    assert block(e, 9) == "M03" and not log.vacates
    assert pol.stats()["rt_free_starts"] == 1 and pol.stats()["rt_vacated"] == 0
    finish(e)
    assert set(col(e, "preemptions").values()) == {0}


@pytest.mark.parametrize("scheme", ["none", "jit"])
@pytest.mark.parametrize("policy", ["wcjs", "rt-preempt"])
def test_one_placement_by_preemption_per_pass_two_rtjs_at_one_instant(policy, scheme):
    """bgq:2. J1 (M00) and J2 (M01) from 0; RTJs 8 and 9 arrive together at 100 (for wcjs
    both high priority). Pass 1: RTJ 8 (first in wfp2 order: a tie, by id) vacates M00 (a
    tie, by name); RTJ 9 may only look for a free partition, finds none, and the pass asks
    for another one at the same instant. Pass 2 (on the engine's new state): RTJ 9 vacates
    M01. NO-CKPT: both start at 100; JIT: both at 100 + 512."""
    e, pol = build("bgq:2", policy, opts_for(policy, scheme),
                   [batch(1, 0, 512, 5000), batch(2, 0, 512, 5000), rtj(8, 100, 512, 100),
                    rtj(9, 100, 512, 100)])
    log = Passes(pol)
    until(e, 100)
    passes = log.at(100)
    assert len(passes) == 3
    assert [[(type(d).__name__, getattr(d, "job_id", None)) for d in p
             if not isinstance(d, WakeAt)] for p in passes[:2]] == [
        [("Preempt", 1)] + [("Start", 8)] * (scheme == "none"),
        [("Preempt", 2)] + [("Start", 9)] * (scheme == "none")]
    assert all(WakeAt(100) in p for p in passes[:2])
    assert [(v.rtj, [j.id for j in v.victims]) for v in log.vacates] == [(8, [1]), (9, [2])]
    start = 100 + 512 * (scheme == "jit")
    until(e, start)
    assert (block(e, 8), block(e, 9)) == ("M00", "M01")
    assert e.jobs[8].first_start == e.jobs[9].first_start == start
    assert pol.stats()["rt_vacated"] == 2
    finish(e)


@pytest.mark.parametrize(("hp_order", "blocks"), [("wfp2", ("M00-M01", "M02")),
                                                  ("esd", ("M02-M03", "M00"))])
def test_high_priority_queue_order(hp_order, blocks):
    """bgq:4, wcjs ckpt=none, default thresholds. Four 512-node jobs fill the machine at 0;
    RTJs 5 (512 nodes) and 6 (1,024), both submitted at 0 with walltime 1,000, cross their
    threshold together at 0 + 0.1 x 1000. Same ESD (a tie, by id: 5 first), but wfp2 counts
    nodes (6 first). The first gets the first partition by name (every job costs the same);
    the second, in the next pass, the first partition without the first RTJ in it:
    wfp2: 6 on M00-M01 (jobs 1, 2), then 5 on M02; esd: 5 on M00, then 6 on M02-M03."""
    e, pol = build("bgq:4", "wcjs", ["ckpt=none", f"hp_order={hp_order}"],
                   [batch(j, 0, 512, 5000) for j in (1, 2, 3, 4)]
                   + [rtj(5, 0, 512, 1000), rtj(6, 0, 1024, 1000)])
    crossing = 0 + (1.1 - 1) * 1000
    until(e, 0)
    assert e.next_time() == crossing and state(e, 5) is QUEUED and state(e, 6) is QUEUED
    until(e, crossing)
    assert (block(e, 6), block(e, 5)) == blocks
    finish(e)


def test_high_priority_queue_order_wfp2_does_not_follow_the_low_priority_order():
    """As test_high_priority_queue_order with hp_order=wfp2, but `order=fcfs` (documented:
    "order of the low-priority queue"). The high-priority queue must still be in wfp2
    order: RTJ 6 first, on M00-M01 (not FCFS: RTJ 5 first, 6 on M02-M03)."""
    e, _ = build("bgq:4", "wcjs", ["ckpt=none", "hp_order=wfp2", "order=fcfs"],
                 [batch(j, 0, 512, 5000) for j in (1, 2, 3, 4)]
                 + [rtj(5, 0, 512, 1000), rtj(6, 0, 1024, 1000)])
    until(e, 0 + (1.1 - 1) * 1000)
    assert (block(e, 6), block(e, 5)) == ("M00-M01", "M02")


def test_high_priority_queue_order_esd_highest_first():
    """bgq:2, wcjs ckpt=jit, hp_order=esd, every RTJ high priority. N1 (M00) and N2 (M01)
    cannot checkpoint and end at 1,000, so RTJs A (walltime 1,000, from 100) and B (100,
    from 500) wait. At 1,000 both partitions free up: ESD A = (1000 + 900) / 1000 = 1.9,
    B = (100 + 500) / 100 = 6 -> B first takes M00, then A M01."""
    e, _ = build("bgq:2", "wcjs", ["ckpt=jit", "hp_order=esd", HIGH_AT_ONCE],
                 [batch(1, 0, 512, 1000, checkpointable=False),
                  batch(2, 0, 512, 1000, checkpointable=False),
                  rtj(8, 100, 512, 1000), rtj(9, 500, 512, 100)])
    until(e, 999)
    assert state(e, 8) is QUEUED and state(e, 9) is QUEUED
    until(e, 1000)
    assert (block(e, 9), block(e, 8)) == ("M00", "M01")
    finish(e)


# ---------------------------------------------------------------------- 3. Algorithm 1
def test_low_priority_rtj_is_scheduled_as_a_batch_job_until_its_threshold():
    """bgq:2, wcjs ckpt=none, default thresholds (narrow-short RTJ: 1.1). J1 (M00, 10,000
    s) and J2 (M01, 300 s) from 0; batch B3 (512, 600 s) submitted at 0; RTJ 9 (512, 5,000
    s) at 100 -> high priority at 100 + 0.1 x 5000 = 600. At 300 M01 frees: the low-priority
    queue in wfp2 order has B3 (300^2 / 600^3) far ahead of RTJ 9 (200^2 / 5000^3), so B3
    starts and RTJ 9 waits, preempting nothing. At 600 RTJ 9 is high priority: J1 (ESD 1,
    W_sd log2 3) is cheaper than B3 (ESD (300 + 600) / 600 = 1.5, log2 3.5), so J1 is
    preempted at exactly 600 and RTJ 9 starts on M00."""
    e, pol = build("bgq:2", "wcjs", ["ckpt=none"],
                   [batch(1, 0, 512, 10_000), batch(2, 0, 512, 300), batch(3, 0, 512, 600),
                    rtj(9, 100, 512, 5000)])
    crossing = 100 + (1.1 - 1) * 5000
    log = Passes(pol)
    until(e, 300)
    assert state(e, 3) is RUNNING and block(e, 3) == "M01" and state(e, 9) is QUEUED
    assert e.next_time() == crossing  # the policy asked to be woken at the crossing
    until(e, crossing - 1e-6)
    assert not log.vacates and state(e, 1) is RUNNING
    until(e, crossing)
    assert [(v.time, v.rtj, [j.id for j in v.victims]) for v in log.vacates] == [
        (crossing, 9, [1])]
    assert moves(e, 1)[-1] == (crossing, PREEMPTED)
    assert e.jobs[9].first_start == crossing and block(e, 9) == "M00"
    finish(e)


@pytest.mark.parametrize(("preset", "nodes", "walltime", "threshold"), [
    ("mira", 4096, 7200, 1.1), ("mira", 4096, 7201, 1.1), ("mira", 4097, 7200, 2.0),
    ("mira", 4097, 7201, 1.59), ("curie", 4097, 7201, 2.0), ("curie", 512, 60, 1.1),
])
def test_threshold_crossing_per_category(preset, nodes, walltime, threshold):
    """On `mira` (4,097 nodes occupy 8,192: wide) an RTJ submitted at 1,000 to a free
    machine starts at once as a low-priority job, and the pass asks to be woken when it
    would cross its category's threshold: 1000 + (threshold - 1) x walltime."""
    e, pol = build("mira", "wcjs", [f"thresholds={preset}"], [rtj(9, 1000, nodes, 100, walltime)])
    log = Passes(pol)
    until(e, 1000)
    first = log.at(1000)[0]
    assert WakeAt(1000 + (threshold - 1) * walltime) in first
    assert [d.job_id for d in first if isinstance(d, Start)] == [9]
    assert state(e, 9) is RUNNING and not log.vacates
    finish(e)


# A busy bgq:4 where a 1,024-node RTJ is high priority but placeable by no pass until 5,100,
# although waiting could serve it by preemption: B0 (2,048 nodes) holds the machine 0-100;
# then B1 (1,024 nodes) and B2, B3 (512 each), submitted at 1, start at 100 and are over
# the batch threshold 1 (`bj_thresholds=1,...`): B1, B2 run ESD (5,100 - 1) / 5,000 > 1,
# B3 (900 s) (1,000 - 1) / 900 = 1.11 > 1, so no partition is eligible now, but none holds a
# job Algorithm 2 never takes. RTJ 9 (1,024 nodes, 1,000 s, narrow-short: threshold 1,
# high priority at once) arrives at 200; RTJ 8 (512 nodes, walltime 8,000 s, narrow-long:
# threshold 2, low priority until 400 + 8,000) at 400; batch B5 (512 nodes, 300 s) at 300.
# B3 frees its midplane at 1,000; B1 and B2 end at 5,100, when RTJ 9 takes a partition.
HOLDING_OPTS = ["ckpt=jit", "rt_thresholds=1,2,1,1", "bj_thresholds=1,1,1,1"]


def holding_specs() -> list[JobSpec]:
    return [batch(10, 0, 2048, 100), batch(1, 1, 1024, 5000), batch(2, 1, 512, 5000),
            batch(3, 1, 512, 900), rtj(9, 200, 1024, 1000), batch(5, 300, 512, 300),
            rtj(8, 400, 512, 2000, 8000)]


def test_authors_blocking_starts_batch_jobs_and_holds_back_low_priority_rtjs():
    """The default, blocking=authors (bgsched.py's method 0): at 1,000 RTJ 9 is still
    unplaced (no eligible partition), yet B5 starts on B3's freed midplane in that same
    pass, while RTJ 8 (low priority) is held back, at 1,000 and again when B5 frees it at
    1,300. At 5,100 RTJ 9 starts on a freed 1,024-node partition; the next pass at the
    same instant starts RTJ 8. Nothing is preempted."""
    e, pol = build("bgq:4", "wcjs", HOLDING_OPTS, holding_specs())
    assert pol.options.blocking == "authors"
    log = Passes(pol)
    until(e, 999)
    freed = block(e, 3)
    until(e, 1000)
    assert state(e, 5) is RUNNING and block(e, 5) == freed
    assert state(e, 9) is QUEUED and state(e, 8) is QUEUED
    assert any(isinstance(d, Start) and d.job_id == 5 for d in log.at(1000)[-1])
    until(e, 5099)
    assert state(e, 8) is QUEUED and e.state.fits(512)  # free since 1,300, RTJ 8 held
    finish(e)
    start = col(e, "first_start")
    assert (start[5], start[9], start[8]) == (1000, 5100, 5100)
    assert set(col(e, "preemptions").values()) == {0}
    assert pol.stats()["hp_holding_passes"] > 0 and pol.stats()["hp_stuck_passes"] == 0
    assert not log.vacates


def test_strict_blocking_holds_the_whole_low_priority_queue():
    """The same machine with blocking=strict (Algorithm 1's text): neither B5 nor RTJ 8
    starts while RTJ 9 is high priority and could be served by waiting, though B3's
    midplane is free from 1,000; both start at 5,100, right after RTJ 9."""
    e, _ = build("bgq:4", "wcjs", [*HOLDING_OPTS, "blocking=strict"], holding_specs())
    until(e, 5099)
    assert state(e, 5) is QUEUED and state(e, 8) is QUEUED and e.state.fits(512)
    finish(e)
    start = col(e, "first_start")
    assert (start[9], start[5], start[8]) == (5100, 5100, 5100)


@pytest.mark.parametrize("blocking", ["authors", "strict", "backfill"])
def test_an_rtj_no_partition_can_be_vacated_for_holds_nothing_back(blocking):
    """The no-stall rule. bgq:4, wcjs ckpt=jit: N1 (1,024 nodes, cannot checkpoint, ends
    at 2,000) on M00-M01 and RTJ 2 (512) on M02: RTJ 9 (1,024 nodes, high priority at once
    from 100) has no partition Algorithm 2 could ever take while they run. In every mode
    it holds nothing back and waits first in the default algorithm's queue, with the EASY
    reservation at N1's end: batch B (512, 300 s) starts at once on M03 at 150, and RTJ 9
    at 2,000 (under the old strict rule B waited for RTJ 9, to 2,000)."""
    e, pol = build("bgq:4", "wcjs", ["ckpt=jit", HIGH_AT_ONCE, f"blocking={blocking}"],
                   [batch(1, 0, 1024, 2000, checkpointable=False), rtj(2, 1, 512, 5000),
                    rtj(9, 100, 1024, 1000), batch(5, 150, 512, 300)])
    until(e, 150)
    assert state(e, 5) is RUNNING and block(e, 5) == "M03" and state(e, 9) is QUEUED
    finish(e)
    start = col(e, "first_start")
    assert (start[5], start[9]) == (150, 2000)
    assert set(col(e, "preemptions").values()) == {0}
    if blocking != "backfill":
        assert pol.stats()["hp_stuck_passes"] > 0 and pol.stats()["hp_holding_passes"] == 0


@pytest.mark.parametrize("blocking", ["authors", "strict", "backfill"])
@pytest.mark.parametrize(("cluster", "big", "small"), [("mira", 32768, 512), ("nodes:64", 64, 8)])
def test_a_32k_rtj_that_cannot_be_vacated_does_not_freeze_the_batch_queue(
        blocking, cluster, big, small):
    """The issue's stall: a 32,768-node RTJ waited 44.7 h because no partition of its size
    could be vacated while the strict rule froze the batch queue. On `mira` the only
    32,768-node partition is M00-M63; N0 (16,384 nodes, cannot checkpoint, to 10,000) takes
    M32-M63 and RTJ 1 (512, to 5,000) a midplane: RTJ 9 (32,768 nodes, high priority from
    100) has no partition Algorithm 2 could ever take until 10,000. On nodes:64 the same
    with N0 = 32 nodes, RTJ 1 = 16 and RTJ 9 = 64. Batch job B5 (small, 300 s) arriving
    at 200 starts at once in every mode, and RTJ 9 is not starved: its EASY reservation
    starts it at N0's end."""
    e, pol = build(cluster, "wcjs", ["ckpt=jit", HIGH_AT_ONCE, f"blocking={blocking}"],
                   [batch(10, 0, big // 2, 10_000, checkpointable=False),
                    rtj(1, 0, big // 64 if cluster == "mira" else 16, 5000),
                    rtj(9, 100, big, 1000), batch(5, 200, small, 300)])
    until(e, 200)
    if cluster == "mira":
        assert block(e, 10) == "M32-M63"
    assert state(e, 5) is RUNNING and state(e, 9) is QUEUED
    finish(e)
    start = col(e, "first_start")
    assert start[5] == 200 and start[9] == 10_000
    if blocking != "backfill":
        assert pol.stats()["hp_stuck_passes"] > 0


# ---------------------------------------------------------------------- 4. JIT claims
@pytest.mark.parametrize("policy", ["wcjs", "rt-preempt"])
def test_jit_rtj_starts_when_the_checkpoint_is_written_and_its_claim_is_held(policy):
    """bgq:2, ckpt=jit. B1 (512 nodes, 5,000 s) on M00 from 0. RTJ 9 (1,024 nodes, 1,000
    s) at 1,000: no free 1,024 partition; M00-M01's only job is B1 -> B1 writes its JIT
    checkpoint for 512 s (eq. 34), 1,000-1,512, and the claim holds M00-M01, the free M01
    included. S (512 nodes, 100 s) arrives at 1,100: it fits M01, but not on the claim.
    At 1,512 B1 is requeued and RTJ 9 starts, never earlier. At 2,512 S and B1 start (S
    first in wfp2 order); B1 reads its checkpoint (512 s, eq. 17) and does its remaining
    4,000 s: it ends at 2,512 + 512 + 4,000 = 7,024, with nothing lost."""
    opts = opts_for(policy, "jit")
    e, pol = build("bgq:2", policy, opts,
                   [batch(1, 0, 512, 5000), rtj(9, 1000, 1024, 1000), batch(5, 1100, 512, 100)])
    until(e, 1000)
    assert state(e, 1) is CHECKPOINTING and list(pol.claims) == [9]
    while e.next_time() is not None and e.next_time() < 1512:  # type: ignore[operator]
        step(e)
        assert state(e, 9) is QUEUED and state(e, 5) is QUEUED and e.state.fits(512)
    until(e, 1512)
    assert state(e, 9) is RUNNING and block(e, 9) == "M00-M01" and state(e, 1) is PREEMPTED
    assert not pol.claims and pol.stats()["claims_served"] == 1
    finish(e)
    start, end = col(e, "first_start"), col(e, "end")
    assert start[9] == 1512 and start[5] == 2512 and end[1] == 7024
    r = {k: col(e, k)[1] for k in ("lost_node_s", "t_ckpt", "t_pre", "ckpt_node_s",
                                   "restart_node_s", "preemptions", "checkpoints",
                                   "ckpt_by_system")}
    assert r == {"lost_node_s": 0, "t_ckpt": 512, "t_pre": 512, "ckpt_node_s": 512 * 512,
                 "restart_node_s": 512 * 512, "preemptions": 1, "checkpoints": 1,
                 "ckpt_by_system": 1}
    s = summarize(e.results.arrays(), total_nodes=1024)
    # Eqs. 18-19: the system pays the write and the read of B1's 512 nodes.
    assert s["chr_ckpt_sys"] == pytest.approx(512 * 512 / 3600)
    assert s["chr_pre_sys"] == pytest.approx(512 * 512 / 3600)
    assert s["chr_ckpt_jobs"] == 0 and s["lost_node_h"] == 0


def test_jit_on_a_pool_waits_for_the_latest_checkpoint_and_prunes_the_greedy_set():
    """nodes:64, wcjs ckpt=jit. Z (16 nodes) and W (26, 2,000 s) from 0, Y (12) from 300,
    X (10) from 1,000: the pool is full. RTJ 9 (28 nodes) at 1,800. No job covers 28 alone
    (W, the largest, has 26). Cost per node (all ESD 1, W_sd log2 3): X 1 (800 s computed),
    Y 1 + ln(1500/900), Z 1 + ln(1800/900), W x5 (200 s left). Greedy cheapest per node:
    X, Y, Z = 38 >= 28; then the dearest go back if not needed: Z (38 - 16 < 28) and Y
    (26 < 28) stay, X goes back (28). Y writes for 48 s, Z for 64 s (4 s per node): RTJ 9
    starts at 1,864, not at 1,848 when Y is done and requeued; Y may not restart on the
    claim's nodes meanwhile."""
    e, pol = build("nodes:64", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(26, 0, 16, 10_000), batch(27, 0, 26, 2000), batch(25, 300, 12, 10_000),
                    batch(24, 1000, 10, 10_000), rtj(9, 1800, 28, 500)])
    x, y, z, w = 24, 25, 26, 27
    costs = record_costs(pol)
    log = Passes(pol)
    until(e, 1800)
    assert costs == pytest.approx({x: 10 * LOG3, y: 12 * (1 + math.log(1500 / 900)) * LOG3,
                                   z: 16 * (1 + math.log(2)) * LOG3,
                                   w: 26 * 5 * (1 + math.log(2)) * LOG3}, rel=1e-12)
    assert [sorted(j.id for j in v.victims) for v in log.vacates] == [[y, z]]
    assert state(e, y) is CHECKPOINTING and state(e, z) is CHECKPOINTING
    until(e, 1848)
    assert state(e, y) is PREEMPTED and e.state.free_nodes == 12 and state(e, 9) is QUEUED
    until(e, 1863)
    assert state(e, y) is PREEMPTED and state(e, 9) is QUEUED
    until(e, 1864)
    assert state(e, 9) is RUNNING and e.jobs[9].first_start == 1864
    finish(e)
    assert col(e, "lost_node_s")[y] == col(e, "lost_node_s")[z] == 0
    assert col(e, "t_ckpt")[y] == 48 and col(e, "t_pre")[z] == 64


def test_jit_pool_claim_holds_back_the_free_nodes_it_needs():
    """nodes:64, rt-preempt ckpt=jit. A (32 nodes) and B (16) from 0, 16 free. RTJ 9 (40
    nodes) at 100 is 24 short: A alone covers it (B does not) -> A writes for 128 s. The
    claim needs 40 = A's 32 + 8 of the free 16, which it holds back: batch S (12 nodes,
    100 s) arriving at 110 would fit the 16 free nodes but not the 8 left. RTJ 9 starts at
    228, leaving 64 - 40 - 16 = 8 free; S starts when RTJ 9 ends, at 328."""
    e, pol = build("nodes:64", "rt-preempt", ["ckpt=jit"],
                   [batch(1, 0, 32, 5000), batch(2, 0, 16, 5000), rtj(9, 100, 40, 100),
                    batch(5, 110, 12, 100)])
    until(e, 100)
    assert state(e, 1) is CHECKPOINTING and state(e, 2) is RUNNING
    until(e, 227)
    assert state(e, 5) is QUEUED and state(e, 9) is QUEUED and e.state.free_nodes == 16
    until(e, 228)
    assert state(e, 9) is RUNNING and e.state.free_nodes == 8
    finish(e)
    start = col(e, "first_start")
    assert start[9] == 228 and start[5] == 328


def test_jit_claim_waits_only_for_its_own_checkpoints():
    """nodes:64, rt-preempt ckpt=jit. V (8 nodes) and W (32) checkpointable, K (16) and O
    (8, ends at 140) not, all from 0. RTJ 8 (40) at 100: greedy, largest first, W (32) +
    V (8) = 40 -> V writes until 132, W until 228. V is requeued at 132 and restarts at 140 on O's
    nodes (the claim holds back 8 of the then 16 free). RTJ 9 (8) at 200 finds no free
    node and takes V, which writes again until 232. Every checkpoint RTJ 8 asked for is
    written at 228 and 40 nodes are free then: RTJ 8 starts at 228, not at 232 (when V,
    checkpointing for RTJ 9's claim, is done)."""
    e, pol = build("nodes:64", "rt-preempt", ["ckpt=jit"],
                   [batch(1, 0, 8, 5000), batch(2, 0, 32, 5000),
                    batch(3, 0, 16, 5000, checkpointable=False),
                    batch(4, 0, 8, 140, checkpointable=False), rtj(8, 100, 40, 100),
                    rtj(9, 200, 8, 100)])
    log = Passes(pol)
    until(e, 200)
    assert [(v.time, v.rtj, [j.id for j in v.victims]) for v in log.vacates] == [
        (100, 8, [1, 2]), (200, 9, [1])]
    assert e.jobs[1].history[-1][:2] == (200, CHECKPOINTING) and e.jobs[1].last_start == 140
    until(e, 228)
    assert state(e, 8) is RUNNING and e.jobs[8].first_start == 228


# ---------------------------------------------------------------------- 5. schemes
@pytest.mark.parametrize(("scheme", "engine", "walltime", "t", "rt", "expected"), [
    # Eqs. 1-5: J1 restarts from scratch at 2,000 (no read): lost 1,500 s, ends 5,000.
    ("none", {}, 3000, 1500, 500,
     dict(end=5000, lost=1500, t_ckpt=0, t_pre=1500, restart=0, checkpoints=0, sys=1)),
    # Eqs. 6-10, interval 600: compute 0-600, checkpoint 600-1112 (work 600), compute
    # 1112-1500: preempted with 388 s since its checkpoint (ckpTgap). Resumes at 2,000:
    # read 512 s, then 2,400 s of work from 600 with checkpoints at 1200, 1800, 2400 ->
    # 2512 + 2400 + 3 x 512 = 6,448; t_ckpt 4 x 512; t_pre 388 + 512.
    ("sys", {"sys_interval": 600.0}, 3000, 1500, 500,
     dict(end=6448, lost=388, t_ckpt=2048, t_pre=900, restart=512, checkpoints=4, sys=1)),
    # Eqs. 11-15, 10%: n = floor(20000 x 0.1 / 512) = 3, interval ceil(20120 / 4) = 5,030.
    # Checkpoint 5030-5542, preempted at 7,000 with 1,458 s since; RTJ 7,000-8,000; read
    # 8000-8512; 14,970 s left with checkpoints at 10060, 15090 -> 8512 + 14970 + 1024.
    ("app", {"app_overhead_pct": 10.0}, 20_000, 7000, 1000,
     dict(end=24_506, lost=1458, t_ckpt=1536, t_pre=1970, restart=512, checkpoints=3, sys=0)),
    # 5%: n = floor(1000 / 512) = 1, interval ceil(20120 / 2) = 10,060. Checkpoint
    # 10060-10572, preempted at 12,000 with 1,428 s since; read 13000-13512; 9,940 s left,
    # no checkpoint before the end -> 23,452.
    ("app", {"app_overhead_pct": 5.0}, 20_000, 12_000, 1000,
     dict(end=23_452, lost=1428, t_ckpt=512, t_pre=1940, restart=512, checkpoints=1, sys=0)),
    # Eqs. 16-20: the RTJ waits for the 512 s write; J1 loses nothing, reads 512 s.
    ("jit", {}, 3000, 1500, 500,
     dict(end=4524, lost=0, t_ckpt=512, t_pre=512, restart=512, checkpoints=1, sys=1)),
])
def test_rt_preempt_schemes_by_hand(scheme, engine, walltime, t, rt, expected):
    """bgq:1 (one midplane), rt-preempt: batch J1 (512 nodes, walltime = runtime) from 0,
    RTJ 9 (512 nodes) at `t` preempts it; J1 resumes when RTJ 9 ends."""
    periodic = SCHEMES[scheme][1]
    e, pol = build("bgq:1", "rt-preempt", [f"ckpt={scheme}"],
                   [batch(1, 0, 512, walltime), rtj(9, t, 512, rt)], periodic=periodic, **engine)
    assert pol.periodic_checkpoints() == periodic
    finish(e)
    r = {k: col(e, k) for k in ("first_start", "end", "lost_node_s", "t_ckpt", "t_pre",
                                "restart_node_s", "ckpt_node_s", "checkpoints",
                                "ckpt_by_system", "preemptions")}
    jit = 512 if scheme == "jit" else 0
    assert r["first_start"][9] == t + jit and r["end"][9] == t + jit + rt
    assert r["preemptions"] == {1: 1, 9: 0}
    got = {"end": r["end"][1], "lost": r["lost_node_s"][1] / 512, "t_ckpt": r["t_ckpt"][1],
           "t_pre": r["t_pre"][1], "restart": r["restart_node_s"][1] / 512,
           "checkpoints": r["checkpoints"][1], "sys": r["ckpt_by_system"][1]}
    assert got == expected
    assert r["ckpt_node_s"][1] == 512 * expected["t_ckpt"]
    s = summarize(e.results.arrays(), total_nodes=512)
    owner = "chr_ckpt_sys" if expected["sys"] else "chr_ckpt_jobs"
    other = "chr_ckpt_jobs" if expected["sys"] else "chr_ckpt_sys"
    assert s[owner] == pytest.approx(expected["t_ckpt"] * 512 / 3600)  # eqs. 8, 15, 18
    assert s[other] == 0  # eqs. 3, 10, 13, 20
    assert s["chr_pre_sys"] == pytest.approx(expected["t_pre"] * 512 / 3600)  # eqs. 4, 9, 14, 19
    assert s["lost_node_h"] == pytest.approx(expected["lost"] * 512 / 3600)


def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def tiny_trace(tmp_path):
    """Four small jobs on a 1,024-node machine (SWF, 18 fields)."""
    rows = [f"{i} {i * 10} -1 {300 + i} 512 -1 -1 512 {400 + i} -1 1 1 1 -1 0 -1 -1 -1"
            for i in range(1, 5)]
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 1024\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("policy", "opts", "periodic"), [
    ("wcjs", [], "none"), ("wcjs", ["--opt", "ckpt=app"], "app"),
    ("rt-preempt", ["--opt", "ckpt=sys"], "sys"), ("rt-preempt", ["--opt", "ckpt=none"], "none"),
])
def test_cli_fills_ckpt_from_the_scheme(tmp_path, tiny_trace, policy, opts, periodic):
    proc = schedd("simulate", "--trace", str(tiny_trace), "--cluster", "bgq:2", "--policy",
                  policy, *opts, "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["run"]["engine_options"]["checkpoint"]["periodic"] == periodic


def test_cli_refuses_a_ckpt_clash_in_one_sentence(tmp_path, tiny_trace):
    proc = schedd("simulate", "--trace", str(tiny_trace), "--cluster", "bgq:2", "--policy",
                  "wcjs", "--opt", "ckpt=app", "--ckpt", "sys", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "policy wcjs with these options preempts assuming --ckpt app, not --ckpt sys" in lines[0]
    assert not (tmp_path / "o" / "summary.json").exists()


@pytest.mark.parametrize("policy", ["rt-hpq", "easy-wfp2"])
def test_cli_non_preempting_policies_accept_any_ckpt(tmp_path, tiny_trace, policy):
    """Non-preempting policies work with any periodic checkpoint mode (Policy's default
    `periodic_checkpoints()` is None), like `easy`: `--ckpt sys` must not be refused with
    "preempts assuming --ckpt none ... change the policy's ckpt option" (they have none)."""
    proc = schedd("simulate", "--trace", str(tiny_trace), "--cluster", "bgq:2", "--policy",
                  policy, "--ckpt", "sys", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------- 6. rt-hpq
@pytest.mark.parametrize(("policy", "rtj_start", "batch_start"), [
    ("rt-hpq", 1000, 1100), ("easy-wfp2", 1100, 1000)])
def test_rt_hpq_starts_rtjs_before_earlier_batch_jobs(policy, rtj_start, batch_start):
    """bgq:2 full (J1 ends 1,000, J2 5,000). Batch B3 (512, 100 s) waits from 10, RTJ 9
    (512, 100 s) from 500. At 1,000 M00 frees: rt-hpq starts RTJ 9 (B3 has the higher wfp2
    score, 990^2 / 100^3 vs 500^2 / 100^3, and was submitted first); easy-wfp2, treating
    RTJ 9 as batch, starts B3. The other one follows at 1,100."""
    e, _ = build("bgq:2", policy, (),
                 [batch(1, 0, 512, 1000), batch(2, 0, 512, 5000), batch(3, 10, 512, 100),
                  rtj(9, 500, 512, 100)])
    finish(e)
    start = col(e, "first_start")
    assert (start[9], start[3]) == (rtj_start, batch_start)


@pytest.mark.parametrize(("blocking", "starts"), [
    ("backfill", {9: 3000, 5: 1000, 6: 3500}), ("strict", {9: 3000, 5: 3500, 6: 3500})])
def test_rt_hpq_backfill_and_strict_blocking(blocking, starts):
    """bgq:2: J1 (M00, ends 1,000), J2 (M01, ends 3,000). RTJ 9 (1,024 nodes, 500 s) at 100
    waits for the whole machine: EASY reserves it at 3,000. Batch S (512, 500 s) and L
    (512, 5,000 s) at 200. At 1,000 M00 frees: with backfill S runs 1,000-1,500 (ends
    before 3,000) but L would delay RTJ 9 and waits; strict starts no batch job while an
    RTJ waits. RTJ 9 starts at 3,000 either way; the rest at its end, 3,500."""
    e, _ = build("bgq:2", "rt-hpq", [f"blocking={blocking}"],
                 [batch(1, 0, 512, 1000), batch(2, 0, 512, 3000), rtj(9, 100, 1024, 500),
                  batch(5, 200, 512, 500), batch(6, 200, 512, 5000)])
    finish(e)
    start = col(e, "first_start")
    assert {j: start[j] for j in starts} == starts


@pytest.mark.parametrize("blocking", ["backfill", "strict"])
def test_rt_hpq_batch_jobs_start_at_the_instant_no_rtj_waits(blocking):
    """bgq:2: J1 (M00) and J2 (M01) end at 1,000; batch S (512, 100 s) waits from 50, RTJ
    9 (512) from 100. At 1,000 RTJ 9 takes M00 and S, no RTJ waiting any more, M01."""
    e, _ = build("bgq:2", "rt-hpq", [f"blocking={blocking}"],
                 [batch(1, 0, 512, 1000), batch(2, 0, 512, 1000), batch(5, 50, 512, 100),
                  rtj(9, 100, 512, 5000)])
    until(e, 1000)
    assert (block(e, 9), block(e, 5)) == ("M00", "M01")
    finish(e)


# ---------------------------------------------------------------------- 7. rt-preempt
@pytest.mark.parametrize(("j4_runtime", "rtj_nodes", "victims", "where"), [
    (50, 1024, [3], "M02-M03"),     # M00-M01 costs 1,024 (P), M02-M03 512 (J3; M03 free)
    (50, 2048, [1, 3], "M00-M03"),
    (5000, 512, [3], "M02"),        # M00, M01 cost 1,024 (their parent P); M02, M03 512
    (5000, 1024, [1], "M00-M01"),   # 1,024 (P) against 512 + 512 (J3, J4): by name
])
def test_rt_preempt_takes_the_partition_with_the_fewest_preempted_nodes(
        j4_runtime, rtj_nodes, victims, where):
    """bgq:4, rt-preempt ckpt=none: P (1,024 nodes) on M00-M01, J3 (512) on M02, J4 (512)
    on M03, ending at `j4_runtime`. An RTJ at 100 preempts the fewest nodes."""
    e, pol = build("bgq:4", "rt-preempt", ["ckpt=none"],
                   [batch(1, 0, 1024, 5000), batch(3, 0, 512, 5000),
                    batch(4, 0, 512, j4_runtime), rtj(9, 100, rtj_nodes, 100)])
    log = Passes(pol)
    until(e, 100)
    assert [sorted(j.id for j in v.victims) for v in log.vacates] == [victims]
    assert block(e, 9) == where
    finish(e)


@pytest.mark.parametrize(("need", "victims"), [
    (12, [2]),      # jobs covering 12 alone: 1 (40) and 2 (16) -> the fewest nodes, 2
    (40, [1]),
    (41, [1, 2]),   # none alone; greedy, largest first: 40, then 16 -> 56 >= 41
])
def test_rt_preempt_on_a_pool_single_covering_job(need, victims):
    """nodes:64, rt-preempt ckpt=none: jobs 1 (40 nodes), 2 (16), 3 (8) fill the pool; an
    RTJ of `need` nodes at 100."""
    e, pol = build("nodes:64", "rt-preempt", ["ckpt=none"],
                   [batch(1, 0, 40, 5000), batch(2, 0, 16, 5000), batch(3, 0, 8, 5000),
                    rtj(9, 100, need, 100)])
    log = Passes(pol)
    until(e, 100)
    assert [sorted(j.id for j in v.victims) for v in log.vacates] == [victims]
    assert state(e, 9) is RUNNING
    finish(e)


def test_rt_preempt_keeps_an_unplaceable_rtj_ahead_of_batch_jobs():
    """bgq:2, rt-preempt ckpt=jit: N1 (M00, ends 1,000) and N2 (M01, ends 2,000) cannot
    checkpoint. Batch B (512, 5,000 s) waits from 10, RTJ 9 (1,024 nodes) from 100 with
    nothing to preempt. At 1,000 M00 frees: RTJ 9 stays ahead of the batch queue with an
    EASY reservation at 2,000, which B (ending at 6,000) would delay: B waits, RTJ 9
    starts at 2,000, B at its end."""
    e, _ = build("bgq:2", "rt-preempt", ["ckpt=jit"],
                 [batch(1, 0, 512, 1000, checkpointable=False),
                  batch(2, 0, 512, 2000, checkpointable=False), batch(5, 10, 512, 5000),
                  rtj(9, 100, 1024, 3000)])
    finish(e)
    start = col(e, "first_start")
    assert (start[9], start[5]) == (2000, 5000)
    assert set(col(e, "preemptions").values()) == {0}


def test_a_partition_with_a_down_midplane_is_not_a_candidate():
    """bgq:2, rt-preempt ckpt=none, node failures (MTBF 2,000 s, repair 1,000 s, seed 36;
    the engine's own draws replayed): M01, idle, goes down at t_fail < 1,000 until
    t_repair. B1 (512) runs on M00 from 0; RTJ 9 (1,024 nodes) at 1,000 would preempt B1
    alone, but M00-M01 has a down midplane: nothing is preempted until the repair, when
    RTJ 9 takes M00-M01 at once. Everything ends (B1 at t_repair + 100 + 5,000) before the
    next failure."""
    seed, mtbf, mttr = 36, 2000.0, 1000.0
    rng = random.Random(seed)
    t_fail = rng.expovariate(1 / mtbf)
    t_next = t_fail + rng.expovariate(1 / mtbf)
    unit = rng.randrange(2)
    t_repair = t_fail + rng.expovariate(1 / mttr)
    assert unit == 1 and t_fail < 1000 < t_repair < 3000 and t_next > 8000
    cluster = parse_cluster("bgq:2")
    pol = make_policy("rt-preempt", ["ckpt=none"], cluster)
    e = Engine(cluster, pol, seed=seed, options=EngineOptions(
        checkpoint=CheckpointPolicy(periodic="none"), mtbf_s=mtbf, mttr_s=mttr))
    e.submit(batch(1, 0, 512, 5000))
    e.submit(rtj(9, 1000, 1024, 100))
    until(e, t_repair - 1e-6)
    assert e.state.free_nodes == 0 and list(e.running) == [1]  # M00 busy, M01 down
    assert state(e, 1) is RUNNING and state(e, 9) is QUEUED
    until(e, t_repair)
    assert block(e, 9) == "M00-M01" and e.jobs[9].first_start == t_repair
    assert moves(e, 1)[-1] == (t_repair, PREEMPTED)
    finish(e)
    assert col(e, "failures") == {1: 0, 9: 0}


def test_rt_preempt_on_a_pool_greedy_set():
    """nodes:64, rt-preempt ckpt=none: jobs of 24, 20, 12 and 8 nodes fill the pool; an
    RTJ of 40. None covers it alone; every node costs the same, so the greedy takes the
    largest first: 24 + 20 = 44 >= 40, and neither can go back. (20 + 12 + 8 = 40 would
    preempt fewer nodes: the pool choice is a heuristic, docs/realtime.md point 10.)"""
    e, pol = build("nodes:64", "rt-preempt", ["ckpt=none"],
                   [batch(1, 0, 24, 5000), batch(2, 0, 20, 5000), batch(3, 0, 12, 5000),
                    batch(4, 0, 8, 5000), rtj(9, 100, 40, 100)])
    log = Passes(pol)
    until(e, 100)
    assert [sorted(j.id for j in v.victims) for v in log.vacates] == [[1, 2]]
    assert state(e, 9) is RUNNING and e.state.free_nodes == 4
    finish(e)


def test_rt_preempt_never_takes_a_checkpointing_job_on_a_pool():
    """nodes:64, rt-preempt ckpt=jit: jobs 1 and 2 (32 nodes each). RTJ 8 (16) at 100:
    both cover it alone at the same cost -> job 1 (by id) writes for 128 s. RTJ 9 (16) at
    110: job 1 is checkpointing, so job 2 is the victim."""
    e, pol = build("nodes:64", "rt-preempt", ["ckpt=jit"],
                   [batch(1, 0, 32, 5000), batch(2, 0, 32, 5000), rtj(8, 100, 16, 100),
                    rtj(9, 110, 16, 100)])
    log = Passes(pol)
    until(e, 110)
    assert [(v.rtj, [j.id for j in v.victims]) for v in log.vacates] == [(8, [1]), (9, [2])]
    finish(e)
    start = col(e, "first_start")
    assert (start[8], start[9]) == (228, 238)


# ---------------------------------------------------------------------- 8. properties
REQUEUE = "--requeue-remaining"  # an engine flag among a variant's options
PROP_CLUSTERS = {spec: parse_cluster(spec) for spec in ("bgq:8", "nodes:64")}
VARIANTS = [("rt-hpq", ()),
            *(("rt-preempt", (f"ckpt={s}",)) for s in ("none", "sys", "app", "jit")),
            ("wcjs", ("ckpt=none",)), ("wcjs", ("ckpt=jit",)),
            ("wcjs", ("ckpt=jit", "blocking=strict")), ("wcjs", ("ckpt=jit", "blocking=backfill")),
            ("wcjs", ("ckpt=app", REQUEUE)), ("rt-preempt", ("ckpt=sys", REQUEUE))]
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def node_counts(cluster: Cluster) -> st.SearchStrategy[int]:
    if isinstance(cluster, BlockCluster):  # a partition size (small ones more often)
        sizes = cluster.sizes
        lows = {s: (sizes[i - 1] if i else 0) for i, s in enumerate(sizes)}
        small = [sizes[0]] * 3 + list(sizes[:2]) + list(sizes)
        return st.sampled_from(small).flatmap(lambda s: st.integers(lows[s] + 1, s))
    return st.one_of(st.integers(1, 16), st.integers(1, cluster.total_nodes))


@st.composite
def rt_workloads(draw, cluster: Cluster) -> list[JobSpec]:
    """10-30 jobs, ~20% real-time, ~1/6 unable to checkpoint, some killed at walltime."""
    n = draw(st.integers(10, 30), label="jobs")
    t = 0.0
    specs = []
    for job_id in range(1, n + 1):
        t += draw(st.sampled_from([0, 0, 0, 10, 60, 300, 900]), label="gap")
        realtime = draw(st.integers(0, 4), label="rt") == 0
        # Real-time jobs short, batch jobs long: the machine is busy when RTJs arrive.
        runtime = float(draw(st.integers(60, 3000 if realtime else 20_000), label="runtime"))
        walltime = draw(st.one_of(st.just(runtime), st.integers(60, 24_000).map(float)),
                        label="walltime")
        specs.append(JobSpec(
            job_id, t, runtime, draw(node_counts(cluster), label="nodes"), walltime,
            job_class=JobClass.REALTIME if realtime else JobClass.BATCH,
            checkpointable=draw(st.integers(0, 5), label="ckpt") > 0))
    return specs


def simulate(name: str, opts: Sequence[str], cluster: Cluster, specs: list[JobSpec]
             ) -> tuple[Engine, Passes]:
    policy = make_policy(name, [o for o in opts if o != REQUEUE], cluster)
    assert isinstance(policy, RealtimePolicy)
    periodic = policy.periodic_checkpoints() or "none"  # None: a policy that never preempts
    engine = Engine(cluster, policy, options=EngineOptions(checkpoint=CheckpointPolicy(
        periodic=periodic, sys_interval=1500.0, app_overhead_pct=10.0),  # type: ignore[arg-type]
        requeue_remaining=REQUEUE in opts))
    passes = Passes(policy)
    engine.feed(specs)
    validate(engine)
    while engine.step():
        validate(engine)
    return engine, passes


def check_run(name: str, opts: Sequence[str], engine: Engine, passes: Passes,
              specs: list[JobSpec]) -> None:
    policy = passes.policy
    scheme = policy.scheme
    by_id = {s.id: s for s in specs}
    r = engine.results.arrays()
    ids = r["id"].tolist()
    assert sorted(ids) == sorted(by_id) and len(ids) == len(set(ids))  # each retired once
    assert not engine.jobs and not engine.queue and not engine.running and not policy.claims
    assert engine.state.free_nodes == engine.cluster.total_nodes
    start = dict(zip(ids, r["first_start"].tolist(), strict=True))
    pre = dict(zip(ids, r["preemptions"].tolist(), strict=True))
    wall = dict(zip(ids, r["walltime"].tolist(), strict=True))
    for job_id, spec in by_id.items():
        assert start[job_id] >= spec.submit
        assert wall[job_id] == spec.walltime  # a requeue never changes the request
        if spec.job_class is JobClass.REALTIME:
            assert pre[job_id] == 0, f"RTJ {job_id} was preempted"
        if not spec.checkpointable and scheme != "none":
            assert pre[job_id] == 0, f"job {job_id} cannot checkpoint but was preempted"
    if name == "rt-hpq":
        assert not passes.vacates and set(pre.values()) <= {0}
        return
    mode = SCHEMES[scheme][0]
    for v in passes.vacates:
        spec = by_id[v.rtj]
        assert spec.job_class is JobClass.REALTIME
        assert v.modes == [mode] * len(v.victims)
        for victim in v.victims:
            assert victim.job_class is not JobClass.REALTIME
            assert victim.checkpointable or scheme == "none"
        if mode is PreemptMode.JIT:
            # Starts once every victim's checkpoint is written, never earlier, and then at
            # once (even if a victim restarted and was taken again meanwhile:
            # test_jit_claim_waits_only_for_its_own_checkpoints).
            assert start[v.rtj] == max(v.ckpt_ends.values()), (v, start[v.rtj])
        else:
            assert start[v.rtj] == v.time
        if isinstance(policy, Wcjs):
            size = engine.cluster.alloc_size(spec.nodes)
            assert size is not None
            thr = policy.rt_thr[category(size, spec.walltime, 4096, 7200)]
            assert v.time >= spec.submit + (thr - 1) * spec.walltime  # high priority
            for victim in v.victims:
                assert v.victim_alloc[victim.id] <= size  # no larger parent
                cat = category(v.victim_alloc[victim.id], v.victim_walltime[victim.id], 4096,
                               7200)
                assert v.victim_esd[victim.id] <= policy.bj_thr[cat]
    assert sum(len(v.victims) for v in passes.vacates) == sum(pre.values())


@pytest.mark.parametrize("cluster_spec", list(PROP_CLUSTERS))
@pytest.mark.parametrize(("name", "opts"), VARIANTS,
                         ids=[f"{n}-{'-'.join(o) or 'default'}" for n, o in VARIANTS])
def test_random_workloads_keep_the_realtime_promises(name, opts, cluster_spec):
    cluster = PROP_CLUSTERS[cluster_spec]

    @SETTINGS
    @given(specs=rt_workloads(cluster))
    def check(specs: list[JobSpec]) -> None:
        engine, passes = simulate(name, opts, cluster, specs)
        check_run(name, opts, engine, passes, specs)
        again, _ = simulate(name, opts, cluster, specs)
        a, b = engine.results.arrays(), again.results.arrays()
        assert a.keys() == b.keys()
        for key in a:
            assert np.array_equal(a[key], b[key]), f"column {key} differs"

    check()


# ---------------------------------------------------------------------- 9. requeue remaining
@pytest.mark.parametrize("remaining", [False, True])
def test_requeue_with_the_remaining_walltime_changes_wfp2_order_esd_and_category(remaining):
    """bgq:2, wcjs ckpt=jit, every RTJ high priority at once. A (512 nodes, 10,000 s,
    narrow-long) on M00 and X (512, 20,000 s) on M01 from 0; C (512, 4,000 s) waits from
    3,000. RTJ 9 (512, 3,000 s) at 6,000: A and X cost the same (ESD 1, 6,000 s since
    their start, far from their end), so the first by name, M00, is vacated: A writes its
    JIT checkpoint 6,000-6,512 and is requeued keeping all 6,000 s of work; RTJ 9 runs
    6,512-9,512.

    * Requeued with its request, A keeps walltime 10,000: at 7,000 its ESD is (10,000 +
      7,000) / 10,000 = 1.7 and it is narrow-long. At 9,512 wfp2 ranks C (6,512^2 /
      4,000^3 = 6.63e-4) before A (9,512^2 / 10,000^3 = 9.05e-5): C runs 9,512-13,512 and
      A 13,512 + 512 (read) + 4,000 = 18,024.
    * With --requeue-remaining (kill_job_wOverhead): walltime 10,000 - 6,000 = 4,000; ESD
      (4,000 + 7,000) / 4,000 = 2.75; narrow-short (4,000 <= 7,200); wfp2 9,512^2 / 4,000^3
      = 1.41e-3 puts A first: A runs 9,512 + 512 + 4,000 = 14,024, then C to 18,024.

    Either way the result's walltime is the request (10,000): the metrics' categories do not
    move."""
    e, pol = build("bgq:2", "wcjs", ["ckpt=jit", HIGH_AT_ONCE],
                   [batch(1, 0, 512, 10_000), batch(2, 0, 512, 20_000),
                    batch(3, 3000, 512, 4000), rtj(9, 6000, 512, 3000)],
                   requeue_remaining=remaining)
    until(e, 6000)
    assert state(e, 1) is CHECKPOINTING and list(pol.claims) == [9]
    until(e, 7000)
    a = e.jobs[1]
    assert state(e, 1) is PREEMPTED and a.walltime == (4000 if remaining else 10_000)
    assert esd_waiting(a, 7000) == pytest.approx(2.75 if remaining else 1.7)
    assert isinstance(pol, Wcjs) and pol.category_of(a) == (0 if remaining else 1)
    assert [j.id for j in wfp2_order(e.queue, 9512, 1024)] == ([1, 3] if remaining else [3, 1])
    finish(e)
    start, end = col(e, "first_start"), col(e, "end")
    assert start[9] == 6512 and end[9] == 9512
    if remaining:
        assert (end[1], start[3], end[3]) == (14_024, 14_024, 18_024)
    else:
        assert (start[3], end[3], end[1]) == (9512, 13_512, 18_024)
    assert col(e, "walltime")[1] == col(e, "orig_walltime")[1] == 10_000
    assert col(e, "final_state")[1] == 0  # completed: the work bound is the whole request


@pytest.mark.parametrize(("scheme", "walltime"), [("sys", 8000), ("none", 10_000)])
def test_requeue_remaining_takes_off_only_the_work_kept(scheme, walltime):
    """rt-preempt on bgq:2 with --requeue-remaining. A (512 nodes, 10,000 s) on M00 from 0,
    X (512, 20,000 s, cannot checkpoint) on M01; RTJ 9 (512, 1,000 s) at 3,000 takes M00.
    SYS-CKPT every 2,000 compute s (a write of 512 s): A computed 0-2,000, checkpointed
    2,000-2,512 and computed to 2,488 s of work by 3,000; it keeps the 2,000 of its last
    checkpoint, so it waits with 10,000 - 2,000 = 8,000. NO-CKPT keeps nothing: 10,000.
    A still completes its whole 10,000 s of work."""
    e, _ = build("bgq:2", "rt-preempt", [f"ckpt={scheme}"],
                 [batch(1, 0, 512, 10_000), batch(2, 0, 512, 20_000, checkpointable=False),
                  rtj(9, 3000, 512, 1000)],
                 periodic=scheme, sys_interval=2000.0, requeue_remaining=True)
    until(e, 3000)
    assert state(e, 1) is PREEMPTED and e.jobs[1].walltime == walltime
    finish(e)
    assert col(e, "final_state")[1] == 0 and col(e, "walltime")[1] == 10_000
    assert col(e, "lost_node_s")[1] == 512 * (488 if scheme == "sys" else 3000)


def test_cli_requeue_remaining_reaches_the_engine(tmp_path, tiny_trace):
    proc = schedd("simulate", "--trace", str(tiny_trace), "--cluster", "bgq:2", "--policy",
                  "wcjs", "--requeue-remaining", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["run"]["engine_options"]["requeue_remaining"] is True
