"""Crash safety: kill -9 the daemon in the middle of an accelerated replay, restart it on
the same journal, let the replay finish — no acknowledged job is lost or duplicated."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from daemon_proc import DaemonProc, free_port

from schedd.traces import read_trace
from schedd.v1 import scheduler_pb2 as pb

JOBS = 300


def _swf_ids(path: Path) -> list[int]:
    return [int(line.split()[0]) for line in path.read_text().splitlines()
            if line.strip() and not line.startswith(";")]


def test_kill_9_mid_replay_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "journal.sqlite"
    args = ("--listen", f"127.0.0.1:{port}", "--clock", "accelerated", "--speedup", "20000",
            "--cluster", "nodes:256", "--state-db", str(db), "--tick", "0.05")
    first = DaemonProc(*args)
    out = tmp_path / "out"
    replay = subprocess.Popen(
        [sys.executable, "-m", "schedd_clients.replay", "--out", str(out), "--limit",
         str(JOBS), "--server", f"127.0.0.1:{port}", "--no-progress", "--no-compare",
         "--retry-timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stub = first.stub()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until part of the trace is in
        info = stub.GetCluster(pb.GetClusterRequest(), timeout=5)
        if info.pending + info.finished + sum(c.jobs for c in info.queue_by_class) > JOBS // 3:
            break
        time.sleep(0.05)
    before = stub.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5)
    acknowledged = {j.job_id for j in before.jobs}
    first.kill()
    assert 0 < len(acknowledged) < JOBS, "the kill should land mid-replay"

    second = DaemonProc(*args)
    try:
        stdout, stderr = replay.communicate(timeout=120)
        assert replay.returncode == 0, stderr
        assert "recovered from the journal" in second.log()
        recovered = second.stub().ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5)
    finally:
        second.stop()
    ids = _swf_ids(out / "jobs.swf")
    trace_ids = read_trace(_sample()).columns["job_id"][:JOBS].tolist()
    assert sorted(ids) == sorted(trace_ids)  # every job exactly once
    assert len(set(ids)) == len(ids)
    assert acknowledged <= {j.job_id for j in recovered.jobs}  # nothing acknowledged lost
    assert recovered.total == JOBS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["replay"]["jobs"] == JOBS
    assert np.isfinite(summary["stats"]["all"]["wait_s"]["mean"])


def _sample() -> str:
    from schedd.cli import _sample_path

    return _sample_path()


def test_restart_with_other_settings_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "journal.sqlite"
    with DaemonProc("--clock", "lockstep", "--state-db", str(db), "--policy", "easy"):
        pass
    proc = subprocess.run(
        [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0", "--metrics-port",
         "0", "--clock", "lockstep", "--state-db", str(db), "--policy", "fcfs"],
        capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "other settings" in proc.stderr and "policy" in proc.stderr


def test_lockstep_state_survives_kill_9_exactly(tmp_path: Path) -> None:
    """After a crash the recovered daemon holds the same jobs in the same states."""
    db = tmp_path / "journal.sqlite"
    args = ("--clock", "lockstep", "--cluster", "nodes:16", "--state-db", str(db))
    with DaemonProc(*args) as d:
        s = d.stub()
        for i in range(1, 9):
            s.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=4 + i % 3, walltime=100 * i,
                                            runtime=60 * i, submit_time=10.0 * i,
                                            request_id=f"r{i}"))
        s.CancelJob(pb.CancelJobRequest(job_id=8))
        s.AdvanceClock(pb.AdvanceClockRequest(to=200))
        s.ElasticControl(pb.ElasticControlRequest(job_id=5, kind=pb.ECC_KIND_ET, amount=50))
        s.AdvanceClock(pb.AdvanceClockRequest(to=260))
        time.sleep(0.5)  # let the progress mark reach the journal
        expected = s.ListJobs(pb.ListJobsRequest(), timeout=5).jobs
        clock = s.GetClock(pb.GetClockRequest()).now
        d.kill()
    with DaemonProc(*args) as d:
        s = d.stub()
        got = s.ListJobs(pb.ListJobsRequest(), timeout=5).jobs
        assert s.GetClock(pb.GetClockRequest()).now == clock
        assert [(j.job_id, j.state, j.first_start, j.walltime, j.end_time) for j in got] == \
            [(j.job_id, j.state, j.first_start, j.walltime, j.end_time) for j in expected]
        # A retried request id is answered from the journal, not applied twice.
        again = s.SubmitJob(pb.SubmitJobRequest(job_id=3, nodes=4 + 3 % 3, walltime=300,
                                                runtime=180, submit_time=30.0,
                                                request_id="r3"))
        assert again.duplicate and again.job_id == 3


def test_engine_work_without_stimuli_is_snapshotted_and_recovered_from(
        tmp_path: Path) -> None:
    """A lockstep clock runs the engine on without any stimulus; after
    SCHEDD_SNAPSHOT_WORK_MS of engine work a snapshot is taken anyway, so a restart runs
    again only what came after it, and ends in the same state and results."""
    import sqlite3

    db = tmp_path / "journal.sqlite"
    args = ("--clock", "lockstep", "--cluster", "nodes:64", "--policy", "easy",
            "--state-db", str(db), "--log-level", "info")
    jobs = [pb.SubmitJobRequest(job_id=i, submit_time=10.0 * i, nodes=1 + i % 64,
                                runtime=100.0 + i % 7 * 50, walltime=1000.0)
            for i in range(1, 601)]

    def snapshots() -> list[tuple[int, float]]:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT last_seq, engine_time FROM snapshot").fetchall()

    def state(d: DaemonProc) -> tuple[Any, ...]:
        c = d.stub().GetCluster(pb.GetClusterRequest(), timeout=30)
        return (c.finished, c.pending, [(q.job_class, q.jobs) for q in c.queue_by_class],
                c.busy_nodes, c.clock.engine_time)

    first = DaemonProc(*args, env={"SCHEDD_SNAPSHOT_WORK_MS": "1"})
    try:
        stub = first.stub()
        assert stub.SubmitJobs(iter([pb.SubmitJobsRequest(jobs=jobs)]),
                               timeout=60).accepted == 600
        # No stimulus after the stream, only the clock, in steps, until the engine's work
        # brings a snapshot past the stream's iteration (engine time > 0). Whether the
        # stream's own iteration was snapshotted depends on how long it took here (over
        # SCHEDD_SNAPSHOT_WORK_MS, 1 ms, or not), so the test does not ask.
        t = 0.0
        while not any(engine_time > 0.0 for _, engine_time in snapshots()):
            t += 20.0
            assert t < 1e5, "no snapshot after the engine's work"
            stub.AdvanceClock(pb.AdvanceClockRequest(to=t), timeout=60)
        (seq, engine_time), = snapshots()
        assert seq == 600 and engine_time > 0.0  # past the last stimulus's iteration
        for _ in range(5):
            t += 20.0
            stub.AdvanceClock(pb.AdvanceClockRequest(to=t), timeout=60)
        before = state(first)
        first.kill()
    finally:
        first.stop()
    second = DaemonProc(*args)
    try:
        assert state(second) == before
        second.stub().AdvanceClock(pb.AdvanceClockRequest(until_idle=True), timeout=60)
        assert state(second)[0] == 600
    finally:
        second.stop()
