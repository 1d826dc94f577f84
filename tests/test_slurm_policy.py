"""The `slurm` policy on small machines, instant by instant: when each of Slurm's
schedulers runs and what it may start, worked out by hand from slurmctld's code
(docs/slurm.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedd.core.engine import Engine, EngineOptions
from schedd.core.job import JobSpec, JobState
from schedd.slurm.jobs import AFTERANY, AFTERNOTOK, AFTEROK, SlurmJob, job_size
from schedd.slurm.machine import SlurmSetup
from schedd.slurm.policy import SlurmOptions, SlurmPolicy

NODES = """\
NodeName=n[1-4] CPUs=4
PartitionName=batch Nodes=ALL Default=YES
"""
# The hand-worked instants of most tests take a job's end to run the main scheduler at
# once: so it does where slurm.conf has an Epilog script (here of no duration, option
# epilog 0), whose epilog-complete message brings the nodes back. Without one, a job
# that exits by itself only queues a pass for the background thread (the test of that).
BASE = NODES + "Epilog=/etc/slurm/epilog\n"


def machine(tmp_path: Path, extra: str, nodes: str = BASE) -> SlurmSetup:
    path = tmp_path / "slurm.conf"
    path.write_text(nodes + extra)
    return SlurmSetup.read(str(path), None)


def job(setup: SlurmSetup, jid: int, submit: float, runtime: float, nodes: int = 0,
        cpus: int = 0, limit: float = 600.0, partition: int = 0, dep: tuple[int, int] = (0, -1),
        user: str = "u", account: str = "a") -> tuple[JobSpec, SlurmJob]:
    exclusive = nodes > 0
    size, lo, hi, whole = job_size(setup.conf, partition, cpus or nodes, nodes, exclusive)
    sj = SlurmJob(size, lo, hi, whole, partition, user, account, "normal", limit,
                  dep_kind=dep[0], dep_on=dep[1])
    return JobSpec(jid, submit, runtime, size, limit), sj


def run(setup: SlurmSetup, jobs: list[tuple[JobSpec, SlurmJob]],
        cancels: tuple[tuple[int, float], ...] = (), **options: float
        ) -> tuple[Engine, SlurmPolicy]:
    # The controller up for 10 minutes before time 0 (its threads' phases unchanged:
    # 600 s is a multiple of every interval here), unless a test says otherwise.
    options.setdefault("boot", 600.0)
    # Nodes freed at the job's end, so the hand-worked instants stay whole seconds, unless
    # a test says otherwise (the default epilog is 1 s: see the test of job ends).
    options.setdefault("epilog", 0.0)
    policy = SlurmPolicy(SlurmOptions(**options), setup.cluster)
    policy.configure(setup.conf, setup.assocs, {spec.id: sj for spec, sj in jobs})
    engine = Engine(setup.cluster, policy,
                    options=EngineOptions(keep_finished=True, **policy.engine_overrides()))
    for jid, at in cancels:
        engine.cancel(jid, at=at)
    engine.feed(sorted((spec for spec, _ in jobs), key=lambda s: (s.submit, s.id)))
    while engine.step():
        pass
    return engine, policy


def starts(engine: Engine) -> dict[int, float]:
    return {jid: j.first_start for jid, j in engine.finished.items()}


SACCT_HEAD = "JobIDRaw|Submit|Start|End|Timelimit|NNodes|NCPUS|State|Flags"


def at_second(s: int) -> str:
    """A sacct time `s` seconds after 2026-01-01T00:00:00."""
    return f"2026-01-01T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def bound_to_log(tmp_path: Path, rows: list[str], conf: str,
                 **options: float) -> tuple[SlurmPolicy, str | None]:
    """A `slurm` policy bound, as `schedd simulate` binds it, to a sacct log of `rows`
    (under SACCT_HEAD) on the 4-node machine with `conf`; and the line saying what was
    read off the log."""
    from schedd.slurm.importers import import_log
    from schedd.traces import normalize

    log = tmp_path / "sacct.txt"
    log.write_text("\n".join([SACCT_HEAD] + rows) + "\n")
    setup = machine(tmp_path, conf)
    trace = normalize(import_log("slurm", str(log)).trace, procs_per_node=1,
                      max_nodes=10**9)
    trace, jobs = setup.prepare(trace)
    policy = SlurmPolicy(SlurmOptions(**options), setup.cluster)
    said = setup.bind(policy, jobs, trace.header.unix_start_time, trace)
    return policy, said


def test_without_backfill_a_submission_waits_for_the_background_pass(tmp_path: Path) -> None:
    # sched/builtin: a submission asks the background thread for a pass, which runs once
    # batch_sched_delay (3 s) has passed since its last one.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 0, 50, nodes=1), job(setup, 2, 1, 50, nodes=1),
            job(setup, 3, 2, 50, nodes=1)]
    engine, policy = run(setup, jobs)
    assert starts(engine) == {1: 0.0, 2: 3.0, 3: 3.0}
    assert set(policy.started_by.values()) == {"main"}


def test_at_the_controllers_start_backfill_may_start_the_first_job(tmp_path: Path) -> None:
    # slurmctld's background thread starts with its last pass at its own start (time 0
    # with boot=0): a job submitted then waits batch_sched_delay (3 s) for the main
    # scheduler, and the backfill agent's first cycle, at 1 s, starts it first — as in
    # every reference run, whose first jobs Slurm's backfill started.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5\n")
    engine, policy = run(setup, [job(setup, 1, 0, 50, nodes=1)], boot=0.0, bf_phase=1.0)
    assert starts(engine) == {1: 1.0}
    assert policy.started_by[1] == "backfill"
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    engine, policy = run(setup, [job(setup, 1, 0, 50, nodes=1)], boot=0.0)
    assert starts(engine) == {1: 3.0}


def test_a_job_that_exits_by_itself_queues_a_pass_for_the_background_thread(
        tmp_path: Path) -> None:
    # Without an Epilog script slurmd answers the terminate request for a finished batch
    # script ALREADY_COMPLETE: slurmctld's agent marks the nodes idle at once and only
    # queues a pass (queue_job_scheduler), which the background thread runs at its next
    # tick once batch_sched_delay (3 s) has passed since its last. Job 1, started by the
    # main scheduler at 0 (a background tick), ends at 100 just after the tick of that
    # second, so the request is seen at 101; job 3's submission at 99 had the thread
    # run a pass at 99, so the next one is at 102.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n", nodes=NODES)
    jobs = [job(setup, 1, 0, 100, nodes=4), job(setup, 2, 10, 50, nodes=2),
            job(setup, 3, 99, 50, nodes=2)]
    engine, policy = run(setup, jobs)
    assert starts(engine) == {1: 0.0, 2: 102.0, 3: 102.0}
    assert set(policy.started_by.values()) == {"main"}
    assert SlurmOptions().epilog == 0.0
    # Cancelled while it runs (at 90), its processes are killed and the nodes come back
    # with the epilog-complete message, whose handler runs the main scheduler at once;
    # job 3's submission then has the background thread run a pass at 99.
    engine, _ = run(setup, jobs, cancels=((1, 90.0),))
    assert starts(engine) == {1: 0.0, 2: 90.0, 3: 99.0}
    # With an Epilog script every job's nodes come back that way, once it has run (1 s),
    # whatever the background thread did at 99.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 0, 100, nodes=4), job(setup, 2, 10, 50, nodes=2),
            job(setup, 3, 99, 50, nodes=2)]
    engine, _ = run(setup, jobs, epilog=1.0)
    assert starts(engine) == {1: 0.0, 2: 101.0, 3: 101.0}


def test_a_short_job_the_background_thread_started_ends_after_its_tick(
        tmp_path: Path) -> None:
    # The background thread loops on ten 100 ms sleeps plus its work: its tick comes
    # tick_drift (1.3 ms) later each second. A job one of its passes started runs from
    # `launch` (30 ms) past that pass's phase, so after R seconds it ends launch - R x
    # tick_drift past the tick of its last second: after it when R < 23 s. Then that
    # tick does not see the agent's request; the next second's does.
    # Job 1 (all 4 nodes) starts at the tick of 0; job 2's submission has the tick of 5
    # run a pass, which can't start it; job 1 ends at 10 (10 s: 30 ms > 13 ms, after the
    # tick), so job 2 starts at the tick of 11.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n", nodes=NODES)
    short = [job(setup, 1, 0, 10, nodes=4), job(setup, 2, 5, 50, nodes=2)]
    engine, policy = run(setup, short)
    assert starts(engine) == {1: 0.0, 2: 11.0}
    assert policy.started_by == {1: "main", 2: "main"}
    # Ended after 100 s (30 ms < 130 ms), job 1 ends before the tick of its last second.
    long = [job(setup, 1, 0, 100, nodes=4), job(setup, 2, 5, 50, nodes=2)]
    engine, _ = run(setup, long)
    assert starts(engine) == {1: 0.0, 2: 100.0}
    # launch 0 takes every end as before its second's tick (the model before).
    engine, _ = run(setup, short, launch=0.0)
    assert starts(engine) == {1: 0.0, 2: 10.0}
    # The cut-off is launch / tick_drift: 10 s x 4 ms = 40 ms > 30 ms, before the tick.
    engine, _ = run(setup, short, tick_drift=0.004)
    assert starts(engine) == {1: 0.0, 2: 10.0}
    # Only the starting thread's phase is known: a job the backfill agent started ends at
    # a place in the second unknown against the tick, taken as before it. Job 1 is
    # started by the first backfill cycle (boot 0: the background thread has just run),
    # ends at 11 and job 2 starts at that second's tick.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5\n", nodes=NODES)
    jobs = [job(setup, 1, 0, 10, nodes=4), job(setup, 2, 5, 50, nodes=2)]
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=1.0)
    assert policy.started_by[1] == "backfill"
    assert starts(engine)[1] == 1.0
    assert starts(engine)[2] == 11.0 and policy.started_by[2] == "main"


def test_the_main_scheduler_stops_a_partition_at_its_first_blocked_job(tmp_path: Path) -> None:
    # Job 2 (4 nodes) cannot start while job 1 runs; job 3 (1 node) would fit, but the
    # main scheduler does not look past 2 in its partition. Without backfill it waits.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 0, 100, nodes=2), job(setup, 2, 5, 50, nodes=4),
            job(setup, 3, 10, 20, nodes=1)]
    engine, _ = run(setup, jobs)
    assert starts(engine) == {1: 0.0, 2: 100.0, 3: 150.0}


def test_backfill_starts_what_does_not_delay_the_reservation(tmp_path: Path) -> None:
    # As above with sched/backfill (bf_interval=30, resolution 60): job 2's reservation is
    # at job 1's expected end, start 0 + limit 120 s. Job 3 (limit 60 s) ends by then and
    # is backfilled at the next cycle — 30 s after the one that job 1's submission opened
    # at 0; job 4 (limit 600 s) would delay 2 and waits for it.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\n")
    jobs = [job(setup, 1, 0, 100, nodes=2, limit=120), job(setup, 2, 5, 50, nodes=4),
            job(setup, 3, 10, 20, nodes=1, limit=60), job(setup, 4, 12, 20, nodes=1)]
    engine, policy = run(setup, jobs)
    got = starts(engine)
    assert got[1] == 0.0 and got[3] == 30.0 and got[2] == 100.0 and got[4] == 150.0
    assert policy.started_by[3] == "backfill"


def test_nodes_held_by_a_completing_job_count_as_ending_for_backfill(
        tmp_path: Path) -> None:
    # 3 nodes; job 1 holds n3 until t=1000; job 2 ends on one node at 10 and its epilog
    # holds that node until 12 (epilog=2). Job 3 (2 nodes) waits for it. Job 4 (1 node,
    # limit 600 s) arrives at 11, with one node idle. cons_common's will-run test counts
    # the completing job 2 as ending at _guess_job_end (its end + KillWait 30 s), so job
    # 3 is expected at 40 on that node and the idle one, and job 4 would delay it: not
    # backfilled. Job 3 starts when the epilog completes, at 12. (Counting only running
    # jobs, job 3 would be expected at 1000 and job 4 backfilled onto its node.)
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=1\n", "NodeName=n[1-3] CPUs=4\n"
                              "PartitionName=batch Nodes=ALL Default=YES\n"
                              "Epilog=/etc/slurm/epilog\n")
    jobs = [job(setup, 1, 0, 1000, nodes=1, limit=1200),
            job(setup, 2, 0, 10, nodes=1, limit=60),
            job(setup, 3, 5, 50, nodes=2, limit=120),
            job(setup, 4, 11, 300, nodes=1, limit=600)]
    engine, policy = run(setup, jobs, epilog=2.0)
    got = starts(engine)
    assert got[3] == 12.0, got
    assert got[4] >= 62.0


def test_backfill_cycles_keep_their_interval(tmp_path: Path) -> None:
    # The first change opens a cycle at once; while jobs wait, cycles follow every
    # bf_interval seconds: a job that can only backfill starts at the next cycle.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=20\n")
    jobs = [job(setup, 1, 0, 300, nodes=2, limit=360), job(setup, 2, 1, 50, nodes=4),
            job(setup, 3, 3, 10, nodes=1, limit=60),  # 4 s after job 1's pass
            job(setup, 4, 7, 10, nodes=1, limit=60)]
    engine, policy = run(setup, jobs)
    got = starts(engine)
    # Cycle at 0 (job 1's submission), 20, 40...: 3 and 4 start at the cycle at 20,
    # unless a main pass starts them first — it cannot (job 2 blocks the partition).
    assert got[3] == 20.0 and got[4] == 20.0
    assert policy.started_by[3] == policy.started_by[4] == "backfill"


def test_an_update_in_a_cycles_own_second_is_work_for_the_next_cycle(tmp_path: Path) -> None:
    # The backfill agent runs a cycle when bf_interval has passed since its last one and
    # _more_work finds an update since, comparing whole seconds: last_job_update >=
    # last_backfill_time; otherwise it polls again a second later. bf_interval=3, the
    # controller started at 0 (boot=0), the agent's grid at 0, 3, 6...; the main
    # scheduler held back by batch_sched_delay=50 (it runs only on job ends here).
    # Job 1, submitted at 0, is started by the cycle at 0; the agent runs again at 3
    # (that start is news) and finds nothing. Job 1 ends at 6: the cycle at 6 finds
    # nothing waiting, but the end is an update in its own second, so the agent runs at
    # 9 too, and the next poll with 3 s since is at 12: job 2, submitted at 10, is
    # backfilled at 12. (Counting only updates after a cycle, there is no cycle at 9 and
    # job 2 starts at its own submission, 10.)
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=3,batch_sched_delay=50\n")
    jobs = [job(setup, 1, 0, 6, nodes=1, limit=120),
            job(setup, 2, 10, 100, nodes=1, limit=120)]
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=0.0)
    assert starts(engine) == {1: 0.0, 2: 12.0}
    assert policy.started_by == {1: "backfill", 2: "backfill"}


def test_a_job_past_its_limit_is_killed_at_the_next_time_limit_check(tmp_path: Path) -> None:
    # Checks every 30 s from `boot` seconds before time 0: limit 60 s from 5 -> 65; the
    # checks at 60 and 90 (boot 0) kill it at 90; with boot=10 the checks fall at 50, 80.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 5, 500, nodes=1, limit=60)]
    engine, _ = run(setup, jobs)
    assert engine.finished[1].end_time == 90.0
    assert engine.finished[1].state is JobState.KILLED
    engine, _ = run(setup, jobs, boot=10.0)
    assert engine.finished[1].end_time == 80.0


def test_dependencies(tmp_path: Path) -> None:
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 0, 30, nodes=1),
            job(setup, 2, 0, 500, nodes=1, limit=60),          # killed at its limit
            job(setup, 3, 1, 10, nodes=1, dep=(AFTEROK, 1)),   # after 1 completes
            job(setup, 4, 1, 10, nodes=1, dep=(AFTEROK, 2)),   # never: 2 is killed
            job(setup, 5, 1, 10, nodes=1, dep=(AFTERNOTOK, 2)),
            job(setup, 6, 1, 10, nodes=1, dep=(AFTERANY, 2))]
    engine, _ = run(setup, jobs, cancels=((4, 400.0),))
    got = starts(engine)
    assert got[3] == 30.0
    assert got[5] == got[6] == engine.finished[2].end_time == 60.0
    assert engine.finished[4].state is JobState.CANCELLED and got[4] == -1.0


def test_a_dependency_is_met_when_its_jobs_nodes_are_released(tmp_path: Path) -> None:
    # afterok asks IS_JOB_COMPLETED, which is false while the job is COMPLETING
    # (job_scheduler.c `_test_job_dependency_common`): job 2 waits for job 1's epilog,
    # though three nodes are free and a backfill cycle runs every second (the job's end
    # at 30 is itself news for the cycle at 30).
    # An Epilog script of 1 s holds the nodes (and the job COMPLETING) until 31.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=1\n")
    jobs = [job(setup, 1, 0, 30, nodes=1), job(setup, 2, 1, 10, nodes=1, dep=(AFTEROK, 1))]
    engine, _ = run(setup, jobs, epilog=1.0)
    assert starts(engine) == {1: 0.0, 2: 31.0}
    engine, _ = run(setup, jobs, epilog=0.0)
    assert starts(engine) == {1: 0.0, 2: 30.0}


def test_per_core_jobs_share_nodes(tmp_path: Path) -> None:
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, i, 0, 100, cpus=2) for i in range(1, 9)]  # 16 CPUs in all
    jobs.append(job(setup, 9, 0, 100, cpus=1))
    engine, policy = run(setup, jobs)
    got = starts(engine)
    assert all(got[i] == 0.0 for i in range(1, 9)) and got[9] == 100.0


def test_overlapping_partitions_block_by_tier(tmp_path: Path) -> None:
    # short (tier 2) holds every node; long (tier 1) nodes 3-4. A blocked short job fails
    # its partition, and its nodes are then closed to later jobs of long too.
    nodes = ("NodeName=n[1-4] CPUs=4\n"
             "PartitionName=short Nodes=ALL Default=YES PriorityTier=2\n"
             "PartitionName=long Nodes=n[3-4] PriorityTier=1\n"
             "Epilog=/etc/slurm/epilog\n")
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n", nodes)
    jobs = [job(setup, 1, 0, 100, nodes=2), job(setup, 2, 1, 50, nodes=4),
            job(setup, 3, 2, 50, nodes=1, partition=1)]
    engine, _ = run(setup, jobs)
    got = starts(engine)
    assert got[2] == 100.0 and got[3] == 150.0


def test_runs_are_deterministic_and_the_engine_agrees(tmp_path: Path) -> None:
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5,bf_resolution=10\n")
    jobs = [job(setup, i, i * 3.0, 20 + (i * 37) % 90, nodes=1 + i % 4,
                limit=60 + 60 * (i % 3)) for i in range(1, 40)]
    a, _ = run(setup, jobs)
    b, _ = run(setup, jobs)
    assert starts(a) == starts(b)
    assert len(a.finished) == 39


@pytest.mark.parametrize("text", ["PriorityType=priority/multifactor\nPriorityWeightAge=100\n"
                                  "PriorityWeightFairshare=1000\nPriorityCalcPeriod=1\n"])
def test_multifactor_runs_on_a_flat_tree_without_an_associations_file(
        tmp_path: Path, text: str) -> None:
    setup = machine(tmp_path, "SchedulerType=sched/backfill\n" + text)
    jobs = [job(setup, i, i * 5.0, 100, nodes=2, user=f"u{i % 3}", account=f"a{i % 2}")
            for i in range(1, 15)]
    engine, policy = run(setup, jobs)
    assert len(engine.finished) == 14
    assert policy.stats()["decay_runs"] > 0


@pytest.mark.parametrize(("enforce", "charged"), [("associations", 50 * 4), ("limits", 100 * 4)])
def test_a_jobs_end_charges_usage_only_with_enforced_limits(tmp_path: Path, enforce: str,
                                                           charged: float) -> None:
    # No decay (a very long half-life), the decay thread every minute from time 0: a
    # 1-node job (4 CPUs) from 10 to 110 is charged 50 s at the run at 60; its last 50 s
    # are charged at its end only when AccountingStorageEnforce has limits, as in Slurm
    # (priority_g_job_end is called from the limits code): a real sshare showed it.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\nPriorityType=priority/multifactor\n"
                              "PriorityWeightFairshare=100\nPriorityCalcPeriod=1\n"
                              "PriorityDecayHalfLife=0\n"
                              f"AccountingStorageEnforce={enforce}\n")
    jobs = [job(setup, 1, 10, 100, nodes=1, limit=300)]
    engine, policy = run(setup, jobs)
    assert engine.finished[1].end_time == 110.0
    assert policy.assocs is not None
    assert policy.assocs.root.usage_raw == pytest.approx(charged)


def test_a_daemon_snapshot_of_the_policy_continues_as_the_original(tmp_path: Path) -> None:
    """The daemon snapshots its engine and policy (schedd/daemon/snapshot.py); the slurm
    policy's state, compiled parts included, must restore and go on exactly as before."""
    from schedd.daemon.snapshot import dumps, restore

    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5\nPriorityType=priority/multifactor\n"
                              "PriorityWeightAge=100\nPriorityWeightFairshare=1000\n"
                              "PriorityCalcPeriod=1\n")
    jobs = [job(setup, i, i * 7.0, 40 + (i * 13) % 80, nodes=1 + i % 3, cpus=0,
                user=f"u{i % 3}", limit=120) for i in range(1, 25)]
    jobs += [job(setup, 100 + i, i * 9.0, 30, cpus=1 + i % 3) for i in range(1, 10)]

    def fresh() -> tuple[Engine, SlurmPolicy]:
        policy = SlurmPolicy(SlurmOptions(), setup.cluster)
        policy.configure(setup.conf, setup.assocs, {spec.id: sj for spec, sj in jobs})
        engine = Engine(setup.cluster, policy,
                        options=EngineOptions(keep_finished=True,
                                              **policy.engine_overrides()))
        for spec in sorted((spec for spec, _ in jobs), key=lambda s: (s.submit, s.id)):
            engine.submit(spec)
        return engine, policy

    old, old_policy = fresh()
    for _ in range(25):
        old.step()
    data = dumps({"engine": old, "primary": old_policy}, {})
    new, new_policy = fresh()
    restore(data, {"engine": new, "primary": new_policy})
    while old.step():
        assert new.step()
    assert not new.step()
    assert starts(new) == starts(old) and len(starts(old)) == len(jobs)


