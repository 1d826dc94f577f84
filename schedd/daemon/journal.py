"""Crash-safe journal of accepted stimuli (SQLite, WAL, synchronous=FULL).

A mutating request is acknowledged only after its stimulus is committed. Requests that
arrive while a commit is in flight are committed together in the next one (group commit),
so the fsync cost is shared. All SQLite work happens in one writer thread.

What is kept:
* `meta`: the run's configuration (cluster, policy, options, seed, engine options, clock);
  a restart with a different configuration is refused rather than replayed wrongly.
* `stimuli`: every accepted request, in order, with its client request id and answer (for
  idempotent retries) and the engine time at which it was applied (`applied_at`).
* `overruns`: the policy passes that fell back because of the wall-clock budget.
* `progress`: the engine time and clock reached (written at most every `progress_every`
  seconds; the recovered clock continues from there).

Recovery replays the stimuli through a fresh engine at their `applied_at` times, which
rebuilds the same state (the engine is deterministic); stimuli accepted but not applied
before the crash are applied at the recovered time.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .records import Stimulus

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS stimuli (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    request_id TEXT UNIQUE,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    response TEXT NOT NULL,
    accepted_wall REAL NOT NULL,
    applied_at REAL
);
CREATE TABLE IF NOT EXISTS overruns (pass INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS progress (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    engine_time REAL NOT NULL,
    clock REAL NOT NULL
);
"""


class JournalError(RuntimeError):
    """The journal cannot be used (one sentence)."""


@dataclass
class Recovered:
    meta: dict[str, str]
    stimuli: list[tuple[Stimulus, float | None]] = field(default_factory=list)
    overruns: list[int] = field(default_factory=list)
    engine_time: float = 0.0
    clock: float = 0.0

    @property
    def empty(self) -> bool:
        return not self.meta


