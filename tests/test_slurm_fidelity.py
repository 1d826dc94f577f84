"""The Slurm emulation against the committed real-Slurm reference runs
(bench/slurm_reference/runs, made by bench/slurm_reference.py on Slurm 22.05.8): job by
job, as close to Slurm as Slurm is to itself. No Slurm is needed: the runs are data.

The goals of issue 33 — priority/basic with backfill: 70% of jobs within 2 s of Slurm's
wait and the total wait within 3%; multifactor: 60% and 5% — are what a quiet machine
gave between two real runs of such a workload. Where the committed runs agree with each
other less than that, their agreement is the bar: no emulation can be held closer to one
run than the runs are to each other. Which two runs are paired matters: the committed
runs of one workload agree pairwise on 21% to 100% of jobs (docs/slurm.md), so the bar
is the least-agreeing pair, less SLACK_WITHIN2 — schedd's pooled agreement is to lie
within the spread of Slurm's agreement with itself — and the total wait is held to the
widest gap between the total waits of two of its runs, plus SLACK_TOTAL. Where schedd
falls short of that bar the case is a strict expected failure (KNOWN_GAPS, each with its
reason); on every workload it must be closer to Slurm than EASY is. docs/slurm.md has the
table (bench/slurm_fidelity.py).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from schedd.slurm.conf import read_slurm_conf
from schedd.slurm.fidelity import (
    Agreement,
    Simulated,
    consensus,
    each_pair,
    mean_between,
    on_jobs,
    pooled,
    runs_of,
    simulate_run,
    simulate_runs,
)

RUNS = Path(__file__).resolve().parent.parent / "bench" / "slurm_reference" / "runs"
GOALS = {"basic": (0.70, 0.03), "multifactor": (0.60, 0.05)}
# Slack on the bar set by Slurm's own agreement: every pairing of runs is a sample of
# Slurm's noise; the committed pairings of a workload differ by 6 to 21 points.
SLACK_WITHIN2 = 0.05
SLACK_TOTAL = 0.02

WORKLOADS = runs_of(RUNS) if RUNS.exists() else {}
pytestmark = pytest.mark.skipif(not WORKLOADS, reason=f"no reference runs in {RUNS}")


def kind(run: Path) -> str:
    conf = read_slurm_conf(run / "slurm.conf")
    return "multifactor" if conf.priority.multifactor else "basic"


# Where schedd is not yet as close to Slurm as Slurm is to its own runs (docs/slurm.md,
# "How close to Slurm", says why): expected failures, strict, so that closing a gap fails
# the test until its entry here is removed.
KNOWN_GAPS: dict[tuple[str, str], str] = {
    ("partitions", "consensus total"): "+4.7% on the 23 jobs every run agrees on: job 36, "
                                       "which Slurm backfills at 105 s in the second job 23 "
                                       "ended in, starts 3 s late in r2, r4, r5 and r9, "
                                       "whose first 30 jobs put the backfill cycle before "
                                       "the tick; by 105 s the tick has drifted (1.3 ms/s) "
                                       "to before the cycle, which then sees that end, and "
                                       "the order read off a log's first jobs is kept for "
                                       "the whole run (docs/slurm.md, What runs when)",
}


@functools.cache
def _simulated(workload: str, policy: str = "slurm") -> list[Simulated]:
    return simulate_runs(WORKLOADS[workload], policy)


def _pooled(workload: str, policy: str = "slurm") -> Agreement:
    return pooled(_simulated(workload, policy))


@pytest.mark.parametrize("workload, measure", [(w, m) for w in sorted(WORKLOADS)
                                               for m in ("within2", "total")])
def test_as_close_to_slurm_as_slurm_is_to_itself(workload: str, measure: str,
                                                  request: pytest.FixtureRequest) -> None:
    if (workload, measure) in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(strict=True,
                                              reason=KNOWN_GAPS[(workload, measure)]))
    runs = WORKLOADS[workload]
    assert len(runs) >= 2, f"{workload}: every workload is run at least twice"
    goal_within2, goal_total = GOALS[kind(runs[0])]
    ceiling = mean_between(runs)
    assert ceiling is not None
    pairings = each_pair(runs)
    least = min(a.within2 for a in pairings)
    widest = max(abs(a.total_diff) for a in pairings)
    sim = _pooled(workload)
    if measure == "within2":
        bar_within2 = min(goal_within2, least - SLACK_WITHIN2)
        assert sim.within2 >= bar_within2, (
            f"{workload}: {sim.within2:.0%} of jobs within 2 s of Slurm (bar "
            f"{bar_within2:.0%}; Slurm against itself {ceiling.within2:.0%}, {least:.0%} in "
            f"its least-agreeing pair of runs)")
    else:
        bar_total = max(goal_total, widest + SLACK_TOTAL)
        assert abs(sim.total_diff) <= bar_total, (
            f"{workload}: total wait {sim.total_diff:+.1%} against Slurm's (bar "
            f"{bar_total:.1%}; Slurm against itself {ceiling.total_diff:+.1%}, "
            f"{widest:.1%} apart in its widest pair of runs)")


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_closer_to_slurm_than_easy_on_every_workload(workload: str) -> None:
    """The baseline schedd had before it read a slurm.conf: EASY on the same machine and
    jobs. The emulation is closer to Slurm job by job and in total on every workload."""
    ours, easy = _pooled(workload), _pooled(workload, "easy")
    assert ours.within2 >= easy.within2 + 0.05, (workload, ours.within2, easy.within2)
    assert abs(ours.total_diff) < abs(easy.total_diff), (workload, ours.total_diff,
                                                          easy.total_diff)


@pytest.mark.parametrize("workload, measure", [(w, m) for w in sorted(WORKLOADS)
                                               for m in ("consensus within2",
                                                         "consensus total")])
def test_where_slurm_repeats_itself_the_goals_hold_as_written(
        workload: str, measure: str, request: pytest.FixtureRequest) -> None:
    """On the jobs every real run agrees on (waits within 2 s of each other) Slurm's own
    noise is gone, so no pairing of runs lowers the bar: the issue's goals apply there as
    written, job by job and in total."""
    if (workload, measure) in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(strict=True,
                                              reason=KNOWN_GAPS[(workload, measure)]))
    runs = WORKLOADS[workload]
    agreed = consensus(runs)
    assert len(agreed) >= 10, f"{workload}: only {len(agreed)} jobs on which its runs agree"
    goal_within2, goal_total = GOALS[kind(runs[0])]
    got = on_jobs(_simulated(workload), agreed)
    if measure == "consensus within2":
        assert got.within2 >= goal_within2, (
            f"{workload}: {got.within2:.0%} of the jobs its {len(runs)} runs agree on within "
            f"2 s of Slurm (goal {goal_within2:.0%})")
    else:
        assert abs(got.total_diff) <= goal_total, (
            f"{workload}: total wait {got.total_diff:+.1%} on the jobs its runs agree on "
            f"(goal {goal_total:.0%})")


def test_consensus_keeps_only_the_jobs_every_run_agrees_on(tmp_path: Path) -> None:
    # Three runs of a three-job workload: job 1 waits 10, 11, 12 s (within 2 s: kept),
    # job 2 10, 13, 10 s (3 s apart: not), job 3 never starts in one run (not).
    head = "JobIDRaw|Submit|Start|End|Timelimit|NNodes|NCPUS|State"
    waits = {1: (10, 11, 12), 2: (10, 13, 10), 3: (5, 5, None)}
    runs = []
    for k in range(3):
        run = tmp_path / f"r{k + 1}"
        run.mkdir()
        rows = [head]
        for job, w in waits.items():
            start = ("Unknown" if w[k] is None
                     else f"2026-01-01T00:00:{w[k]:02d}")
            end = "Unknown" if w[k] is None else f"2026-01-01T00:01:{w[k]:02d}"
            state = "PENDING" if w[k] is None else "COMPLETED"
            rows.append(f"{job}|2026-01-01T00:00:00|{start}|{end}|00:05:00|1|1|{state}")
        (run / "sacct.txt").write_text("\n".join(rows) + "\n")
        runs.append(run)
    assert consensus(runs) == {1}
    assert consensus(runs, tolerance=3.0) == {1, 2}


def test_every_job_of_a_run_is_accounted_for() -> None:
    for runs in WORKLOADS.values():
        for run in runs:
            sim = simulate_run(run)
            lines = (run / "sacct.txt").read_text().splitlines()[1:]
            assert len(sim.pairs) == len([x for x in lines if x.strip()])


def test_decay_phase_read_off_weighted_sprio_snapshots(tmp_path):
    """sprio's %A is the age factor times PriorityWeightAge: a job eligible at 0 s seen
    with age 167 of 1000 (PriorityMaxAge 600 s) was last recomputed at 100 s, phase 40 of
    a 60-s PriorityCalcPeriod."""
    from schedd.slurm.fidelity import decay_phase
    from schedd.slurm.importers import import_log

    run = runs_of(RUNS)["multifactor-fs"][0]
    (tmp_path / "sacct.txt").write_text((run / "sacct.txt").read_text())
    # Job 1 is the first submitted: eligible at the workload's time 0, Unix time t0.
    t0 = import_log("slurm", str(run / "sacct.txt")).trace.header.unix_start_time
    rows = ["TIME\tJOBID\tAGE\tFAIRSHARE\tJOBSIZE\tPARTITION\tPRIORITY"]
    for tick in (100, 160, 220):
        age = round(tick / 600 * 1000)
        rows.append(f"{t0 + tick + 2}\t1\t{age}\t10000\t62\t0\t{10062 + age}")
    (tmp_path / "sprio.tsv").write_text("\n".join(rows) + "\n")
    assert decay_phase(tmp_path, 60, 600, 1000) == 40.0
    assert decay_phase(tmp_path, 60, 600, 0) is None  # no age weight: nothing to read


def test_decay_phase_of_the_committed_multifactor_runs():
    """The committed multifactor runs' decay thread ran 56 s past each minute of the
    workload's clock (their sprio snapshots: age recomputed at 56, 116, ... s)."""
    from schedd.slurm.fidelity import decay_phase

    for run in runs_of(RUNS)["multifactor-fs"][:3]:
        assert decay_phase(run, 60, 600, 1000) == 56.0, run.name