def test_qos_priorities_order_the_queue(tmp_path: Path) -> None:
    from dataclasses import replace

    from schedd.slurm.qos import QosError, read_qos

    qos_file = tmp_path / "qos.txt"
    qos_file.write_text("Name|Priority|GraceTime\nnormal|0|00:00:00\nhigh|100|00:00:00\n")
    assert read_qos(qos_file) == {"normal": 0, "high": 100}
    bad = tmp_path / "bad.txt"
    bad.write_text("Name|Priority\nhigh|lots\n")
    with pytest.raises(QosError, match="bad.txt:2: expected a whole number in column "
                                       "Priority"):
        read_qos(bad)
    # Job 2 (QOS normal) was submitted before job 3 (QOS high); with PriorityWeightQOS,
    # 3 goes first once job 1 ends.
    setup = machine(tmp_path, "SchedulerType=sched/builtin\nPriorityType=priority/multifactor\n"
                              "PriorityWeightQOS=1000\nPriorityCalcPeriod=1\n")
    setup = replace(setup, qos=read_qos(qos_file))
    jobs = [job(setup, 1, 0, 100, nodes=4), job(setup, 2, 1, 50, nodes=4),
            job(setup, 3, 2, 50, nodes=4)]
    jobs[2] = (jobs[2][0], replace(jobs[2][1], qos="high"))
    # Up 10 min before 0; nodes freed at the job's end (whole-second instants).
    policy = SlurmPolicy(SlurmOptions(boot=600.0, epilog=0.0), setup.cluster)
    setup.bind(policy, None)
    policy.table = {spec.id: sj for spec, sj in jobs}
    engine = Engine(setup.cluster, policy,
                    options=EngineOptions(keep_finished=True, **policy.engine_overrides()))
    engine.feed(spec for spec, _ in jobs)
    while engine.step():
        pass
    assert starts(engine) == {1: 0.0, 3: 100.0, 2: 150.0}