class Journal:
    def __init__(self, path: str, *, progress_every: float = 0.2,
                 on_commit_seconds: Callable[[float], None] | None = None):
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="schedd-journal")
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[list[Stimulus], asyncio.Future[None]]] = []
        self._flushing = False
        self._progress: dict[str, Any] = {"applied": [], "overruns": [], "engine_time": None,
                                          "clock": 0.0}
        self._progress_lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last_progress = 0.0
        self._progress_every = progress_every
        self._on_commit_seconds = on_commit_seconds
        self.on_committed: Callable[[list[Stimulus]], None] | None = None
        self._executor.submit(self._open).result()

    # ------------------------------------------------------------------ writer thread
    def _open(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            if self.path != ":memory:":
                mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise JournalError(f"{self.path}: SQLite refused WAL mode ({mode})")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(SCHEMA)
        except sqlite3.DatabaseError as err:
            raise JournalError(f"cannot open the journal {self.path}: {err}") from None
        self._db = db

    def _write(self, stimuli: list[Stimulus]) -> None:
        db = self._db
        assert db is not None
        start = time.perf_counter()
        now = time.time()
        db.execute("BEGIN IMMEDIATE")
        try:
            for st in stimuli:
                cur = db.execute(
                    "INSERT INTO stimuli (kind, request_id, owner, body, response, "
                    "accepted_wall) VALUES (?, ?, ?, ?, ?, ?)",
                    (st.kind, st.request_id or None, st.owner, json.dumps(st.body),
                     json.dumps(st.response), now))
                st.seq = int(cur.lastrowid or 0)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if self._on_commit_seconds is not None:
            self._on_commit_seconds(time.perf_counter() - start)

    def _write_progress(self, progress: dict[str, Any]) -> None:
        db = self._db
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        db.executemany("UPDATE stimuli SET applied_at = ? WHERE seq = ?",
                       [(t, seq) for seq, t in progress["applied"]])
        db.executemany("INSERT OR IGNORE INTO overruns (pass) VALUES (?)",
                       [(p,) for p in progress["overruns"]])
        if progress["engine_time"] is not None:
            db.execute("INSERT INTO progress (id, engine_time, clock) VALUES (1, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET engine_time = excluded.engine_time, "
                       "clock = excluded.clock", (progress["engine_time"], progress["clock"]))
        db.execute("COMMIT")

    # ------------------------------------------------------------------ public API
    def load(self) -> Recovered:
        return self._executor.submit(self._load).result()

    def _load(self) -> Recovered:
        db = self._db
        assert db is not None
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        rec = Recovered(meta)
        for kind, request_id, owner, body, response, seq, applied in db.execute(
                "SELECT kind, request_id, owner, body, response, seq, applied_at "
                "FROM stimuli ORDER BY seq"):
            st = Stimulus(kind, json.loads(body), owner, request_id or "", seq,
                          json.loads(response))
            rec.stimuli.append((st, applied))
        rec.overruns = [p for (p,) in db.execute("SELECT pass FROM overruns ORDER BY pass")]
        row = db.execute("SELECT engine_time, clock FROM progress WHERE id = 1").fetchone()
        if row is not None:
            rec.engine_time, rec.clock = row
        return rec

    def write_meta(self, meta: dict[str, str]) -> None:
        def write() -> None:
            assert self._db is not None
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                 sorted(meta.items()))
            self._db.execute("COMMIT")

        self._executor.submit(write).result()

    async def append(self, stimuli: list[Stimulus]) -> None:
        """Commit the stimuli (their `seq` is set); returns once they are durable."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((stimuli, done))
        if not self._flushing:
            self._flushing = True
            loop.create_task(self._flush())
        await done

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await loop.run_in_executor(self._executor, self._write,
                                               [st for group, _ in batch for st in group])
                    outcomes: list[Exception | None] = [None] * len(batch)
                except Exception:  # one bad group must not fail the others: one by one
                    outcomes = [await self._write_alone(group) for group, _ in batch]
                committed = [st for (group, _), err in zip(batch, outcomes, strict=True)
                             if err is None for st in group]
                if committed and self.on_committed is not None:
                    self.on_committed(committed)  # hands them to the engine in seq order
                for (_, done), err in zip(batch, outcomes, strict=True):
                    if done.done():
                        continue
                    if err is None:
                        done.set_result(None)
                    else:
                        done.set_exception(JournalError(f"journal write failed: {err}"))
        finally:
            self._flushing = False

    async def _write_alone(self, group: list[Stimulus]) -> Exception | None:
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._write, group)
        except Exception as err:  # e.g. disk full, or a request id already journalled
            return err
        return None

    def note_progress(self, applied: list[tuple[int, float]], overruns: list[int],
                      engine_time: float, clock: float, force: bool = False) -> None:
        """Record where the engine got to; written in the background, at most every
        `progress_every` seconds (a timer writes what a quiet spell left unwritten)."""
        with self._progress_lock:
            p = self._progress
            p["applied"].extend(applied)
            p["overruns"].extend(overruns)
            p["engine_time"], p["clock"] = engine_time, clock
            if not force and time.monotonic() - self._last_progress < self._progress_every:
                if self._timer is None:
                    self._timer = threading.Timer(self._progress_every, self._write_later)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self._flush_progress(wait=force)

    def _write_later(self) -> None:
        with self._progress_lock:
            self._timer = None
        self._flush_progress(wait=False)

    def _flush_progress(self, wait: bool) -> None:
        with self._progress_lock:
            p = self._progress
            if p["engine_time"] is None and not p["applied"] and not p["overruns"]:
                return
            self._last_progress = time.monotonic()
            self._progress = {"applied": [], "overruns": [], "engine_time": None, "clock": 0.0}
        try:
            future = self._executor.submit(self._write_progress, p)
        except RuntimeError:  # closed: the final forced write already happened
            return
        if wait:
            future.result()

    def close(self) -> None:
        with self._progress_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._flush_progress(wait=True)

        def close_db() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        self._executor.submit(close_db).result()
        self._executor.shutdown(wait=True)