def _sacct_rows(run: Path) -> list[dict[str, str]]:
    import csv
    with open(run / "sacct.txt", newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def _fair_share_over_real_schedule(run: Path, phase: float, heavy: Any = None,
                                   ) -> list[tuple[float, dict]]:
    """The decay thread's runs at phase + k x PriorityCalcPeriod over what the real Slurm
    ran (sacct's starts and ends): each run's Fair Tree factor per (account, user).

    sacct keeps whole seconds: a job's true start and end lie up to a second after the
    recorded ones. `heavy(account, user)` -> True, False or None picks an extreme within
    that: True charges the job from its recorded start to a second past its recorded end
    (the most it can have run), False from a second past its start to its end (the
    least), None as recorded."""
    from datetime import datetime

    from schedd.slurm import fairshare
    from schedd.slurm.assoc import read_associations
    from schedd.slurm.importers import import_log

    conf = read_slurm_conf(run / "slurm.conf")
    prio = conf.priority
    assocs = read_associations(run / "assoc.txt")
    t0 = import_log("slurm", str(run / "sacct.txt")).trace.header.unix_start_time
    ran = []
    for row in _sacct_rows(run):
        if row["Start"] in ("None", "Unknown", ""):
            continue
        start = datetime.fromisoformat(row["Start"]).timestamp() - t0
        end = datetime.fromisoformat(row["End"]).timestamp() - t0
        side = heavy(row["Account"], row["User"]) if heavy else None
        if side is True:
            end += 1
        elif side is False and end - start > 1:
            start += 1
        ran.append((start, end, int(row["NCPUS"]), assocs.charged(row["Account"], row["User"])))
    horizon = max(end for _, end, _, _ in ran) + prio.calc_period
    factor = fairshare.decay_factor(prio.decay_half_life)
    ticks = []
    last, tick = phase - prio.calc_period, phase
    while tick <= horizon:
        fairshare.decay(assocs, factor, tick - last)
        for start, end, cpus, assoc in ran:
            lo, hi = max(start, last), min(end, tick)
            # A job that ended between two runs is charged its last part only where
            # AccountingStorageEnforce has limits (as in the emulation).
            if hi > lo and (end > tick or conf.enforce_limits):
                fairshare.charge(assoc, cpus, hi - lo, factor)
        fairshare.fair_tree(assocs)
        ticks.append((tick, {(a.account, a.user): a.fs_factor for a in assocs.user_assocs}))
        last, tick = tick, tick + prio.calc_period
    return ticks


@pytest.mark.skipif("multifactor-fs" not in WORKLOADS, reason="no multifactor runs")
def test_fair_share_over_slurms_own_schedule_is_what_sprio_showed() -> None:
    """schedd's decayed usage and Fair Tree ranking, fed the jobs a real Slurm ran, give
    the fair-share factor Slurm's sprio showed for every pending job at every snapshot
    (a snapshot in the decay run's own second may show either side of it). Where two
    associations are nearly tied, the second sacct does not keep decides their order
    (multifactor-fs/r7 at 357 s: a1's level fair-share 0.8109 against a4's 0.8069): a
    factor is also accepted where the job's account, or its user, charged the most its
    jobs can have run and everyone else the least, or the reverse, gives it."""
    import bisect

    from schedd.slurm.fidelity import decay_phase
    from schedd.slurm.importers import import_log

    for run in WORKLOADS["multifactor-fs"]:
        prio = read_slurm_conf(run / "slurm.conf").priority
        phase = decay_phase(run, prio.calc_period, prio.max_age, prio.weight_age)
        assert phase is not None
        ticks = _fair_share_over_real_schedule(run, phase)
        times = [t for t, _ in ticks]
        owner = {int(r["JobIDRaw"]): (r["Account"], r["User"]) for r in _sacct_rows(run)}
        extremes = {}
        for key in set(owner.values()):
            for side in (True, False):
                extremes[key, side, "account"] = _fair_share_over_real_schedule(
                    run, phase, lambda a, u, k=key, s=side: s if a == k[0] else not s)
                extremes[key, side, "user"] = _fair_share_over_real_schedule(
                    run, phase, lambda a, u, k=key, s=side: s if (a, u) == k else not s)
        t0 = import_log("slurm", str(run / "sacct.txt")).trace.header.unix_start_time
        lines = (run / "sprio.tsv").read_text().splitlines()
        where = {name: k for k, name in enumerate(lines[0].split("\t"))}
        seen = agreed = exact = 0

        def shows(values: set[float | None], shown: int, weight: float = prio.weight_fairshare
                  ) -> bool:
            return any(v is not None and abs(v * weight - shown) <= 1 for v in values)

        for line in lines[1:]:
            cells = line.split("\t")
            at = int(cells[where["TIME"]]) - t0
            jid, shown = int(cells[where["JOBID"]]), int(cells[where["FAIRSHARE"]])
            before = bisect.bisect_left(times, at) - 1
            if before < 0 or jid not in owner:
                continue
            near = [before] + ([before + 1] if before + 1 < len(ticks)
                               and times[before + 1] < at + 1 else [])
            key = owner[jid]
            candidates = {schedule[k][1].get(key) for k in near
                          for schedule in [ticks] + [extremes[key, side, level]
                                                     for side in (True, False)
                                                     for level in ("account", "user")]}
            exact += shows({ticks[k][1].get(key) for k in near}, shown)
            seen += 1
            agreed += shows(candidates, shown)
        assert seen > 1000, run.name
        assert agreed == seen, f"{run.name}: {seen - agreed} of {seen} snapshots differ"
        # The whole-second leeway decides only near ties: most factors match exactly.
        assert exact >= 0.9 * seen, f"{run.name}: {exact} of {seen} exact"


CHECKS = RUNS.parent / "checks"


@pytest.mark.skipif(not (CHECKS / "multifactor-fs-s61").exists(), reason="no check run")
def test_cycles_after_planned_nodes_run_as_slurm_runs_them() -> None:
    """multifactor-fs-s61/r1 (a real run): Slurm's backfill cycle at 134 s, with nothing
    new since its cycle at 129 s but the PLANNED flags that cycle set on idle nodes
    (`_handle_planned`), backfilled jobs 13, 17 and 33. The emulation computes that
    cycle and starts the three then, as Slurm did; with `planned_nodes` off (the model
    before) such a cycle was taken to start nothing and they waited for the next news,
    5 s later."""
    run = CHECKS / "multifactor-fs-s61" / "r1"
    for option, late in (("true", 0.0), ("false", 5.0)):
        waits = {p.job: (p.wait_a, p.wait_b, p.how_b)
                 for p in simulate_run(run, planned_nodes=option).pairs
                 if p.job in (13, 17, 33)}
        assert waits == {13: (103.0, 103.0 + late, "backfill"),
                         17: (87.0, 87.0 + late, "backfill"),
                         33: (47.0, 47.0 + late, "backfill")}, option


@pytest.mark.skipif(not (CHECKS / "basic-bftuned-s61").exists(), reason="no check run")
def test_jobs_a_time_outs_epilog_message_started_end_after_the_tick() -> None:
    """basic-bftuned-s61/r1 (a real run): job 12 was started by the main pass of job
    11's epilog-complete message at 87.58 s, 29 ms after the time-limit check killed job
    11 at the background thread's tick, and ended at 94.595 s, after the tick of 94 (its
    pass had run for two submissions at 94.065 s). So nothing started on its 16 nodes
    before 97 s (batch_sched_delay 3 s, the backfill cycle at 97.196 s). With the lag
    (`check_message_lag`) jobs 14-19 start at 97 s, as in Slurm; without it the end is
    taken as before the tick of 94, which starts them then. The order of cycle and tick
    is set, not read, so that only this rule differs."""
    run = CHECKS / "basic-bftuned-s61" / "r1"
    for option, start in (("0.03", 97.0), ("-1", 94.0)):
        sim = simulate_run(run, read_order=False, backfill_after_tick="-1",
                           check_message_lag=option)
        starts = {p.job: (p.submit + p.wait_a, p.submit + p.wait_b)
                  for p in sim.pairs if 14 <= p.job <= 19}
        assert starts == {job: (97.0, start) for job in range(14, 20)}, option



@pytest.mark.skipif(not (CHECKS / "multifactor-fs-s61").exists(), reason="no check run")
def test_a_cycle_before_the_decay_run_in_its_second_sees_the_old_priorities() -> None:
    """multifactor-fs-s61/r1 (a real run): the decay thread recomputed priorities in
    second 234 after the backfill cycle at 234.346 s (sprio at 234 shows the old
    priorities, at 237 ages computed at 234) and before the tick's main pass. That cycle
    still ranked jobs 31, 53, 67 and 81 first and backfilled them, as the emulation does
    with the decay between cycle and tick (decay_order 1), which simulate reads off this
    log; with the decay first in its second (0, the model before) the cycle ranks jobs
    20, 55, 62 and 82 above them and starts 41 and 64 instead."""
    run = CHECKS / "multifactor-fs-s61" / "r1"
    quartet = (31, 53, 67, 81)
    read = simulate_run(run)
    assert read.policy.options.decay_order == 1.0
    for order, at in (("1", 234.0), ("0", None)):
        sim = simulate_run(run, decay_order=order)
        starts = {p.job: (p.submit + p.wait_b, p.how_b) for p in sim.pairs}
        real = {p.job: p.submit + p.wait_a for p in sim.pairs}
        for job in quartet:
            assert real[job] == 234.0
            assert (starts[job] == (234.0, "backfill")) == (at is not None), (order, job)
    assert agreement_of(read).within2 > agreement_of(
        simulate_run(run, decay_order="0")).within2 + 0.3


def agreement_of(sim: Simulated) -> Agreement:
    from schedd.slurm.fidelity import agreement

    return agreement(sim.pairs)

# A whole number of days longer than 2**25 s (a year and a month): every periodic timer's
# period divides it, and past 2**23 s the float spacing of a time exceeds 1e-9 s, the
# policy's absolute tolerance, so a comparison of two sums of the same instant that
# leaned on it would flip.
LATE = 86400.0 * 400


@pytest.mark.parametrize("run", ["runs/basic-bf2/r1", "runs/multifactor-fs/r1",
                                 "runs/partitions/r3", "checks/basic-bftuned-s61/r1"])
def test_a_run_a_year_into_the_log_is_scheduled_as_at_its_start(
        run: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A centre's log of a year or more puts its last jobs past 2**25 s of its start.
    The same jobs, with the controller's clocks, shifted that far (the epoch moved back
    as far, so bf_resolution's and the decay thread's wall-clock phases stay): every
    job starts the same time after its submission, by the same thread."""
    import dataclasses

    import numpy as np

    import schedd.slurm.fidelity as fidelity
    from schedd.slurm.policy import SlurmPolicy

    path = RUNS.parent / run
    plain = simulate_run(path)
    normalize, setup = fidelity.normalize, SlurmPolicy._setup

    def shifted_trace(trace: Any, **kw: Any) -> Any:
        out = normalize(trace, **kw)
        cols = out.columns
        cols["submit"] = cols["submit"] + LATE
        for name in ("eligible", "cancel_time", "req_start"):
            cols[name] = np.where(cols[name] >= 0, cols[name] + LATE, cols[name])
        out.header = dataclasses.replace(
            out.header, unix_start_time=out.header.unix_start_time - int(LATE))
        return out

    def shifted_clocks(self: SlurmPolicy) -> None:
        setup(self)  # the controller's last passes, cycle and decay, LATE later
        for name in ("last_sched", "last_full", "bf_last", "next_decay", "g_last_ran"):
            setattr(self, name, getattr(self, name) + LATE)

    monkeypatch.setattr(fidelity, "normalize", shifted_trace)
    monkeypatch.setattr(SlurmPolicy, "_setup", shifted_clocks)
    late = simulate_run(path)
    for a, b in zip(plain.pairs, late.pairs, strict=True):
        assert (a.job, a.how_b) == (b.job, b.how_b)
        assert b.wait_b == pytest.approx(a.wait_b, abs=1e-6), a.job
    assert late.policy.stats() == plain.policy.stats()


@pytest.mark.skipif(not (CHECKS / "multifactor-fs-s61").exists(), reason="no check run")
def test_simulate_reads_the_decay_threads_second_off_the_sacct_log_alone(
        tmp_path: Path) -> None:
    """A centre has its sacct log, slurm.conf and associations, no sprio snapshots. As
    a user runs them, `schedd import slurm` then `schedd simulate --slurm-conf
    --slurm-assoc`: simulate reads the decay thread's second of the minute off the log
    (54 s, what the run's own sprio snapshots say: decay_phase) and its place between
    the backfill cycle and the tick, and the schedule it writes is the one
    bench/slurm_fidelity.py measures with the snapshots (81% of jobs within 2 s of
    Slurm, where the decay at the start of the minute gave 15%)."""
    import csv
    import math
    import subprocess
    import sys

    run = CHECKS / "multifactor-fs-s61" / "r1"
    trace = tmp_path / "s61.swf"

    def schedd(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                              text=True, timeout=300, check=True)

    schedd("import", "slurm", str(run / "sacct.txt"), "-o", str(trace))
    done = schedd("simulate", "--trace", str(trace), "--slurm-conf", str(run / "slurm.conf"),
                  "--slurm-assoc", str(run / "assoc.txt"), "--out", str(tmp_path / "out"),
                  "--quiet")
    assert "the decay thread's runs 54 s past each 60 s" in done.stderr
    assert "the decay thread runs between its second's backfill cycle and tick" in done.stderr
    with open(tmp_path / "out" / "jobs.csv", newline="") as f:
        rows = {int(r["id"]): float(r["wait"]) for r in csv.DictReader(f)}
    measured = {p.job: p.wait_b for p in simulate_run(run).pairs
                if math.isfinite(p.wait_b)}  # not the jobs cancelled while they waited
    ids = {int(line.split("\t")[1]): int(line.split("\t")[0])
           for line in (run / "jobmap.tsv").read_text().splitlines()[1:]}
    assert {ids.get(j, j): w for j, w in rows.items() if ids.get(j, j) in measured} \
        == pytest.approx({j: w for j, w in measured.items()})


def test_the_backfill_agents_phase_is_the_one_its_log_begins_with() -> None:
    """The agent's instant within the second drifts by its cycles' durations; crossing a
    whole second it moves its cycles to the next one. multifactor-fs-s73/r1's cycles
    fell at .93-.99 s of the seconds 3 past each 5 s until 114 s, then at .006 s of the
    next: two backfilled starts (88 and 98 s) on residue 3, the next eighteen on 4. The
    phase at the log's start is read off its first two backfilled starts in a row on one
    residue, not the most common of the first twenty; with 4 from time 0 the emulation
    ran its cycle of 84 s after job 11's end at 84.409, where Slurm's had run at 83.968,
    and backfilled jobs 4, 6 and 19 at once."""
    from schedd.slurm.machine import first_residue

    assert first_residue([88.0, 98.0, 129.0, 129.0, 134.0], 5) == 3.0
    assert first_residue([3.0, 9.0, 14.0, 19.0], 5) == 4.0  # a lone start off it first
    assert first_residue([3.0, 9.0], 5) is None
    run = CHECKS / "multifactor-fs-s73" / "r1"
    if not run.exists():
        pytest.skip("no check run")
    read = simulate_run(run)
    assert read.policy.options.bf_phase == 3.0
    from schedd.slurm.fidelity import agreement

    assert agreement(read.pairs).within2 > 0.5
    assert agreement(simulate_run(run, bf_phase="4").pairs).within2 < 0.2