def test_a_job_given_whole_nodes_it_did_not_ask_for_holds_them_whole(tmp_path: Path) -> None:
    """Without a SubmitLine, sacct shows `-N 3 --exclusive` as ReqCPUS 3, NCPUS 12: the
    job held 3 whole nodes of 4 CPUs, not 3 CPUs. A per-core job (`-n 6`, ReqNodes 1)
    keeps its 6 CPUs."""
    from schedd.slurm.importers import import_log
    from schedd.slurm.jobs import table_from_trace
    from schedd.traces import normalize

    setup = machine(tmp_path, "")
    log = tmp_path / "sacct.txt"
    log.write_text(
        "JobIDRaw|Submit|Start|End|Timelimit|NNodes|NCPUS|ReqNodes|ReqCPUS\n"
        "1|2026-11-28T14:00:00|2026-11-28T14:00:01|2026-11-28T14:00:11|00:01:00|3|12|3|3\n"
        "2|2026-11-28T14:00:00|2026-11-28T14:00:01|2026-11-28T14:00:11|00:01:00|2|6|1|6\n")
    trace = normalize(import_log("slurm", str(log)).trace, procs_per_node=1,
                      max_nodes=10**9)
    jobs = table_from_trace(trace.columns, trace.header, setup.conf).jobs
    assert (jobs[1].cpus, jobs[1].min_nodes, jobs[1].exclusive) == (12, 3, True)
    assert (jobs[2].cpus, jobs[2].exclusive) == (6, False)


