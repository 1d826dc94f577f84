"""Request ids are kept for SCHEDD_REQUEST_ID_DAYS once their stimuli are compacted, so a
daemon that runs for months keeps a bounded `requests` table: on a real SQLite journal,
and through a real daemon restarted on it."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from daemon_proc import DaemonProc

from schedd.daemon.journal import Journal, JournalError, Snapshot
from schedd.daemon.records import Stimulus
from schedd.v1 import scheduler_pb2 as pb


def _journal_with(path: Path, rids: list[str]) -> Journal:
    j = Journal(str(path))
    j.write_meta({"settings": "{}"})  # as a daemon records its settings first
    stimuli = [Stimulus("cancel", {"job_id": i + 1}, "alice", rid,
                        response={"_fp": f"fp{i}", "stimulus_id": 0})
               for i, rid in enumerate(rids)]
    asyncio.run(j.append(stimuli))
    return j


def _age(path: Path, request_id: str, seconds: float) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE stimuli SET accepted_wall = accepted_wall - ? WHERE request_id = ?",
                   (seconds, request_id))


def test_a_snapshot_drops_request_ids_older_than_the_window(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDD_REQUEST_ID_DAYS", "2")
    path = tmp_path / "j.sqlite"
    j = _journal_with(path, ["old", "edge", "new"])
    _age(path, "old", 3 * 86400)
    _age(path, "edge", 2 * 86400 - 3600)  # an hour inside the window
    j.snapshot(Snapshot(last_seq=3, engine_time=0.0, clock=0.0, state=b""))
    assert j.request("old") is None
    assert j.request("edge") is not None and j.request("new") is not None
    with sqlite3.connect(path) as db:
        kept = {r[0] for r in db.execute("SELECT request_id FROM requests")}
    assert kept == {"edge", "new"}
    j.close()


def test_zero_days_keeps_every_request_id(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDD_REQUEST_ID_DAYS", "0")
    path = tmp_path / "j.sqlite"
    j = _journal_with(path, ["old", "new"])
    _age(path, "old", 3650 * 86400)
    j.snapshot(Snapshot(last_seq=2, engine_time=0.0, clock=0.0, state=b""))
    assert j.request("old") is not None and j.request("new") is not None
    j.close()


def test_a_journal_of_an_earlier_version_gets_a_full_window(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDD_REQUEST_ID_DAYS", "1")
    path = tmp_path / "j.sqlite"
    j = _journal_with(path, ["a"])
    j.snapshot(Snapshot(last_seq=1, engine_time=0.0, clock=0.0, state=b""))
    j.close()
    with sqlite3.connect(path) as db:  # the table as an earlier version made it
        db.execute("CREATE TABLE r2 AS SELECT request_id, seq, response FROM requests")
        db.execute("DROP TABLE requests")
        db.execute("ALTER TABLE r2 RENAME TO requests")
    before = time.time()
    j = Journal(str(path))
    with sqlite3.connect(path) as db:
        (wall,) = db.execute("SELECT accepted_wall FROM requests WHERE request_id = 'a'"
                             ).fetchone()
    assert wall >= before
    j.snapshot(Snapshot(last_seq=1, engine_time=0.0, clock=0.0, state=b""))
    assert j.request("a") is not None
    j.close()


@pytest.mark.parametrize("bad", ["-1", "seven", "1e9", "nan"])
def test_a_bad_window_is_one_sentence(tmp_path, monkeypatch, bad):
    monkeypatch.setenv("SCHEDD_REQUEST_ID_DAYS", bad)
    with pytest.raises(JournalError, match="SCHEDD_REQUEST_ID_DAYS must be a number of days"):
        Journal(str(tmp_path / "j.sqlite"))


def test_a_daemon_restarted_after_the_window_takes_the_id_as_new(tmp_path):
    """Within the window a retry gets its first answer; a restart after the window (the
    in-memory ids are gone too) takes the same id as a new request."""
    db = tmp_path / "journal.sqlite"
    args = ("--clock", "lockstep", "--cluster", "nodes:16", "--policy", "easy",
            "--state-db", str(db))
    env = {"SCHEDD_REQUEST_ID_DAYS": "0.00002", "SCHEDD_SNAPSHOT_EVERY": "1"}  # 1.7 s

    def submit(stub, rid: str) -> pb.SubmitJobResponse:
        return stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=100, runtime=10,
                                                  submit_time=0.0, request_id=rid), timeout=10)

    with DaemonProc(*args, env=env) as d:
        s = d.stub()
        first = submit(s, "r-old")
        assert submit(s, "r-old").duplicate
        time.sleep(2.5)
        submit(s, "r-later")
        s.AdvanceClock(pb.AdvanceClockRequest(to=1), timeout=10)  # applied: a snapshot
        submit(s, "r-last")
        s.AdvanceClock(pb.AdvanceClockRequest(to=2), timeout=10)
    with DaemonProc(*args, env={**env, "SCHEDD_REQUEST_ID_DAYS": "7"}) as d:
        again = submit(d.stub(), "r-old")
    assert not again.duplicate and again.job_id != first.job_id
