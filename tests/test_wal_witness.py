"""The witness of the write-ahead log (schedd/daemon/wal_witness.py) held to SQLite
itself: on the files of a crashed writer, cut or damaged at seeded random places, it
reports a problem exactly when SQLite's own recovery of the log ends before the last
committed frame the index (`-shm`) recorded."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from schedd.daemon.wal_witness import FRAME_HEADER, WAL_HEADER, log_problem, read_index


def _crashed(folder: Path, checkpoint: str) -> Path:
    """The files of a WAL database as a writer killed now would leave them (copied while
    its connection is open: the log and its index are not folded in). `checkpoint`:
    none; restarted (halfway: the log starts again from its beginning, frames of the
    older generation stay after the new ones); backfilled (at the end: every frame is
    in the file too)."""
    src = folder / "src.sqlite"
    conn = sqlite3.connect(src, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, blob BLOB)")
    rng = random.Random(3)
    for k in range(80):
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t VALUES (?, ?)",
                         [(k * 10 + i, rng.randbytes(700)) for i in range(6)])
        conn.execute("COMMIT")
        if (checkpoint, k) in (("restarted", 40), ("backfilled", 79)):
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    crash = folder / "crash"
    crash.mkdir()
    for suffix in ("", "-wal", "-shm"):
        shutil.copy(f"{src}{suffix}", crash / f"j.sqlite{suffix}")
    conn.close()
    return crash / "j.sqlite"


def _sqlite_recovers(db: Path) -> int:
    """The last committed frame SQLite's own recovery finds (its rebuilt index)."""
    conn = sqlite3.connect(db)
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    index = read_index(f"{db}-shm")  # rebuilt by this, the first connection
    conn.close()
    return 0 if index is None else index.last_frame


@pytest.mark.parametrize("checkpoint", ["none", "restarted", "backfilled"])
def test_the_witness_agrees_with_sqlites_own_recovery(tmp_path: Path,
                                                      checkpoint: str) -> None:
    crashed = _crashed(tmp_path, checkpoint)
    index = read_index(f"{crashed}-shm")
    assert index is not None and index.last_frame > 50
    assert (index.backfilled == index.last_frame) == (checkpoint == "backfilled")
    assert log_problem(str(crashed)) is None  # the intact crash state is sound
    size = os.path.getsize(f"{crashed}-wal")
    frame = FRAME_HEADER + index.page_size
    rng = random.Random(f"{checkpoint}-11")
    flagged = 0
    for case in range(40):
        folder = tmp_path / f"case{case}"
        folder.mkdir()
        db = folder / "j.sqlite"
        for suffix in ("", "-wal", "-shm"):
            shutil.copy(f"{crashed}{suffix}", f"{db}{suffix}")
        wal = Path(f"{db}-wal")
        data = bytearray(wal.read_bytes())
        # Within the committed frames mostly, sometimes the header or past the end.
        at = rng.choice([rng.randrange(WAL_HEADER),
                         rng.randrange(WAL_HEADER + index.last_frame * frame),
                         rng.randrange(WAL_HEADER, size)])
        if case % 2:
            wal.write_bytes(bytes(data[:at]))
        else:
            data[at] ^= 0x5A
            wal.write_bytes(bytes(data))
        problem = log_problem(str(db))  # first: SQLite's recovery resets the index
        recovered = _sqlite_recovers(db)
        assert (problem is not None) == (recovered < index.last_frame), (
            case, at, recovered, index.last_frame, problem)
        flagged += problem is not None
    assert flagged >= 10
    if checkpoint == "restarted":  # damage among the older generation's frames: harmless
        assert flagged < 40
    if checkpoint == "backfilled":  # every frame is in the file: the log may go
        Path(f"{crashed}-wal").unlink()
        assert log_problem(str(crashed)) is None