def test_the_backfill_agents_catch_up_always_moves_forward(tmp_path: Path) -> None:
    """Fractional instants (an `epilog` of 0.7 s) put the agent's next cycle a rounding
    error before `now`; catching up once spun there for ever (a whole simulation hung).
    An alarm turns a hang into a failure."""
    import signal

    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=2\n")
    policy = SlurmPolicy(SlurmOptions(epilog=0.7), setup.cluster)
    policy.configure(setup.conf, setup.assocs, {})
    policy.bf_last = policy.bf_update = 10.3
    policy.bf_estimates = True
    policy.bf_changed = False
    now = 10.3 + 2 + 5e-10  # the next cycle, 10.3 + 2, lies 5e-10 s before it

    def hung(*_: object) -> None:
        raise AssertionError("catching up did not return")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)
    try:
        policy._catch_up_backfill(now)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    nxt = policy._bf_next()
    assert nxt is None or nxt >= now - 1e-9


def test_the_time_limit_checks_phase_is_read_off_the_recorded_kills(tmp_path: Path) -> None:
    # Three jobs killed at their 1-minute limit by checks 24 s past each 30 s of the
    # log's clock (started at 6, 40 and 100 s, they end at 84, 114 and 174 s: the first
    # check after their limit), and three backfilled starts 1 s past
    # each 3 s. SlurmSetup.prepare lets the killed jobs run on past every check, so
    # the phases must come from the ends the log recorded, not from the lengthened jobs.
    main, bf = "SchedMain", "SchedBackfill"
    rows = [(1, 0, 6, 84, "TIMEOUT", main), (2, 10, 40, 114, "TIMEOUT", main),
            (3, 20, 100, 174, "TIMEOUT", main), (4, 30, 31, 40, "COMPLETED", bf),
            (5, 40, 43, 50, "COMPLETED", bf), (6, 50, 52, 55, "COMPLETED", bf)]
    policy, said = bound_to_log(
        tmp_path, [f"{j}|{at_second(s)}|{at_second(b)}|{at_second(e)}|00:01:00|1|4|"
                   f"{state}|{flags}" for j, s, b, e, state, flags in rows],
        "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=3\n")
    assert policy.options.check_phase == 24.0 and policy.options.bf_phase == 1.0, said
    assert said is not None and "3 of 3 time-outs" in said


