"""Job lifecycle mechanics against hand-worked numbers (real-time paper eqs. 1-20, 34;
hybrid paper §III-A; LOS paper ECCs). Each test drives the engine by hand: policy=None, the
test applies decisions at chosen instants."""

from __future__ import annotations

import math
import random
import re

import pytest

from schedd.core.checkpoint import CheckpointPolicy, app_interval, daly_interval, hybrid_cost
from schedd.core.cluster import CheckpointModel, NodePool
from schedd.core.decisions import (
    DecisionError,
    Preempt,
    PreemptMode,
    Release,
    Reserve,
    Resize,
    Start,
)
from schedd.core.engine import Ecc, Engine, EngineOptions
from schedd.core.job import JobClass, JobSpec, JobState, Notice
from schedd.core.lifecycle import IllegalTransition, transition
from schedd.core.validate import validate


def engine(nodes: int = 256, **opts) -> Engine:
    ckpt = opts.pop("checkpoint", CheckpointPolicy(periodic="trace"))
    return Engine(NodePool(nodes), None, options=EngineOptions(checkpoint=ckpt, **opts))


def at(e: Engine, t: float) -> None:
    """Advance to t, handling every event up to and including t."""
    e.run(until=t)
    validate(e)


def row(e: Engine, job_id: int) -> dict:
    a = e.results.arrays()
    i = a["id"].tolist().index(job_id)
    return {k: v[i].item() for k, v in a.items()}


def test_checkpoint_time_eq34():
    m = CheckpointModel()
    # 512 nodes: 4 I/O nodes x 4 GB/s = 16 GB/s; 8,192 GB / 16 = 512 s.
    assert m.seconds(512) == 512
    # 6,912 nodes reach the 216 GB/s cap exactly: 110,592 / 216 = 512 s.
    assert m.seconds(6912) == 512
    # 8,192 nodes: 131,072 / 216 = 606.8 -> 607 s; the whole Mira: 786,432 / 216 -> 3,641 s.
    assert m.seconds(8192) == 607
    assert m.seconds(49152) == 3641
    # A job smaller than one I/O group still uses one I/O node: 64 x 16 / 4 = 256 s.
    assert m.seconds(64) == 256


def test_app_ckpt_rule_paper_example():
    # §7.1.4: 10% of a 120-minute walltime with 5-minute checkpoints -> 2 checkpoints,
    # spread evenly: the authors' interval ceil((7200 + 120) / 3) = 2,440 s.
    assert app_interval(7200, 300, 10) == 2440
    assert app_interval(7200, 300, 5) == 3660  # floor(360 / 300) = 1 checkpoint
    assert app_interval(7200, 800, 10) is None  # 720 s budget < one checkpoint


def test_daly_and_hybrid_costs():
    d, m = 600.0, 18000.0
    expected = math.sqrt(2 * d * m) * (1 + math.sqrt(d / (2 * m)) / 3 + (d / (2 * m)) / 9) - d
    assert daly_interval(d, m) == pytest.approx(expected)
    assert daly_interval(d, m) == pytest.approx(4256.2, abs=0.1)
    assert daly_interval(50_000, 20_000) == 20_000  # cost >= 2 x MTBF: interval = MTBF
    assert hybrid_cost(1023) == 600 and hybrid_cost(1024) == 1200


def test_complete_and_kill_at_walltime():
    e = engine(10)
    e.submit(JobSpec(1, 0, runtime=100, nodes=4, walltime=200))
    e.submit(JobSpec(2, 0, runtime=100, nodes=4, walltime=50))
    at(e, 0)
    e.apply(Start(1))
    e.apply(Start(2))
    at(e, 1000)
    r1, r2 = row(e, 1), row(e, 2)
    assert (r1["end"], r1["executed"], r1["final_state"]) == (100, 100, 0)  # completed
    assert (r2["end"], r2["executed"], r2["final_state"]) == (50, 50, 1)  # killed
    assert r1["useful_node_s"] == 400 and r2["useful_node_s"] == 200


