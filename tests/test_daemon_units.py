"""Unit tests of the daemon's parts: clock, journal, event log, config file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedd.daemon.clock import ClockError, VirtualClock
from schedd.daemon.config import ConfigError, config_words, expand_config
from schedd.daemon.eventlog import EventLog
from schedd.daemon.journal import Journal
from schedd.daemon.records import Stimulus


class FakeWall:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_accelerated_clock_scales_pauses_and_jumps() -> None:
    wall = FakeWall()
    clock = VirtualClock("accelerated", 1000.0, start=5.0, wall=wall)
    wall.t += 2.0
    assert clock.now() == 2005.0
    clock.pause()
    wall.t += 10.0
    assert clock.now() == 2005.0 and clock.wall_delay(3000.0) == float("inf")
    clock.resume()
    wall.t += 1.0
    assert clock.now() == 3005.0
    assert clock.wall_delay(4005.0) == pytest.approx(1.0)
    clock.advance_to(10_000.0)
    assert clock.now() == 10_000.0
    with pytest.raises(ClockError, match="cannot move back"):
        clock.advance_to(9_000.0)


def test_realtime_is_speedup_one_and_lockstep_moves_only_when_told() -> None:
    wall = FakeWall()
    assert VirtualClock("realtime", 50.0, wall=wall).speedup == 1.0
    lock = VirtualClock("lockstep", wall=wall)
    wall.t += 100
    assert lock.now() == 0.0
    lock.advance_to(42.0)
    wall.t += 100
    assert lock.now() == 42.0
    with pytest.raises(ClockError):
        lock.pause()
    with pytest.raises(ClockError, match="unknown clock mode"):
        VirtualClock("sundial")


def test_journal_group_commit_order_and_reload(tmp_path: Path) -> None:
    path = str(tmp_path / "j.sqlite")
    journal = Journal(path)
    committed: list[int] = []
    journal.on_committed = lambda sts: committed.extend(st.seq for st in sts)

    async def main() -> None:
        sts = [[Stimulus("cancel", {"job_id": i}, "alice", f"r{i}")] for i in range(50)]
        await asyncio.gather(*(journal.append(group) for group in sts))

    asyncio.run(main())
    assert committed == list(range(1, 51))  # handed on in journal order
    journal.note_progress([(1, 5.0), (2, 6.0)], [3], 7.0, 8.0, force=True)
    journal.write_meta({"settings": "x"})
    journal.close()
    rec = Journal(path).load()
    assert rec.meta == {"settings": "x"}
    assert [st.request_id for st, _ in rec.stimuli][:3] == ["r0", "r1", "r2"]
    assert [applied for _, applied in rec.stimuli][:3] == [5.0, 6.0, None]
    assert rec.overruns == [3] and (rec.engine_time, rec.clock) == (7.0, 8.0)


def test_journal_uses_wal_and_full_sync(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "j.sqlite"
    Journal(str(path)).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_event_log_resumes_from_a_sequence_number() -> None:
    log = EventLog("c", capacity=5)
    for i in range(8):
        log.emit(float(i), "queued", i)
    assert log.oldest_seq == 4
    assert [e["seq"] for e in log.since(6)] == [6, 7, 8]
    assert log.since(9) == []


def test_event_log_gives_a_listener_only_the_kinds_it_asked_for() -> None:
    log = EventLog("c")
    every: list[dict] = []
    some: list[dict] = []
    log.add_listener(every.append)
    log.add_listener(some.append, frozenset({"started"}))
    watcher = log.watch()
    log.emit(1.0, "submitted", 7, "pending", "rpc", 2)
    log.emit(2.0, "started", 7, "running", "", 2)
    assert [e["kind"] for e in every] == ["submitted", "started"]
    assert some == [every[1]] == [log.since(2)[0]]  # the same event as the ring's
    assert [row[0] for row in log.read(watcher)] == [1, 2]
    unheard = EventLog("c")  # nobody listens or watches: the ring still has it
    unheard.add_listener(some.append, frozenset({"started"}))
    unheard.emit(3.0, "submitted", 8)
    assert unheard.since(1)[0]["job_id"] == 8 and len(some) == 1


def test_config_file_words_and_errors(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text('[serve]\ncluster = "mira"\nopt = ["a=1", "b=2"]\nbudget = 0.5\n'
                   'no-requeue-on-failure = true\nvalidate = false\n')
    assert config_words(cfg) == ["--cluster", "mira", "--opt", "a=1", "--opt", "b=2",
                                 "--budget", "0.5", "--no-requeue-on-failure"]
    assert expand_config(["serve", "--config", str(cfg), "--budget", "2"])[1:3] == \
        ["--cluster", "mira"]
    (tmp_path / "bad.toml").write_text("cluster = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_words(tmp_path / "bad.toml")


def test_check_config_from_the_command_line(tmp_path: Path) -> None:
    cfg = tmp_path / "s.toml"
    cfg.write_text('cluster = "bgq:4"\npolicy = "easy"\nbudget = 0.25\n')
    proc = subprocess.run([sys.executable, "-m", "schedd", "serve", "--config", str(cfg),
                           "--check-config"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["cluster"] == "bgq:4" and shown["budget"] == 0.25
    cfg.write_text('policy = "nonesuch"\n')
    proc = subprocess.run([sys.executable, "-m", "schedd", "serve", "--config", str(cfg),
                           "--check-config"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown policy 'nonesuch'" in proc.stderr


def test_request_context_is_bound_in_every_log_line() -> None:
    from daemon_proc import DaemonProc

    from schedd.v1 import scheduler_pb2 as pb

    with DaemonProc("--clock", "lockstep", "--log-level", "debug") as d:
        d.stub().SubmitJob(pb.SubmitJobRequest(job_id=7, nodes=1, walltime=10))
    lines = [json.loads(x) for x in d.log().splitlines() if x.startswith("{")]
    accepted = [x for x in lines if x.get("event") == "accepted"]
    assert accepted, d.log()
    assert accepted[0]["rpc"] == "SubmitJob" and accepted[0]["job_id"] == 7
    assert accepted[0]["stimulus_id"] == 1 and accepted[0]["user"] == "operator"


def test_logging_follows_stderr_when_it_is_swapped(capsys):
    """configure_logging without a stream writes to sys.stderr as it is at each line: a
    stream swapped out (and closed) by a caller earlier does not break later log lines
    (the MQTT bus task died on 'I/O operation on closed file' after a test's capture)."""
    import io
    import sys

    import structlog

    from schedd.daemon.logs import configure_logging

    first = io.StringIO()
    saved = sys.stderr
    sys.stderr = first
    try:
        configure_logging("json")
    finally:
        sys.stderr = saved
    first.close()
    structlog.get_logger().info("after the swap", n=1)
    assert '"event": "after the swap"' in capsys.readouterr().err