@pytest.mark.parametrize("flags, wait, boot", [("SchedMain", 0, 600.0), ("SchedMain", 1, 2.0),
                                               ("SchedMain", 2, 1.0), ("SchedMain", 5, 0.0),
                                               ("SchedBackfill", 1, 0.0)])
def test_a_controller_long_up_is_read_off_the_first_jobs_start(
        tmp_path: Path, flags: str, wait: int, boot: float) -> None:
    # A job submitted at time 0 that the main scheduler starts at once found the
    # background thread's last pass at least batch_sched_delay (3 s) ago: the controller
    # was up before the log began (boot 600). Started 1 or 2 s later, the tick of time 0
    # could not run a pass yet and that of 1 or 2 could: its last pass was 2 or 1 s
    # before time 0. Started by backfill, or by a main pass that came later, it says
    # nothing: the controller started at time 0.
    row = (f"1|{at_second(0)}|{at_second(wait)}|{at_second(30)}|00:01:00|1|4|COMPLETED|"
           f"{flags}")
    conf = "SchedulerType=sched/backfill\n"
    policy, _ = bound_to_log(tmp_path, [row], conf)
    assert policy.boot == boot
    policy, _ = bound_to_log(tmp_path, [row], conf, boot=7.0)  # given: kept
    assert policy.boot == 7.0