def test_no_ckpt_preemption_eqs_1_5():
    e = engine(10, checkpoint=CheckpointPolicy(periodic="none"))
    e.submit(JobSpec(1, 0, runtime=1000, nodes=4, walltime=2000))
    at(e, 0)
    e.apply(Start(1))
    at(e, 300)
    e.apply(Preempt(1, PreemptMode.RESTART))
    assert e.jobs[1].state is JobState.PREEMPTED and e.state.free_nodes == 10
    at(e, 400)
    e.apply(Start(1))
    at(e, 5000)
    r = row(e, 1)
    # Eq. 2: t_pre = time run in the lost execution (300 s); eq. 4: x 4 nodes.
    assert r["t_pre"] == 300 and r["lost_node_s"] == 1200
    assert r["end"] == 1400 and r["executed"] == 1300 and r["wait"] == 0
    assert r["t_ckpt"] == 0 and r["ckpt_node_s"] == 0  # eqs. 1, 3, 5
    assert r["preemptions"] == 1


def test_sys_ckpt_preemption_eqs_6_10():
    # 128 nodes x 0.5 GB at 4 GB/s (one I/O node): C = 16 s; interval 200 compute seconds.
    e = engine(256, checkpoint=CheckpointPolicy(periodic="sys", sys_interval=200))
    e.submit(JobSpec(1, 0, runtime=1000, nodes=128, walltime=2000, ckpt_gb_per_node=0.5))
    at(e, 0)
    e.apply(Start(1))
    # Timeline: compute 0-200, ckpt 200-216, compute 216-416 (work 400), ckpt 416-432,
    # compute 432-500 (work 468). Preempt at 500: back to the checkpoint at work 400.
    at(e, 500)
    e.apply(Preempt(1, PreemptMode.LAST_CHECKPOINT))
    x = e.exec_record(1)
    assert x.work0 == 400 and x.checkpoints == 2
    at(e, 600)
    e.apply(Start(1))
    # Restart: read 16 s (eq. 7), compute from 400 with checkpoints at 600 and 800:
    # end = 616 + 600 + 2 x 16 = 1,248.
    at(e, 5000)
    r = row(e, 1)
    assert r["end"] == 1248
    assert r["checkpoints"] == 4 and r["t_ckpt"] == 64  # eq. 6 (none at completion)
    assert r["t_pre"] == 68 + 16  # ckpTgap + restart read (eq. 7)
    assert r["lost_node_s"] == 68 * 128
    assert r["restart_node_s"] == 16 * 128
    assert r["ckpt_by_system"] == 1  # eq. 8: the system pays SYS-CKPT overhead
    assert r["executed"] == 500 + 648


def test_app_ckpt_is_charged_to_the_job():
    policy = CheckpointPolicy(periodic="app", app_overhead_pct=10)
    e = engine(256, checkpoint=policy)
    # 128 nodes x 0.5 GB: C = 16 s; budget 10% of 1,000 s = 100 s -> n = 6 checkpoints,
    # interval ceil(1120 / 7) = 160 -> runtime 800 has ceil(800/160) - 1 = 4 checkpoints.
    e.submit(JobSpec(1, 0, runtime=800, nodes=128, walltime=1000, ckpt_gb_per_node=0.5))
    at(e, 0)
    e.apply(Start(1))
    at(e, 10_000)
    r = row(e, 1)
    assert r["checkpoints"] == 4 and r["end"] == 800 + 64
    assert r["ckpt_by_system"] == 0  # eqs. 13, 15: chr_ckpt is the job's


