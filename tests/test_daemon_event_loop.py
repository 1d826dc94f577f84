"""The daemon's event loop (schedd/daemon/event_loop.py) and the journal's group commit
on it: uvloop where installed, asyncio's on request, and on either loop a caller is
acknowledged only once its own record is committed to the file."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path

import pytest

from schedd.daemon import event_loop
from schedd.daemon.journal import Journal
from schedd.daemon.records import Stimulus

LOOPS = ["asyncio"] + (["uvloop"] if event_loop.loop_name() == "uvloop" else [])


def test_loop_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCHEDD_EVENT_LOOP", "asyncio")
    assert event_loop.loop_name() == "asyncio"

    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert event_loop.run(loop_module()).startswith("asyncio")
    monkeypatch.delenv("SCHEDD_EVENT_LOOP")
    pytest.importorskip("uvloop")
    assert event_loop.loop_name() == "uvloop"
    assert event_loop.run(loop_module()).startswith("uvloop")


@pytest.mark.parametrize("loop", LOOPS)
def test_group_commit_acknowledges_each_caller_after_its_record_is_committed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loop: str) -> None:
    """200 concurrent appends of one stimulus each, arriving while earlier commits run:
    they share commits (fewer transactions than callers), and when a caller's append
    returns, another connection to the file already reads its row (committed, WAL)."""
    monkeypatch.setenv("SCHEDD_EVENT_LOOP", loop)
    path = str(tmp_path / "j.sqlite")
    commits: list[float] = []
    journal = Journal(path, on_commit_seconds=commits.append)  # one call per transaction
    reader = sqlite3.connect(path)
    seen_before_ack: list[bool] = []

    async def caller(i: int) -> None:
        await asyncio.sleep(random.random() * 0.02)  # arrive at different moments
        st = Stimulus("cancel", {"job_id": i}, "alice", f"r{i}")
        await journal.append([st])
        row = reader.execute("SELECT request_id FROM stimuli WHERE seq = ?",
                             (st.seq,)).fetchone()
        seen_before_ack.append(row == (f"r{i}",))

    async def main() -> None:
        await asyncio.gather(*(caller(i) for i in range(200)))

    random.seed(1)
    event_loop.run(main())
    reader.close()
    assert seen_before_ack == [True] * 200
    assert len(commits) < 200  # grouped: callers shared transactions
    journal.write_meta({"settings": "x"})  # what a daemon records first; load needs it
    journal.close()
    rec = Journal(path).load()
    assert sorted(st.request_id for st, _ in rec.stimuli) == sorted(f"r{i}"
                                                                    for i in range(200))