def test_the_backfill_phase_is_the_one_the_log_starts_with(tmp_path: Path) -> None:
    # The agent sleeps bf_interval from each cycle's end, so its phase drifts: here the
    # log's first 20 backfilled starts fall 1 s past each 5 s and the next 40 at 2 s.
    # The phase a simulation starts from is the first one.
    starts = [5 * k + 1 for k in range(20)] + [5 * k + 2 for k in range(20, 60)]
    policy, said = bound_to_log(
        tmp_path, [f"{j + 1}|{at_second(b - 1)}|{at_second(b)}|{at_second(b + 3)}|00:01:00|"
                   "1|4|COMPLETED|SchedBackfill" for j, b in enumerate(starts)],
        "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=5\n")
    assert policy.options.bf_phase == 1.0, said


def test_a_late_submission_is_seen_in_the_next_second(tmp_path: Path) -> None:
    # Job 1 holds 3 of 4 nodes until 20; job 3 (1 node, submitted at 5) fits beside. The
    # background thread's pass in second 5 starts it, unless the submission came after
    # that tick (submit_after_tick): then second 6's. With job 2 (3 nodes) waiting ahead
    # of it, the main scheduler stops at job 2 and only backfill can start job 3 before
    # job 1 ends: at the cycle of second 5, unless the submission came after it
    # (submit_after_backfill): then at second 6's (cycles every second while there is
    # news).
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 0, 20, nodes=3), job(setup, 3, 5, 10, nodes=1)]
    assert starts(run(setup, jobs)[0]) == {1: 0.0, 3: 5.0}
    engine, _ = run(setup, jobs, submit_after_tick=1.0)
    assert starts(engine) == {1: 1.0, 3: 6.0}  # job 1's submission too: seen at 1
    assert engine.finished[3].submit == 5.0  # its wait counts from its submission
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=1,batch_sched_delay=30\n")
    jobs = [job(setup, 1, 0, 20, nodes=3), job(setup, 2, 0, 10, nodes=3),
            job(setup, 3, 5, 10, nodes=1, limit=10)]
    engine, policy = run(setup, jobs)
    assert starts(engine)[3] == 5.0 and policy.started_by[3] == "backfill"
    engine, policy = run(setup, jobs, submit_after_backfill=1.0)
    assert starts(engine)[3] == 6.0 and policy.started_by[3] == "backfill"


def test_a_job_backfill_started_ends_after_the_tick_where_cycles_come_later(
        tmp_path: Path) -> None:
    # Where the backfill agent's cycles fall later in the second than the background
    # thread's tick, a job a cycle started ends (its launch time past the cycle's phase)
    # after the tick of its last second: that tick does not see it, the next does.
    # Job 1 is started by the first backfill cycle (1 s: boot 0, the background thread
    # has just run) and ends at 13, a second without a cycle (they come at 6, 11, 16);
    # job 2, submitted at 5, waits for its nodes: the tick of 14 starts it.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5\n", nodes=NODES)
    jobs = [job(setup, 1, 0, 12, nodes=4), job(setup, 2, 5, 50, nodes=2)]
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=1.0, backfill_after_tick=1.0)
    assert policy.started_by[1] == "backfill" and starts(engine)[1] == 1.0
    assert starts(engine)[2] == 14.0 and policy.started_by[2] == "main"
    # Taken as before the tick (the default where nothing says otherwise): 13.
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=1.0)
    assert starts(engine)[2] == 13.0 and policy.started_by[2] == "main"


def test_backfill_after_the_tick_is_read_off_submissions_between_them(
        tmp_path: Path) -> None:
    # Submissions the tick of their own second never started (it came before them) but
    # that second's backfill cycle did: the cycle comes after the tick in the second.
    rows = []
    for j in range(12):
        flag, wait = ("SchedBackfill", 0) if j % 2 else ("SchedMain", 1)
        sub = 10 * j + 3
        rows.append(f"{j + 1}|{at_second(sub)}|{at_second(sub + wait)}|"
                    f"{at_second(sub + wait + 5)}|00:01:00|1|4|COMPLETED|{flag}")
    conf = "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=2\n"
    policy, said = bound_to_log(tmp_path, rows, conf)
    assert policy.options.submit_after_tick == 1.0
    assert policy.options.submit_after_backfill == 0.0
    assert policy.options.backfill_after_tick == 1.0
    assert said is not None and "backfill cycles later in the second" in said
    # Given, it is left alone; with the submissions' order against the tick unknown,
    # nothing is read.
    policy, _ = bound_to_log(tmp_path, rows, conf, backfill_after_tick=0.0)
    assert policy.options.backfill_after_tick == 0.0
    policy, _ = bound_to_log(tmp_path, rows[:4], conf)
    assert policy.options.backfill_after_tick == -1.0
    # Nothing said about the cycle (too few quick backfilled starts): the emulation takes
    # submissions as before it, and so the cycle as after the tick.
    mains = [row for row in rows if row.endswith("SchedMain")]
    policy, _ = bound_to_log(tmp_path, mains, conf)
    assert policy.options.submit_after_backfill == -1.0
    assert policy.options.backfill_after_tick == 1.0


@pytest.mark.parametrize("flag, same, after, late", [
    ("SchedBackfill", 0, 8, 1.0), ("SchedBackfill", 1, 8, 1.0),
    ("SchedBackfill", 4, 6, 0.0), ("SchedBackfill", 2, 2, None),
    ("SchedMain", 0, 6, 1.0), ("SchedMain", 3, 3, 0.0)])