def test_jit_ckpt_eqs_16_20_and_async_done():
    e = engine(256, checkpoint=CheckpointPolicy(periodic="none"))
    e.submit(JobSpec(1, 0, runtime=1000, nodes=128, walltime=2000, ckpt_gb_per_node=0.5))
    at(e, 0)
    e.apply(Start(1))
    at(e, 300)
    e.apply(Preempt(1, PreemptMode.JIT))
    assert e.jobs[1].state is JobState.CHECKPOINTING
    assert e.state.free_nodes == 128  # nodes held until the checkpoint is done
    at(e, 315)
    assert e.jobs[1].state is JobState.CHECKPOINTING
    at(e, 316)  # the simulator's agent reports done after C = 16 s
    assert e.jobs[1].state is JobState.PREEMPTED and e.state.free_nodes == 256
    at(e, 400)
    e.apply(Start(1))
    at(e, 5000)
    r = row(e, 1)
    # No lost work; restart read 16 s (eq. 17); end = 400 + 16 + 700.
    assert r["end"] == 1116 and r["lost_node_s"] == 0
    assert r["t_ckpt"] == 16 and r["t_pre"] == 16  # eqs. 16, 17
    assert r["ckpt_node_s"] == 16 * 128  # eq. 18 (system)


def test_jit_checkpoint_done_from_outside():
    e = Engine(NodePool(8), None, options=EngineOptions(auto_checkpoint_done=False))
    e.submit(JobSpec(1, 0, runtime=100, nodes=8, walltime=100))
    at(e, 0)
    e.apply(Start(1))
    with pytest.raises(DecisionError, match="not asked to checkpoint"):
        e.checkpoint_done(1)
    at(e, 10)
    e.apply(Preempt(1, PreemptMode.JIT))
    at(e, 5000)  # nobody reports: still checkpointing, nodes held
    assert e.jobs[1].state is JobState.CHECKPOINTING and e.state.free_nodes == 0
    e.checkpoint_done(1)
    e.step()
    assert e.jobs[1].state is JobState.PREEMPTED and e.state.free_nodes == 8


def test_jit_checkpoint_timeout_kills_and_requeues_from_the_last_checkpoint():
    """External agents, 100 s timeout: periodic checkpoints every 100 compute s survive;
    the work after the last one and the time spent waiting for the agent are wasted."""
    e = engine(8, checkpoint=CheckpointPolicy(periodic="trace"), auto_checkpoint_done=False,
               checkpoint_timeout_s=100.0)
    e.outbox = []
    e.submit(JobSpec(1, 0, runtime=1000, nodes=8, walltime=2000, ckpt_interval=100,
                     ckpt_gb_per_node=0.5))
    at(e, 0)
    e.apply(Start(1))
    x = e.exec_record(1)
    at(e, 250)
    e.apply(Preempt(1, PreemptMode.JIT))
    deadline = e.outbox[-1].deadline  # the modelled end of the JIT checkpoint
    assert e.outbox[-1].kind == "checkpoint" and deadline > 250
    at(e, deadline + 99)
    assert e.jobs[1].state is JobState.CHECKPOINTING  # still waiting for the agent
    at(e, deadline + 100)
    job = e.jobs[1]
    assert job.state is JobState.PREEMPTED and e.state.free_nodes == 8
    assert job.history[-1][2] == "checkpoint-timeout"
    assert e.stats["checkpoint_timeouts"] == 1
    assert x.last_ckpt_work == x.work0 > 0  # back to the last periodic checkpoint
    assert x.work0 < 250  # the work after it is gone
    with pytest.raises(DecisionError, match="not asked to checkpoint"):
        e.checkpoint_done(1)  # too late: the agent's answer no longer counts
    e.apply(Start(1))
    at(e, 10_000)
    r = row(e, 1)
    assert r["final_state"] == 0 and r["lost_node_s"] > 0
    assert r["ckpt_node_s"] >= 8 * (deadline + 100 - 250)  # the wait counted as wasted


def test_setup_at_start_and_restart():
    e = engine(10, checkpoint=CheckpointPolicy(periodic="none"))
    e.submit(JobSpec(1, 0, runtime=100, nodes=2, walltime=100, setup=50))
    at(e, 0)
    e.apply(Start(1))
    at(e, 120)  # setup 0-50, compute 50-120 (work 70)
    e.apply(Preempt(1, PreemptMode.LAST_CHECKPOINT))  # no checkpoint: all 70 lost
    at(e, 200)
    e.apply(Start(1))
    at(e, 1000)
    r = row(e, 1)
    assert r["end"] == 200 + 50 + 100
    assert r["setup_node_s"] == 2 * 100 and r["lost_node_s"] == 2 * 70


