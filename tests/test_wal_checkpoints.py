"""The journal's write-ahead log is checkpointed by its own thread (schedd/daemon/
wal_checkpoints.py), not inside a commit: on a real SQLite file, a burst of writes is
copied into the database soon after it, a trickle within the idle delay, the writer
itself only past the safety net, and closing leaves no thread and no log behind."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from schedd.core.job import JobSpec
from schedd.daemon import wal_checkpoints
from schedd.daemon.journal import Journal
from schedd.daemon.records import Stimulus, spec_body


def submissions(first: int, n: int) -> list[Stimulus]:
    out = []
    for job_id in range(first, first + n):
        spec = JobSpec(job_id, 0.0, 60.0, 1, 60.0)
        out.append(Stimulus("submit", spec_body(spec), "anon", "", 0,
                            {"job_id": job_id, "submit_time": 0.0}, spec))
    return out


def write(journal: Journal, stimuli: list[Stimulus]) -> None:
    journal._executor.submit(journal._write, stimuli).result()


def wait_for(check, seconds: float = 10.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_the_writer_checkpoints_only_past_the_safety_net(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "j.sqlite"))
    try:
        pages = journal._executor.submit(
            lambda: journal._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]).result()
        assert pages == wal_checkpoints.SAFETY_PAGES
    finally:
        journal.close()


def test_a_burst_is_checkpointed_by_the_thread_soon_after(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal(str(path))
    try:
        wal = journal._wal
        assert wal is not None
        asked: list[bool] = []
        journal._wal = type("Held", (), {"written": lambda self, due: asked.append(due)})()
        empty = path.stat().st_size  # in WAL mode only a checkpoint writes the file
        write(journal, submissions(1, 25_000))  # past 1,000 pages of log
        assert path.stat().st_size == empty  # the commit itself did not checkpoint
        assert asked == [True]  # and found one due at once
        journal._wal = wal
        wal.written(True)
        assert wait_for(lambda: wal.checkpoints >= 1, 3.0)  # not the 5 s idle delay
        assert path.stat().st_size > empty + 1_000_000  # the rows are in the file now
        assert wal.last_error is None
    finally:
        journal._wal = wal
        journal.close()


def test_a_trickle_is_checkpointed_after_the_idle_delay(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(wal_checkpoints, "IDLE_S", 0.3)
    journal = Journal(str(tmp_path / "j.sqlite"))
    try:
        assert journal._wal is not None and journal._wal.idle_s == 0.3
        before = journal._wal.checkpoints
        write(journal, submissions(1, 3))
        assert wait_for(lambda: journal._wal.checkpoints > before, 5.0)
        checkpoints = journal._wal.checkpoints
        time.sleep(0.8)  # nothing written since: no checkpoint for nothing
        assert journal._wal.checkpoints == checkpoints
    finally:
        journal.close()


def test_closing_stops_the_thread_and_removes_the_log(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    journal = Journal(str(path))
    write(journal, submissions(1, 50))
    assert journal._wal is not None
    thread = journal._wal._thread
    assert thread.is_alive()
    journal.close()
    assert not thread.is_alive() and journal._wal is None
    assert not Path(f"{path}-wal").exists()
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT COUNT(*) FROM stimuli").fetchone()[0] == 50
    finally:
        db.close()


def test_an_in_memory_journal_has_no_checkpointer() -> None:
    journal = Journal(":memory:")
    try:
        assert journal._wal is None
        write(journal, submissions(1, 5))
    finally:
        journal.close()