def test_late_submissions_are_read_off_the_logs_quick_starts(
        tmp_path: Path, flag: str, same: int, after: int, late: float | None) -> None:
    # A job started in its submission's second needs a pass of that second after the
    # submission: none (or one in six) among those a thread started within a second says
    # the submissions came after that thread's turn; fewer than five such jobs say nothing.
    rows = []
    for j in range(same + after):
        wait = 0 if j < same else 1
        sub = 10 * j + 3
        rows.append(f"{j + 1}|{at_second(sub)}|{at_second(sub + wait)}|"
                    f"{at_second(sub + wait + 5)}|00:01:00|1|4|COMPLETED|{flag}")
    policy, said = bound_to_log(tmp_path, rows, "SchedulerType=sched/backfill\n"
                                "SchedulerParameters=bf_interval=2\n")
    option = ("submit_after_backfill" if flag == "SchedBackfill" else "submit_after_tick")
    if late is None:
        # the quick starts say nothing (for the cycle the first job may: test_the_first_
        # job_says_whether_submissions_come_after_their_seconds_cycle)
        assert said is None or "jobs it started in it" not in said
        if flag == "SchedMain":
            assert getattr(policy.options, option) == -1.0
    else:
        assert getattr(policy.options, option) == late, said
        assert said is not None and ("after the " if late else "before the ") in said


def test_a_submission_between_the_tick_and_the_cycle_is_seen_by_the_cycle(
        tmp_path: Path) -> None:
    # Submissions after the background tick of their second but before its backfill
    # cycle (as multifactor-fs/r7's log has them): the tick's main pass does not see
    # the job, the cycle of the same second does. Cycles at 1, 6, 11 (bf_interval 5,
    # phase 1); job 1 is submitted at 6 onto an idle machine: the cycle of 6 starts it.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5\n", nodes=NODES)
    jobs = [job(setup, 1, 6, 20, nodes=2)]
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=1.0, submit_after_tick=1.0,
                         submit_after_backfill=0.0)
    assert starts(engine)[1] == 6.0 and policy.started_by[1] == "backfill"
    # After the cycle too: nothing sees it before the next second, whose tick runs the
    # main scheduler (3 s since its last pass at 0).
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=1.0, submit_after_tick=1.0,
                         submit_after_backfill=1.0)
    assert starts(engine)[1] == 7.0 and policy.started_by[1] == "main"
    # Before both (the default): the tick of 6 starts it.
    engine, policy = run(setup, jobs, boot=0.0, bf_phase=1.0)
    assert starts(engine)[1] == 6.0 and policy.started_by[1] == "main"


def test_the_boot_read_off_a_first_job_started_a_second_late_starts_it_then(
        tmp_path: Path) -> None:
    # boot 2 (the background thread's last pass 2 s before time 0): a job submitted at
    # 0 waits for the tick of 1, the first 3 s after that pass — as the log it was
    # read off has it. (boot 0 would start it at 3; a long-up controller at 0.)
    setup = machine(tmp_path, "SchedulerType=sched/builtin\n")
    jobs = [job(setup, 1, 0, 50, nodes=1)]
    assert starts(run(setup, jobs, boot=2.0)[0]) == {1: 1.0}
    assert starts(run(setup, jobs, boot=0.0)[0]) == {1: 3.0}
    assert starts(run(setup, jobs, boot=600.0)[0]) == {1: 0.0}


@pytest.mark.parametrize("first, shift, expected", [
    ("1|{s0}|{s2}|{s9}|00:01:00|1|4|COMPLETED|SchedMain", 0, 1.0),
    ("1|{s0}|{s0}|{s9}|00:01:00|1|4|COMPLETED|SchedBackfill", 0, 0.0),
    ("1|{s0}|{s2}|{s9}|00:01:00|1|4|COMPLETED|SchedMain", 1, -1.0)])
def test_the_first_job_says_whether_submissions_come_after_their_seconds_cycle(
        tmp_path: Path, first: str, shift: int, expected: float) -> None:
    # Cycles every 4 s at 0, 4, 8, 12 (three backfilled starts say so); too few quick
    # starts to read the submissions' place. The first job, submitted in a cycle's
    # second onto a machine with room (started within batch_sched_delay): left to the
    # main scheduler 2 s later, the cycle of its second came before it ("after"); taken
    # by that cycle, before. With the cycles at 1, 5, 9, 13 (shift 1) its second had
    # none: nothing said.
    times = {"s0": at_second(0), "s2": at_second(2), "s9": at_second(9)}
    rows = [first.format(**times)] + [
        f"{j}|{at_second(4 * j - 5 + shift)}|{at_second(4 * j - 4 + shift)}|"
        f"{at_second(4 * j + 20)}|00:01:00|1|4|COMPLETED|SchedBackfill" for j in (2, 3, 4)]
    conf = "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=4\n"
    policy, said = bound_to_log(tmp_path, rows, conf)
    assert policy.options.bf_phase == float(shift), said
    assert policy.options.submit_after_backfill == expected, said


def test_a_cycle_before_the_tick_sees_none_of_its_seconds_ends(tmp_path: Path) -> None:
    # Cycles at 1, 6, 11 (bf_interval 5, phase 1); no Epilog script, so an end only
    # queues a pass for the background thread. Job 1 (4 nodes, 6 s) started by the tick
    # of 0 ends at 6, after the tick of 6 (shorter than launch / tick_drift, 23 s).
    # The cycle after the tick (-1, 1) sees that end: job 2 starts at 6 by backfill. The
    # cycle before the tick (0) comes before it too: the tick of 7 starts job 2.
    setup = machine(tmp_path, "SchedulerType=sched/backfill\nSchedulerParameters="
                              "bf_interval=5\n", nodes=NODES)
    jobs = [job(setup, 1, 0, 6, nodes=4), job(setup, 2, 2, 20, nodes=4)]
    for order in (-1.0, 1.0):
        engine, policy = run(setup, jobs, bf_phase=1.0, backfill_after_tick=order)
        assert starts(engine) == {1: 0.0, 2: 6.0} and policy.started_by[2] == "backfill"
    engine, policy = run(setup, jobs, bf_phase=1.0, backfill_after_tick=0.0)
    assert starts(engine) == {1: 0.0, 2: 7.0} and policy.started_by[2] == "main"
    # A 31 s job ends at 31, a cycle's second, before the tick: the tick of 31 starts
    # job 2 under either order (3 s since its last pass).
    jobs = [job(setup, 1, 0, 31, nodes=4), job(setup, 2, 2, 20, nodes=4)]
    for order in (-1.0, 0.0):
        engine, policy = run(setup, jobs, bf_phase=1.0, backfill_after_tick=order)
        assert starts(engine) == {1: 0.0, 2: 31.0} and policy.started_by[2] == "main"