def test_malleable_linear_speedup_and_resize():
    e = engine(10)
    # t_single = 800 node-seconds: 100 s on 8 nodes, 200 s on 4.
    e.submit(JobSpec(1, 0, runtime=100, nodes=8, walltime=100, min_nodes=2,
                     job_class=JobClass.MALLEABLE))
    at(e, 0)
    with pytest.raises(DecisionError, match="2..8"):
        e.apply(Start(1, nodes=1))
    e.apply(Start(1, nodes=4))
    assert e.jobs[1].predicted_end == 200
    at(e, 100)  # work 50 of 100
    e.apply(Resize(1, 8))
    assert e.jobs[1].predicted_end == 150
    at(e, 1000)
    r = row(e, 1)
    assert r["end"] == 150 and r["useful_node_s"] == 800  # 4 x 100 + 8 x 50


def test_malleable_two_minute_warning():
    e = engine(10)
    e.submit(JobSpec(1, 0, runtime=1000, nodes=4, walltime=1000, min_nodes=1,
                     job_class=JobClass.MALLEABLE, setup=10))
    at(e, 0)
    e.apply(Start(1))
    at(e, 110)  # setup 0-10, work 100
    e.apply(Preempt(1, PreemptMode.WARNING))
    at(e, 229)
    assert e.jobs[1].state is JobState.CHECKPOINTING
    at(e, 230)  # 120 s later the nodes are free
    assert e.jobs[1].state is JobState.PREEMPTED and e.state.free_nodes == 10
    e.apply(Start(1))
    at(e, 5000)
    r = row(e, 1)
    # Resume from the warning time (work 100) after setup, no checkpoint read.
    assert r["end"] == 230 + 10 + 900 and r["lost_node_s"] == 0 and r["restart_node_s"] == 0


def test_ecc_on_queued_and_running_jobs():
    e = engine(10)
    e.submit(JobSpec(1, 0, runtime=100, nodes=2, walltime=100))
    e.submit(JobSpec(2, 0, runtime=100, nodes=2, walltime=100))
    at(e, 0)
    e.elastic(Ecc(2, 0, "EP", 3))  # queued: 2 -> 5 processors
    e.elastic(Ecc(2, 0, "ET", 50))  # queued: walltime and runtime 150
    e.apply(Start(1))
    at(e, 0)
    assert e.jobs[2].nodes == 5 and e.jobs[2].walltime == 150
    e.apply(Start(2))
    at(e, 30)
    e.elastic(Ecc(1, 30, "RT", 50))  # running: walltime and runtime 50 -> ends at 50
    at(e, 30)
    assert e.jobs[1].predicted_end == 50
    e.elastic(Ecc(2, 30, "RP", 4))  # running: shrink 5 -> 1 node
    at(e, 1000)
    assert row(e, 1)["end"] == 50 and row(e, 1)["final_state"] == 0
    assert row(e, 2)["end"] == 150
    assert e.stats["eccs_applied"] == 4


def test_ecc_without_runtime_change_kills_at_new_walltime():
    e = engine(10, ecc_changes_runtime=False, ecc_max_per_job=1)
    e.submit(JobSpec(1, 0, runtime=100, nodes=2, walltime=100))
    at(e, 0)
    e.apply(Start(1))
    e.elastic(Ecc(1, 30, "RT", 50))
    e.elastic(Ecc(1, 31, "ET", 500))  # over the per-job limit of 1: rejected
    at(e, 1000)
    r = row(e, 1)
    assert r["end"] == 50 and r["final_state"] == 1  # killed at the reduced walltime
    assert e.stats["eccs_rejected"] == 1
    assert "already had 1" in e.ecc_log[-1][1]


