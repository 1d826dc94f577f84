"""slurmctld's own instants (bench/slurm_reference.py `timeline`) and what
bench/slurm_subsecond.py reads off them, on hand-written log lines in Slurm 22.05's
format; no Slurm needed (tests/test_slurm_harness.py checks a real run's)."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import slurm_reference  # noqa: E402
import slurm_subsecond  # noqa: E402

LOG = """\
[2026-11-29T06:30:14.179] _slurm_rpc_submit_batch_job: JobId=1 InitPrio=4294901759 usec=334
[2026-11-29T06:30:14.670] sched/backfill: _attempt_backfill: beginning
[2026-11-29T06:30:14.670] sched/backfill: _attempt_backfill: BACKFILL: test for JobId=1 Prio=1
[2026-11-29T06:30:14.670] sched/backfill: _start_job: Started JobId=1 in batch on n[1-3]
[2026-11-29T06:30:14.671] sched/backfill: _dump_job_sched: JobId=2 \
to start at 2026-11-29T06:30:44, end at 2026-11-29T06:31:30 \
on nodes n[1-3,5] in partition batch
[2026-11-29T06:30:16.178] _slurm_rpc_submit_batch_job: JobId=3 InitPrio=4294901757 usec=238
[2026-11-29T06:30:22.716] _job_complete: JobId=1 WEXITSTATUS 0
[2026-11-29T06:30:22.716] _job_complete: JobId=1 done
[2026-11-29T06:30:22.723] TRACE_JOBS: job_epilog_complete: enter JobId=1
[2026-11-29T06:30:22.723] TRACE_JOBS: cleanup_completing: JobId=1
[2026-11-29T06:30:23.976] sched: Allocate JobId=3 NodeList=n[1-3] #CPUs=12 Partition=batch
[2026-11-29T06:31:23.976] Time limit exhausted for JobId=3
[2026-11-29T06:31:24.400] _job_complete: JobId=3 done
[2026-11-29T06:31:25.100] TRACE_JOBS: cleanup_completing: JobId=3
a line without a stamp
"""


def at(clock: str) -> float:
    return datetime.datetime.fromisoformat(f"2026-11-29T{clock}").timestamp()


def test_the_timeline_keeps_the_instants_slurmctld_logged(tmp_path: Path) -> None:
    log = tmp_path / "slurmctld.log"
    log.write_text(LOG)
    rows = slurm_reference.timeline(log)
    assert [(event, job, nodes) for _, event, job, nodes, _ in rows] == [
        ("submit", "1", ""), ("backfill_cycle", "", ""), ("start_backfill", "1", "n[1-3]"),
        ("reserve", "2", "n[1-3,5]"), ("submit", "3", ""), ("end", "1", ""), ("release", "1", ""),
        ("start_main", "3", "n[1-3]"), ("timeout", "3", ""), ("end", "3", ""),
        ("release", "3", "")]
    assert rows[0][0] == pytest.approx(at("06:30:14.179"), abs=1e-6)
    assert rows[3][4] == f"{at('06:30:44'):.0f}" and rows[2][4] == ""
    path = tmp_path / "timeline.tsv"
    slurm_reference.write_timeline(rows, path)
    assert path.read_text().splitlines()[0] == "time\tevent\tjob\tnodes\texpected_start"
    assert slurm_subsecond.read_timeline(path)[7] == (round(at("06:30:23.976"), 3),
                                                       "start_main", "3")


def test_release_delays_and_phases_are_read_off_the_timeline(tmp_path: Path) -> None:
    log = tmp_path / "slurmctld.log"
    log.write_text(LOG)
    s = slurm_subsecond.analyse([(t, e, j) for t, e, j, _, _ in
                                 slurm_reference.timeline(log)])
    # Job 1 (backfilled) released 7 ms after its end, in the same second; job 3 (main
    # scheduler) 0.7 s after, in the next second.
    assert s.release_delay["backfill"] == [pytest.approx(0.007, abs=1e-3)]
    assert s.same_second == {"backfill": [True], "main": [False]}
    assert s.release_delay["main"] == [pytest.approx(0.7, abs=1e-3)]
    # No main-scheduler start came within a second of either release (job 3's came 1.25 s
    # after job 1's).
    assert s.main_after_release == []
    assert s.phases["submit"] == [pytest.approx(0.179, abs=1e-3),
                                  pytest.approx(0.178, abs=1e-3)]
    lines = slurm_subsecond.report("hand-written", s)
    assert lines[0] == "## hand-written"
    assert any(line.startswith("  submit") and line.split()[2] == "2" for line in lines)


def test_debug_flags_raise_slurmctlds_level_to_where_log_flag_prints() -> None:
    # log_flag() prints at the verbose level (log.h), above the templates' info.
    conf = "SlurmctldDebug=info\nDebugFlags=Gang\nSchedulerType=sched/backfill\n"
    out = slurm_reference.with_debug_flags(conf, "TraceJobs,Backfill").splitlines()
    assert out == ["SchedulerType=sched/backfill", "SlurmctldDebug=verbose",
                   "DebugFlags=TraceJobs,Backfill"]


def test_the_background_ticks_drift_and_where_its_jobs_end_against_it() -> None:
    # Three passes of the background thread (main starts not within 60 ms of a release)
    # at .100 of second 10, .110 of 18 and .120 of 26: 1.25 ms later each second. Job 2,
    # started at the second pass, slept 5 s and ended 30 ms past its start's phase: the
    # tick at 23 is at about .116, so the end (.140) came after it. Job 3, started at the
    # third pass, slept 60 s: its tick at 86 is at .195, after the end (.150). Job 5 was
    # started 10 ms after job 4's release: the epilog message's pass, not a tick.
    rows = [(10.100, "start_main", "1"), (18.110, "start_main", "2"),
            (23.140, "end", "2"), (26.120, "start_main", "3"), (40.000, "end", "4"),
            (40.002, "release", "4"), (40.012, "start_main", "5"), (86.150, "end", "3"),
            (99.000, "end", "5")]
    s = slurm_subsecond.analyse(rows, {"2": 5.0, "3": 60.0, "5": 58.95})
    assert slurm_subsecond.tick_passes([10.1, 18.11, 26.12, 40.012], [40.002]) == [
        10.1, 18.11, 26.12]
    assert s.tick_drift == [pytest.approx(0.00125, abs=2e-6)] * 2
    assert s.tick_ends == [(pytest.approx(5.03), True), (pytest.approx(60.03), False)]
    assert s.launch["tick"] == [pytest.approx(0.03), pytest.approx(0.03)]
    assert s.launch["main"] == [pytest.approx(0.038)]
    lines = slurm_subsecond.report("hand-written", s)
    assert "jobs a background tick started, running under 20 s: 1/1 ended after the " \
           "tick of their last second" in lines
    assert "jobs a background tick started, running 20 s or more: 0/1 ended after the " \
           "tick of their last second" in lines