@pytest.mark.parametrize("order", [0.0, -1.0])
def test_the_order_of_cycle_and_tick_is_read_off_a_logs_first_jobs(
        tmp_path: Path, order: float) -> None:
    # A log made by the emulation itself under one order (40 jobs of 1-4 nodes, 3-14 s,
    # a submission every 0-2 s, a fixed seed) is read back as that order: its first 30
    # jobs start as the log has them under it, not under the other.
    import random

    from schedd.slurm.second_order import read_orders

    conf = "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=5\n"
    setup = machine(tmp_path, conf, nodes=NODES)
    rng = random.Random(7)
    jobs, at = [], 0
    for jid in range(1, 41):
        jobs.append(job(setup, jid, at, rng.randint(3, 14), nodes=rng.randint(1, 4)))
        at += rng.randint(0, 2)
    engine, policy = run(setup, jobs, bf_phase=1.0, backfill_after_tick=order)
    flags = {"main": "SchedMain", "backfill": "SchedBackfill"}
    rows = []
    for spec, _ in jobs:
        done = engine.finished[spec.id]
        start, end = int(done.first_start), int(done.end_time)
        rows.append(f"{spec.id}|{at_second(int(spec.submit))}|{at_second(start)}|"
                    f"{at_second(end)}|00:10:00|{spec.nodes // 4}|{spec.nodes}|COMPLETED|"
                    f"{flags[policy.started_by[spec.id]]}")
    (tmp_path / "sacct.txt").write_text("\n".join([SACCT_HEAD] + rows) + "\n")
    from schedd.slurm.importers import import_log
    from schedd.traces import normalize

    trace = normalize(import_log("slurm", str(tmp_path / "sacct.txt")).trace,
                      procs_per_node=1, max_nodes=10**9)
    trace, table = setup.prepare(trace)
    read = SlurmPolicy(SlurmOptions(boot=600.0, epilog=0.0, bf_phase=1.0), setup.cluster)
    said = read_orders(setup, read, trace,
                            setup.bind(read, table, trace.header.unix_start_time, trace))
    assert read.options.backfill_after_tick == order, said
    assert said is not None and ("before the background tick" in said) == (order == 0.0)


@pytest.mark.parametrize(("decay_order", "first"), [(0.0, 3), (1.0, 2), (2.0, 2), (-1.0, 2)])
def test_where_the_decay_run_falls_in_its_second_decides_what_its_passes_see(
        tmp_path: Path, decay_order: float, first: int) -> None:
    """Jobs 2 (user u1) and 3 (u2) wait for job 1 (u1, every node), which ends at 60 s,
    the second of a decay run (PriorityCalcPeriod 1 min from time 0). They tie at their
    submission (no usage yet: job 2 first by submission); the run at 60 charges job 1's
    minute to u1 (at its end too, AccountingStorageEnforce=limits), after which u2's job
    goes first. The epilog pass of job 1's end, in that second, starts job 3 if the
    decay ran before it in the second (decay_order 0) and job 2 if it ran after the
    second's tick, as slurmctld does when its decay thread's instant in the second comes
    later (1, 2 and unset: 2)."""
    setup = machine(tmp_path, "SchedulerType=sched/builtin\nPriorityType=priority/multifactor\n"
                              "PriorityWeightFairshare=1000\nPriorityCalcPeriod=1\n"
                              "AccountingStorageEnforce=limits\n")
    jobs = [job(setup, 1, 0, 60, nodes=4, user="u1"), job(setup, 2, 1, 30, nodes=4, user="u1"),
            job(setup, 3, 2, 30, nodes=4, user="u2")]
    engine, _ = run(setup, jobs, decay_order=decay_order)
    second = 5 - first
    assert starts(engine) == {1: 0.0, first: 60.0, second: 90.0}


def test_a_log_the_decay_cannot_reorder_says_nothing_of_its_second(tmp_path: Path) -> None:
    # Multifactor with a job-size weight only: the decay thread's runs change no job's
    # priority, so every second of the period explains the log's first jobs alike.
    # The reading stops after a dozen of them and leaves the option unset.
    from schedd.slurm.importers import import_log
    from schedd.slurm.second_order import decay_phase_of, read_orders
    from schedd.traces import normalize

    conf = ("SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=5\n"
            "PriorityType=priority/multifactor\nPriorityWeightJobSize=100\n"
            "PriorityCalcPeriod=1\n")
    rows = [f"{jid}|{at_second(3 * jid)}|{at_second(3 * jid + 1)}|{at_second(3 * jid + 8)}|"
            f"00:10:00|1|4|COMPLETED|SchedBackfill" for jid in range(1, 70)]
    (tmp_path / "sacct.txt").write_text("\n".join([SACCT_HEAD] + rows) + "\n")
    setup = machine(tmp_path, conf)
    trace = normalize(import_log("slurm", str(tmp_path / "sacct.txt")).trace,
                      procs_per_node=1, max_nodes=10**9)
    trace, table = setup.prepare(trace)
    policy = SlurmPolicy(SlurmOptions(), setup.cluster)
    said = setup.bind(policy, table, trace.header.unix_start_time, trace)
    assert decay_phase_of(setup, policy, trace) is None
    said = read_orders(setup, policy, trace, said)
    assert policy.options.decay_phase == -1.0
    assert said is None or "decay thread's runs" not in said