def test_failure_requeues_from_last_checkpoint():
    # One node, one job, failures every ~mtbf: replay the engine's own RNG draws.
    seed, mtbf, mttr = 7, 500.0, 100.0
    e = Engine(NodePool(1), None, seed=seed,
               options=EngineOptions(mtbf_s=mtbf, mttr_s=mttr,
                                     checkpoint=CheckpointPolicy(periodic="none")))
    rng = random.Random(seed)
    t_fail = rng.expovariate(1 / mtbf)
    rng.expovariate(1 / mtbf)  # next failure
    rng.randrange(1)  # the unit
    t_repair = t_fail + rng.expovariate(1 / mttr)
    e.submit(JobSpec(1, 0, runtime=10 * mtbf, nodes=1, walltime=10 * mtbf))
    at(e, 0)
    e.apply(Start(1))
    e.run(until=t_fail)
    validate(e)
    job = e.jobs[1]
    assert job.state is JobState.PREEMPTED and e.state.free_nodes == 0  # the node is down
    x = e.exec_record(1)
    assert x.failures == 1 and x.lost_ns == pytest.approx(t_fail)
    e.run(until=t_repair)
    assert e.state.free_nodes == 1


def test_failures_start_with_the_first_job_not_at_time_zero():
    # A trace in Unix time: the failure process starts at the first arrival, so the
    # first failure is the first draw counted from there (a process from t = 0 would
    # have failed the idle machine about 1e9 / mtbf times before it).
    seed, mtbf, t0 = 3, 3600.0, 1.0e9
    e = Engine(NodePool(4), None, seed=seed,
               options=EngineOptions(mtbf_s=mtbf, mttr_s=60.0,
                                     checkpoint=CheckpointPolicy(periodic="none")))
    first = t0 + random.Random(seed).expovariate(1 / mtbf)
    e.submit(JobSpec(1, t0, runtime=100 * mtbf, nodes=4, walltime=100 * mtbf))
    at(e, t0)
    e.apply(Start(1))
    e.run(until=first - 1e-6)
    assert e.stats["failures"] == 0 and e.exec_record(1).failures == 0
    e.run(until=first)
    assert e.stats["failures"] == 1 and e.exec_record(1).failures == 1


def test_reservations_hold_nodes():
    e = engine(10)
    e.submit(JobSpec(1, 0, runtime=100, nodes=8, walltime=100))
    e.submit(JobSpec(2, 0, runtime=100, nodes=3, walltime=100))
    at(e, 0)
    e.apply(Reserve("od-9", nodes=4))
    with pytest.raises(DecisionError, match="not available"):
        e.apply(Start(1))
    e.apply(Start(2, reservation="od-9"))
    assert e.reservations["od-9"].free_nodes == 1 and e.state.free_nodes == 6
    e.apply(Release("od-9"))
    assert e.state.free_nodes == 7
    at(e, 1000)
    assert e.state.free_nodes == 10


def test_advance_notice_and_dedicated_start():
    e = engine(10)
    e.notice(5, Notice(time=100, est_arrival=1000, nodes=4, walltime=600))
    e.submit(JobSpec(6, 0, runtime=10, nodes=1, walltime=10, job_class=JobClass.DEDICATED,
                     requested_start=500))
    at(e, 99)
    assert 5 not in e.notices
    at(e, 100)
    assert e.notices[5].est_arrival == 1000
    with pytest.raises(DecisionError, match="before 500"):
        e.apply(Start(6))
    at(e, 500)
    e.apply(Start(6))
    at(e, 1000)
    assert row(e, 6)["start_delay"] == 0


def test_refused_decisions_leave_state_unchanged():
    e = engine(4)
    e.submit(JobSpec(1, 0, runtime=10, nodes=4, walltime=10))
    e.submit(JobSpec(2, 0, runtime=10, nodes=2, walltime=10))
    at(e, 0)
    e.apply(Start(1))
    before = (e.state.free_nodes, [j.id for j in e.queue], list(e.running))
    for bad in (Start(2), Start(1), Start(99), Resize(1, 2), Preempt(2, PreemptMode.JIT),
                Release("nope")):
        with pytest.raises(DecisionError):
            e.apply(bad)
        assert (e.state.free_nodes, [j.id for j in e.queue], list(e.running)) == before
        validate(e)


