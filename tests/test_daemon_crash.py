"""What was announced is never taken back: kill -9 the daemon at random points while a
watcher records every event, restart it on the same journal, and check that no job's
state and no clock reading precede what the watcher saw, that no job is announced
completed twice, and that a lockstep replay through all of it still writes the jobs.swf
of `schedd simulate`."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import grpc
from daemon_proc import DaemonProc, free_port
from event_watch import Watcher, after_final, announced_twice, final_seen, regressions

from schedd.v1 import scheduler_pb2 as pb

FINAL = {pb.JOB_STATE_COMPLETED, pb.JOB_STATE_KILLED, pb.JOB_STATE_CANCELLED,
         pb.JOB_STATE_FAILED}


def test_rapid_advances_then_kill_9_take_nothing_back(tmp_path: Path) -> None:
    """Several AdvanceClock calls in quick succession, each finishing jobs, then kill -9
    at once: the restart shows every completion and clock reading a client was given."""
    db = tmp_path / "journal.sqlite"
    args = ("--clock", "lockstep", "--cluster", "nodes:16", "--state-db", str(db))
    with DaemonProc(*args) as d:
        s = d.stub()
        for i in range(1, 41):
            s.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=1 + i % 4, walltime=100,
                                            runtime=10 + i % 7, submit_time=0.0), timeout=10)
        s.AdvanceClock(pb.AdvanceClockRequest(to=1), timeout=10)
        time.sleep(0.3)  # the old background mark is due: the next ones are deferred
        for t in range(20, 400, 20):
            s.AdvanceClock(pb.AdvanceClockRequest(to=t), timeout=10)
        told = {j.job_id: j.state for j in
                s.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5).jobs}
        clock = s.GetClock(pb.GetClockRequest(), timeout=5).now
        d.kill()
    assert sum(state in FINAL for state in told.values()) == 40
    with DaemonProc(*args) as d:
        s = d.stub()
        after = {j.job_id: j.state for j in
                 s.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5).jobs}
        assert after == told
        assert s.GetClock(pb.GetClockRequest(), timeout=5).now >= clock


def test_random_kill_9_during_lockstep_replay(tmp_path: Path) -> None:
    """Three kills at seeded random points (by jobs finished) of a lockstep replay of
    1,000 jobs with a watcher on WatchEvents; the replay client retries through each outage."""
    rng = random.Random(17)
    jobs, cluster = 1000, "nodes:256"
    subprocess.run([sys.executable, "-m", "schedd", "simulate", "--cluster", cluster,
                    "--policy", "easy", "--limit", str(jobs), "--out", str(tmp_path / "sim"),
                    "--no-progress"], check=True, capture_output=True, timeout=300)
    port = free_port()
    db = tmp_path / "journal.sqlite"
    args = ("--listen", f"127.0.0.1:{port}", "--clock", "lockstep", "--cluster", cluster,
            "--policy", "easy", "--state-db", str(db))
    env = {"SCHEDD_SNAPSHOT_EVERY": "150"}  # recoveries start from snapshots too
    d = DaemonProc(*args, env=env)
    watcher = Watcher(f"127.0.0.1:{port}")
    watcher.start()
    replay = subprocess.Popen(
        [sys.executable, "-m", "schedd_clients.replay", "--out", str(tmp_path / "replay"),
         "--server", f"127.0.0.1:{port}", "--no-progress", "--lockstep", "--limit",
         str(jobs), "--window", "8", "--no-compare", "--retry-timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kills = 0
    # The kills are placed by progress (jobs the watcher saw finish), not by wall time:
    # a fast machine finishes the whole replay in the time a timed kill waits.
    targets = sorted(rng.sample(range(60, 700), 3))
    try:
        for target in targets:
            while len(final_seen(watcher.seen())) < target and replay.poll() is None:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.05))
            if replay.poll() is not None:
                break
            clock_seen = d.stub().GetClock(pb.GetClockRequest(), timeout=10).now
            seen_before = watcher.seen()
            d.kill()
            kills += 1
            d = DaemonProc(*args, env=env)
            try:
                back, clock_back = regressions(d.stub(), seen_before, clock_seen)
            except grpc.RpcError as err:  # say what the restarted daemon did
                raise AssertionError(f"{err}\nexit {d.proc.poll()}; its log:\n"
                                     + d.log()[-4000:]) from None
            assert not back, f"announced finished, not finished after the restart: {back}"
            assert clock_back is None, f"the clock went back to {clock_back}"
        stdout, stderr = replay.communicate(timeout=240)
        assert replay.returncode == 0, stderr + d.log()[-3000:]
        watcher.drain()
    finally:
        watcher.done.set()
        replay.kill()
        d.stop()
    assert kills >= 2, "the kills should land mid-replay"
    log = d.log()
    assert "snapshot stored" in log or "recovered from the journal" in log
    seen = watcher.seen()
    assert not announced_twice(seen)
    assert not after_final(seen), "events after a job was announced finished"
    assert len(final_seen(seen)) >= jobs * 9 // 10  # the watcher did follow the run
    replayed = (tmp_path / "replay" / "jobs.swf").read_bytes()
    assert replayed == (tmp_path / "sim" / "jobs.swf").read_bytes()


def test_accelerated_kill_9_never_takes_back_a_reading(tmp_path: Path) -> None:
    """At 20,000x the clock moves by itself: readings and events seen before each kill
    are never ahead of the restarted daemon (the journalled lease covers them)."""
    rng = random.Random(5)
    port = free_port()
    args = ("--listen", f"127.0.0.1:{port}", "--clock", "accelerated", "--speedup", "20000",
            "--cluster", "nodes:256", "--state-db", str(tmp_path / "j.sqlite"),
            "--tick", "0.05")
    d = DaemonProc(*args)
    watcher = Watcher(f"127.0.0.1:{port}")
    watcher.start()
    replay = subprocess.Popen(
        [sys.executable, "-m", "schedd_clients.replay", "--out", str(tmp_path / "r"),
         "--server", f"127.0.0.1:{port}", "--no-progress", "--limit", "200", "--no-compare",
         "--retry-timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kills = 0
    try:
        for _ in range(2):
            time.sleep(rng.uniform(0.5, 1.2))
            if replay.poll() is not None:
                break
            clock_seen = d.stub().GetClock(pb.GetClockRequest(), timeout=10).now
            seen = watcher.seen()
            d.kill()
            kills += 1
            d = DaemonProc(*args)
            back, clock_back = regressions(d.stub(), seen, clock_seen)
            assert not back and clock_back is None, (back, clock_back, clock_seen)
        _, stderr = replay.communicate(timeout=240)
        assert replay.returncode == 0, stderr
        watcher.drain()
    finally:
        watcher.done.set()
        replay.kill()
        d.stop()
    assert kills >= 1
    seen = watcher.seen()
    assert not announced_twice(seen) and not after_final(seen)