def test_illegal_transition_tells_the_story():
    e = engine(4)
    e.submit(JobSpec(1, 0, runtime=10, nodes=1, walltime=10))
    at(e, 0)
    job = e.jobs[1]
    with pytest.raises(IllegalTransition, match=r"queued -> completed.*t=0 queued \(submit\)"):
        transition(job, JobState.COMPLETED, 0, "test")


def test_cancel_queued_running_and_finished():
    e = engine(4)
    for i in (1, 2):
        e.submit(JobSpec(i, 0, runtime=10, nodes=2, walltime=10))
    at(e, 0)
    e.apply(Start(1))
    e.cancel(1)
    e.cancel(2)
    at(e, 0)
    assert not e.jobs and e.state.free_nodes == 4
    e.cancel(1)  # idempotent
    at(e, 5)
    assert sorted(e.results.arrays()["final_state"].tolist()) == [2, 2]


def test_core_has_no_clock_or_global_random():
    """The core is deterministic: no wall clock, no global RNG, no I/O."""
    import pathlib

    import schedd.core as core

    for path in pathlib.Path(core.__file__).parent.glob("*.py"):
        text = path.read_text()
        for forbidden in ("import time", "from time", "datetime", "random.random(",
                          "random.seed(", "print(", "open("):
            if path.name == "mira_blocks.py" and forbidden == "open(":
                continue  # reads the shipped block table
            # A name that merely ends in one (`close_open(`) is not a use.
            pattern = (r"(?<![\w.])" if forbidden[0].isalpha() else "") + re.escape(forbidden)
            assert not re.search(pattern, text), f"{path.name} uses {forbidden}"


def test_cancel_before_arrival_cancels_on_arrival():
    e = engine(4)
    e.submit(JobSpec(1, 100, runtime=10, nodes=1, walltime=10))
    e.cancel(1)
    at(e, 200)
    r = row(e, 1)
    assert r["final_state"] == 2 and r["first_start"] == -1 and not e.jobs


def test_commands_for_the_daemon_and_wake_ups():
    """With an outbox, the engine tells the outside world what to do; wake_at forces a pass."""

    class CountingPolicy:
        passes: list[float] = []

        def schedule(self, view):
            self.passes.append(view.now)
            return []

    policy = CountingPolicy()
    e = Engine(NodePool(256), policy, options=EngineOptions(auto_checkpoint_done=False))
    e.outbox = []
    e.submit(JobSpec(1, 0, runtime=1000, nodes=128, walltime=1000, ckpt_gb_per_node=0.5))
    e.wake_at(50)
    at(e, 0)
    e.apply(Start(1))
    at(e, 50)
    assert policy.passes == [0, 50]
    e.apply(Preempt(1, PreemptMode.JIT))
    kinds = [(c.kind, c.job_id, c.time, c.deadline) for c in e.outbox]
    assert kinds == [("start", 1, 0, -1), ("checkpoint", 1, 50, 66)]  # 16 s to write


def test_forget_finished_ids_keeps_no_id_of_a_finished_job():
    """The daemon's engine forgets finished ids (its service refuses reused ids against the
    results store): nothing per finished job stays in the engine; a live id is still
    refused twice."""
    e = engine(8, forget_finished_ids=True)
    e.submit(JobSpec(1, 0, 10, 2, 20))
    e.submit(JobSpec(2, 0, 10, 2, 20))
    at(e, 0)
    e.apply(Start(1, nodes=2))
    at(e, 10)
    assert e._seen_ids == {2}  # job 1 finished and left no trace
    with pytest.raises(DecisionError, match="submitted twice"):
        e.submit(JobSpec(2, 10, 10, 2, 20))
        at(e, 10)
    kept = engine(8)
    kept.submit(JobSpec(1, 0, 10, 2, 20))
    at(kept, 0)
    kept.apply(Start(1, nodes=2))
    at(kept, 10)
    assert kept._seen_ids == {1}  # by default (simulate) every id stays taken
