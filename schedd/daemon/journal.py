"""Crash-safe journal of accepted stimuli (SQLite, WAL, synchronous=FULL).

A mutating request is acknowledged only after its stimulus is committed. Requests that
arrive while a commit is in flight are committed together in the next one (group commit),
so the fsync cost is shared. All SQLite work happens in one writer thread.

What is kept:
* `meta`: the run's configuration (cluster, policy, options, seed, engine options, clock);
  a restart with a different configuration is refused rather than replayed wrongly.
* `stimuli`: every accepted request, in order (`seq` 1, 2, 3, ... with no gap), with its
  client request id and answer (for idempotent retries) and the engine time at which it
  was applied (`applied_at`).
* `overruns`: the policy passes that fell back because of the wall-clock budget.
* `progress`: the engine time and clock reached. Written, with the `applied_at` marks and
  the iteration's finished jobs, durably **before** the iteration's events are published
  (`mark`): whatever a watcher saw, a restart starts from there or later.
* `finished`: the records of finished jobs (the results store; the daemon keeps only live
  jobs in memory and reads finished ones from here).
* `rejected`: stimuli the engine raised on during recovery, with the error (quarantined:
  recovery goes on without them; `schedd journal check` lists them).

Next to the file, `FILE-acked` holds the last acknowledged sequence number and its CRC-32
(written after each commit, not synced: it can lag, never lead). A journal whose stimuli
end before that number lost acknowledged requests (a truncated or garbled write-ahead
log) and is refused; so is one whose write-ahead log lacks frames that SQLite's own index
of it, left by a crash, records as committed (wal_witness.py), and a missing or empty
file next to any such trace of an earlier journal. A new journal is made only where
nothing was. `FILE-lock` keeps a second process off the journal (journal_lock.py).

Recovery replays the stimuli through a fresh engine at their `applied_at` times, which
rebuilds the same state (the engine is deterministic); stimuli accepted but not applied
before the crash are applied at the recovered time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .journal_check import (
    acked_path,
    acked_record,
    check_journal,
    earlier_traces,
    file_uri,
    row_crc,
    side_files,
)
from .journal_json import json_text
from .journal_lock import JournalLock, LockHeld
from .records import Stimulus
from .wal_checkpoints import ROWS, SAFETY_PAGES, WalCheckpointer

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
    applied_at REAL,
    crc INTEGER
);
CREATE TABLE IF NOT EXISTS overruns (pass INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS progress (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    engine_time REAL NOT NULL,
    clock REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS finished (
    job_id INTEGER PRIMARY KEY,
    state TEXT NOT NULL,
    job_class TEXT NOT NULL,
    user INTEGER NOT NULL,
    owner TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS finished_counts (
    state TEXT NOT NULL,
    job_class TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (state, job_class)
);
CREATE TABLE IF NOT EXISTS results (n INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,
                                    row BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS run_record (tbl TEXT NOT NULL, n INTEGER NOT NULL,
                                       row BLOB NOT NULL, PRIMARY KEY (tbl, n));
CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq INTEGER NOT NULL,
    engine_time REAL NOT NULL,
    clock REAL NOT NULL,
    state BLOB NOT NULL,
    crc INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    request_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    response TEXT NOT NULL,
    accepted_wall REAL
);
CREATE TABLE IF NOT EXISTS rejected (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    request_id TEXT,
    owner TEXT NOT NULL,
    body TEXT NOT NULL,
    response TEXT NOT NULL,
    error TEXT NOT NULL,
    rejected_wall REAL NOT NULL
);
"""
TABLES = ("meta", "stimuli", "overruns", "progress", "finished", "finished_counts",
          "results", "snapshot", "requests", "rejected")


class JournalError(RuntimeError):
    """The journal cannot be used (one sentence)."""


# How long a request id answers retries once its stimulus is compacted away; then the id
# may be used again (SCHEDD_REQUEST_ID_DAYS; 0 keeps every id for the journal's life).
REQUEST_ID_DAYS = 7.0


def request_id_days() -> float:
    text = os.environ.get("SCHEDD_REQUEST_ID_DAYS", "")
    if not text:
        return REQUEST_ID_DAYS
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not 0 <= days <= 36500:
        raise JournalError("SCHEDD_REQUEST_ID_DAYS must be a number of days from 0 to "
                           f"36,500 (0 = keep every request id), not {text!r}")
    return days


@dataclass
class Recovered:
    meta: dict[str, str]
    stimuli: list[tuple[Stimulus, float | None]] = field(default_factory=list)
    overruns: list[int] = field(default_factory=list)
    engine_time: float = 0.0
    clock: float = 0.0
    # Rows that could not even be read back as stimuli: (seq, error), to quarantine.
    unreadable: list[tuple[int, str]] = field(default_factory=list)
    snapshot: bytes | None = None  # live state at `snapshot_seq` (then only the tail)
    snapshot_seq: int = 0

    @property
    def empty(self) -> bool:
        return not self.meta


@dataclass
class Progress:
    """One iteration's durable mark: what it applied, where it got to, what finished."""

    applied: list[tuple[int, float]]
    overruns: list[int]
    engine_time: float
    clock: float
    finished: list[tuple[int, str, str, int, str, str]] = field(default_factory=list)
    results: list[tuple[int, int, bytes]] = field(default_factory=list)  # n, job id, row
    record: list[tuple[str, int, bytes]] = field(default_factory=list)  # run record rows


@dataclass
class Snapshot:
    """Live state after stimulus `last_seq`: recovery loads it and replays the tail."""

    last_seq: int
    engine_time: float
    clock: float
    state: bytes


class Journal:
    def __init__(self, path: str, *, on_commit_seconds: Callable[[float], None] | None = None,
                 check: bool = True):
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="schedd-journal")
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[list[Stimulus], asyncio.Future[None]]] = []
        self._flushing = False
        self._committing = 0  # appends in the group commit under way
        self.commit_seconds = 0.0  # a moving average of one group commit (retry hints)
        self._on_commit_seconds = on_commit_seconds
        self._next_seq = 1
        self._acked_fd: int | None = None
        self._wal: WalCheckpointer | None = None  # on disk: checkpoints off the commit path
        self._changes_checkpointed = 0  # the writer's total_changes when one was last due
        self.request_id_seconds = request_id_days() * 86400.0
        self.on_committed: Callable[[list[Stimulus]], None] | None = None
        self._lock: JournalLock | None = None
        self.created = False  # a new journal, made by this process
        self._made: list[str] = []  # files this process made (a failed start removes them)
        self.notes: list[str] = []  # what the start-up check noticed, short of damage
        # Whether the last write failed (a full disk): health says NOT_SERVING until one
        # works. `on_write_state(failing)` is called, from the writer thread, on a change.
        self.writes_failing = False
        self.on_write_state: Callable[[bool], None] | None = None
        try:
            self._executor.submit(self._open, check).result()
        except BaseException:
            self._executor.submit(self._abandon).result()
            self._executor.shutdown(wait=True)
            raise

    @property
    def on_disk(self) -> bool:
        return self.path != ":memory:"

    # ------------------------------------------------------------------ writer thread
    def _open(self, check: bool) -> None:
        if self.on_disk:
            try:
                lock = self._lock = JournalLock.take(self.path)
            except LockHeld as err:
                raise JournalError(f"{err}; nothing was changed (stop that process first, "
                                   "or give another --state-db)") from None
            except OSError as err:  # its folder is missing or not writable, say
                raise JournalError(f"cannot open the journal {self.path}: cannot create "
                                   f"its lock file {err.filename} ({err.strerror})") from None
            fresh = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
            if (not fresh and check) or (fresh and earlier_traces(self.path)):
                report = check_journal(self.path, quick=True)
                if report.problems:
                    raise JournalError(f"the journal {self.path} is damaged: "
                                       f"{report.problems[0]}; nothing was changed (see "
                                       f"`schedd journal check {self.path}`)")
                self.notes = report.notes
            assert lock is not None  # take() creates the file
            lock.sign()
            if fresh:  # nothing was here: everything made from now on is this run's
                self.created = True
                self._made = [p for p in (self.path, *side_files(self.path))
                              if not os.path.exists(p)]
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db = db
            if self.on_disk:
                mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise JournalError(f"{self.path}: SQLite refused WAL mode ({mode})")
            db.execute("PRAGMA synchronous=FULL")
            if self.on_disk:  # WalCheckpointer checkpoints; this is only a safety net
                db.execute(f"PRAGMA wal_autocheckpoint={SAFETY_PAGES}")
            db.executescript(SCHEMA)
            columns = {r[1] for r in db.execute("PRAGMA table_info(stimuli)")}
            if "crc" not in columns:  # a journal of an earlier version
                db.execute("ALTER TABLE stimuli ADD COLUMN crc INTEGER")
            if "accepted_wall" not in {r[1] for r in db.execute("PRAGMA table_info(requests)")}:
                # An earlier version kept no age: its ids get a full window from now.
                db.execute("ALTER TABLE requests ADD COLUMN accepted_wall REAL")
                db.execute("UPDATE requests SET accepted_wall = ?", (time.time(),))
            # Each snapshot drops the ids older than the window: by index, not a scan of
            # every request of the last days.
            db.execute("CREATE INDEX IF NOT EXISTS requests_by_age ON requests (accepted_wall)")
            last = db.execute("SELECT MAX(m) FROM (SELECT MAX(seq) AS m FROM stimuli "
                              "UNION ALL SELECT MAX(seq) FROM rejected)").fetchone()[0]
        except sqlite3.DatabaseError as err:
            raise JournalError(f"cannot open the journal {self.path}: {err}") from None
        self._next_seq = int(last or 0) + 1
        if self.on_disk:
            try:
                self._acked_fd = os.open(acked_path(self.path), os.O_WRONLY | os.O_CREAT, 0o644)
            except OSError as err:
                raise JournalError(f"cannot open {acked_path(self.path)}: "
                                   f"{err.strerror}") from None
            # The check found none missing up to the old mark: the journal's last is the
            # mark now (a missing or damaged mark is made whole again).
            self._write_acked(self._next_seq - 1)
            self._wal = WalCheckpointer(self.path)

    def _close_files(self) -> None:
        """Close the WAL checkpointer first (the writer, closing last, checkpoints), then
        the database and the `-acked` mark."""
        if self._wal is not None:
            self._wal.close()
            self._wal = None
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._acked_fd is not None:
            os.close(self._acked_fd)
            self._acked_fd = None

    def _abandon(self) -> None:
        """Undo a start that failed: close, remove what this process made of a new
        journal (a refused or failed start leaves nothing behind), drop the lock."""
        self._close_files()
        for name in self._made:
            with contextlib.suppress(OSError):
                os.unlink(name)
        if self.created and self.path not in self._made:
            with contextlib.suppress(OSError):  # an empty file was there: empty again
                os.truncate(self.path, 0)
        if self._lock is not None:
            self._lock.release(remove=True, path=self.path)
            self._lock = None

    def discard_if_new(self) -> bool:
        """A start that failed after the journal was opened (a port in use, say): close
        it, and when it is a new journal with no stimulus, remove every file it made.
        True when removed."""
        if not self.created or self._next_seq != 1:
            self.close(remove_lock=True)
            return False
        if self._read_db is not None:
            self._read_db.close()
            self._read_db = None
        self._executor.submit(self._abandon).result()
        self._executor.shutdown(wait=True)
        return True

    def _write_acked(self, seq: int) -> None:
        if self._acked_fd is not None:
            os.pwrite(self._acked_fd, acked_record(seq), 0)  # one write of 32 bytes

    def _transaction(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """BEGIN IMMEDIATE; work; COMMIT. A failure rolls back (when SQLite has not done
        so already, as it does on a full disk) and raises JournalError."""
        db = self._db
        if db is None:
            raise JournalError(f"the journal {self.path} is closed")
        try:
            db.execute("BEGIN IMMEDIATE")
            work(db)
            db.execute("COMMIT")
            if self._wal is not None:
                due = db.total_changes - self._changes_checkpointed >= ROWS
                if due:
                    self._changes_checkpointed = db.total_changes
                self._wal.written(due)
        except sqlite3.Error as err:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            if not isinstance(err, sqlite3.IntegrityError):  # a constraint: not the disk
                self._write_state(failing=True)
            raise JournalError(f"the journal {self.path} could not be written ({err}); "
                               "nothing was recorded") from None
        self._write_state(failing=False)

    def _write_state(self, failing: bool) -> None:
        if failing != self.writes_failing:
            self.writes_failing = failing
            if self.on_write_state is not None:
                self.on_write_state(failing)

    def probe(self) -> bool:
        """Try one small write (while writes fail: is there room again?). True when it
        was committed. It records only when the journal was last found writable."""
        def work(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('writable_at', ?)",
                       (repr(time.time()),))

        try:
            self._executor.submit(self._transaction, work).result()
        except (JournalError, RuntimeError):  # RuntimeError: closed meanwhile
            return False
        return True

    async def probe_async(self) -> bool:
        return await asyncio.get_running_loop().run_in_executor(None, self.probe)

    def _write(self, stimuli: list[Stimulus]) -> None:
        start = time.perf_counter()
        now = time.time()
        first = self._next_seq

        def rows() -> Iterator[tuple[Any, ...]]:
            for seq, st in enumerate(stimuli, first):
                body, response = json_text(st.body), json_text(st.response)
                yield (seq, st.kind, st.request_id or None, st.owner, body, response, now,
                       row_crc(seq, st.kind, st.owner, body, response))

        def work(db: sqlite3.Connection) -> None:
            # One executemany for the group: a stream of 20,000 jobs is one statement
            # stepped 20,000 times, not 20,000 statement calls (issue 21).
            db.executemany(
                "INSERT INTO stimuli (seq, kind, request_id, owner, body, response, "
                "accepted_wall, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows())

        self._transaction(work)
        for i, st in enumerate(stimuli):
            st.seq = first + i
        self._next_seq = first + len(stimuli)
        self._write_acked(self._next_seq - 1)
        seconds = time.perf_counter() - start
        self.commit_seconds += (seconds - self.commit_seconds) * 0.2
        if self._on_commit_seconds is not None:
            self._on_commit_seconds(seconds)

    def _write_progress(self, progress: Progress) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.executemany("UPDATE stimuli SET applied_at = ? WHERE seq = ?",
                           [(t, seq) for seq, t in progress.applied])
            db.executemany("INSERT OR IGNORE INTO overruns (pass) VALUES (?)",
                           [(p,) for p in progress.overruns])
            counts: dict[tuple[str, str], int] = {}
            for row in progress.finished:  # a job is stored (and counted) once
                cur = db.execute("INSERT OR IGNORE INTO finished (job_id, state, job_class, "
                                 "user, owner, record) VALUES (?, ?, ?, ?, ?, ?)", row)
                if cur.rowcount > 0:
                    counts[(row[1], row[2])] = counts.get((row[1], row[2]), 0) + 1
            db.executemany("INSERT INTO finished_counts (state, job_class, n) VALUES (?, ?, ?) "
                           "ON CONFLICT (state, job_class) DO UPDATE SET n = n + excluded.n",
                           [(st, cls, n) for (st, cls), n in counts.items()])
            db.executemany("INSERT OR REPLACE INTO results (n, job_id, row) VALUES (?, ?, ?)",
                           progress.results)
            db.executemany("INSERT OR REPLACE INTO run_record (tbl, n, row) VALUES (?, ?, ?)",
                           progress.record)
            db.execute("INSERT INTO progress (id, engine_time, clock) VALUES (1, ?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET engine_time = excluded.engine_time, "
                       "clock = excluded.clock", (progress.engine_time, progress.clock))

        self._transaction(work)

    # ------------------------------------------------------------------ public API
    def load(self) -> Recovered:
        return self._executor.submit(self._load).result()

    def _load(self) -> Recovered:
        db = self._db
        assert db is not None
        try:
            return self._read(db)
        except sqlite3.DatabaseError as err:
            raise JournalError(f"cannot read the journal {self.path}: {err}") from None

    def _read(self, db: sqlite3.Connection) -> Recovered:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        rec = Recovered(meta)
        for kind, request_id, owner, body, response, seq, applied in db.execute(
                "SELECT kind, request_id, owner, body, response, seq, applied_at "
                "FROM stimuli ORDER BY seq"):
            try:
                st = Stimulus(kind, json.loads(body), owner, request_id or "", seq,
                              json.loads(response))
                if not isinstance(st.body, dict) or not isinstance(st.response, dict):
                    raise ValueError("the body and the answer must be JSON objects")
                _ = st.job_id  # every stimulus names its job
            except (ValueError, TypeError, KeyError) as err:
                rec.unreadable.append((seq, f"unreadable stimulus: {type(err).__name__}: "
                                            f"{err}"))
                continue
            rec.stimuli.append((st, applied))
        rec.overruns = [p for (p,) in db.execute("SELECT pass FROM overruns ORDER BY pass")]
        row = db.execute("SELECT engine_time, clock FROM progress WHERE id = 1").fetchone()
        if row is not None:
            rec.engine_time, rec.clock = row
        snap = db.execute("SELECT last_seq, state, crc FROM snapshot WHERE id = 1").fetchone()
        if snap is not None:
            if zlib.crc32(snap[1]) != snap[2]:
                raise JournalError(f"the journal {self.path} is damaged: its snapshot does "
                                   "not match its checksum")
            rec.snapshot_seq, rec.snapshot = int(snap[0]), bytes(snap[1])
        return rec

    def write_meta(self, meta: dict[str, str]) -> None:
        def work(db: sqlite3.Connection) -> None:
            db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                           sorted(meta.items()))

        def write() -> None:
            self._transaction(work)

        self._executor.submit(write).result()

    def quarantine(self, seq: int, error: str) -> None:
        """Move stimulus `seq` to the `rejected` table with the error (at recovery)."""
        def work(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO rejected (seq, kind, request_id, owner, body, "
                       "response, error, rejected_wall) SELECT seq, kind, request_id, owner, "
                       "body, response, ?, ? FROM stimuli WHERE seq = ?",
                       (error, time.time(), seq))
            db.execute("DELETE FROM stimuli WHERE seq = ?", (seq,))

        self._executor.submit(self._transaction, work).result()

    def snapshot(self, snap: Snapshot) -> None:
        """Store live state and compact: the stimuli it covers leave the journal (their
        request ids and answers stay in `requests`, for retries, until they are older
        than SCHEDD_REQUEST_ID_DAYS: a daemon that runs for months keeps a bounded
        table)."""
        def work(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO snapshot (id, last_seq, engine_time, clock, state, crc) "
                       "VALUES (1, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                       "last_seq = excluded.last_seq, engine_time = excluded.engine_time, "
                       "clock = excluded.clock, state = excluded.state, crc = excluded.crc",
                       (snap.last_seq, snap.engine_time, snap.clock, snap.state,
                        zlib.crc32(snap.state)))
            db.execute("INSERT OR REPLACE INTO requests (request_id, seq, response, "
                       "accepted_wall) SELECT request_id, seq, response, accepted_wall "
                       "FROM stimuli WHERE seq <= ? AND request_id IS NOT NULL",
                       (snap.last_seq,))
            if self.request_id_seconds > 0:
                db.execute("DELETE FROM requests WHERE accepted_wall < ?",
                           (time.time() - self.request_id_seconds,))
            # Keep the last covered stimulus so the sequence continues after it.
            db.execute("DELETE FROM stimuli WHERE seq < ?", (snap.last_seq,))

        start = time.perf_counter()
        self._executor.submit(self._transaction, work).result()
        self.last_snapshot_seconds = time.perf_counter() - start

    last_snapshot_seconds = 0.0

    async def snapshot_async(self, snap: Snapshot) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.snapshot, snap)

    def request(self, request_id: str) -> tuple[int, dict[str, Any]] | None:
        """A journalled request's sequence number and answer (idempotent retries)."""
        db = self._reader()
        row = db.execute("SELECT seq, response FROM stimuli WHERE request_id = ?",
                         (request_id,)).fetchone()
        if row is None:
            row = db.execute("SELECT seq, response FROM requests WHERE request_id = ?",
                             (request_id,)).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def result_rows(self, below: int, chunk: int) -> Any:
        """Stored result rows with n < below, in order, `chunk` at a time (a fresh
        read-only connection: the caller may be any thread)."""
        return self._stored_rows("SELECT row FROM results WHERE n < ? ORDER BY n", (below,),
                                 chunk)

    def record_rows(self, table: str, below: int, chunk: int) -> Any:
        """Stored rows of one run-record table (segments, waits, levels) with n < below."""
        return self._stored_rows("SELECT row FROM run_record WHERE tbl = ? AND n < ? "
                                 "ORDER BY n", (table, below), chunk)

    def _stored_rows(self, sql: str, params: tuple[Any, ...], chunk: int) -> Any:
        if not self.on_disk:
            rows = self._reader().execute(sql, params).fetchall()
            for lo in range(0, len(rows), chunk):
                yield [r[0] for r in rows[lo:lo + chunk]]
            return
        # The caller pulls chunks from pool threads one after another (never at once).
        db = sqlite3.connect(file_uri(self.path, "mode=ro"), uri=True,
                             check_same_thread=False)
        try:
            cur = db.execute(sql, params)
            while True:
                rows = cur.fetchmany(chunk)
                if not rows:
                    return
                yield [r[0] for r in rows]
        finally:
            db.close()

    def rejected(self) -> list[tuple[int, str, str]]:
        """Quarantined stimuli: (seq, kind, error)."""
        def read() -> list[tuple[int, str, str]]:
            assert self._db is not None
            return [(int(s), k, e) for s, k, e in self._db.execute(
                "SELECT seq, kind, error FROM rejected ORDER BY seq")]

        return self._executor.submit(read).result()

    async def append(self, stimuli: list[Stimulus]) -> None:
        """Commit the stimuli (their `seq` is set); returns once they are durable."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((stimuli, done))
        if not self._flushing:
            self._flushing = True
            loop.create_task(self._flush())
        await done

    @property
    def waiting(self) -> int:
        """Appends not yet committed: queued, or in the group commit under way."""
        return len(self._pending) + self._committing

    async def _flush(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                self._committing = len(batch)
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
                self._committing = 0
                for (_, done), err in zip(batch, outcomes, strict=True):
                    if done.done():
                        continue
                    if err is None:
                        done.set_result(None)
                    else:
                        done.set_exception(err if isinstance(err, JournalError) else
                                           JournalError(f"journal write failed: {err}"))
        finally:
            self._flushing = False
            self._committing = 0

    async def _write_alone(self, group: list[Stimulus]) -> Exception | None:
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._write, group)
        except Exception as err:  # e.g. disk full, or a request id already journalled
            return err
        return None

    async def mark(self, progress: Progress) -> None:
        """Make an iteration's progress durable (after any stimuli queued before it)."""
        await asyncio.get_running_loop().run_in_executor(self._executor,
                                                         self._write_progress, progress)

    def mark_now(self, progress: Progress) -> None:
        self._executor.submit(self._write_progress, progress).result()

    def note_progress(self, applied: list[tuple[int, float]], overruns: list[int],
                      engine_time: float, clock: float, force: bool = True) -> None:
        """Record where the engine got to, durably, now (kept for callers and tests)."""
        self.mark_now(Progress(applied, overruns, engine_time, clock))

    # ------------------------------------------------------------------ results store
    def finished_record(self, job_id: int) -> str | None:
        """The stored record (JSON) of a finished job, read on the caller's thread."""
        row = self._reader().execute("SELECT record FROM finished WHERE job_id = ?",
                                     (job_id,)).fetchone()
        return None if row is None else str(row[0])

    def finished_page(self, where: str, params: list[Any], after: int,
                      limit: int) -> tuple[list[str], int]:
        """Records of finished jobs matching `where` (SQL over state, job_class, user,
        owner) with job_id > after, the first `limit`, and how many match in all."""
        db = self._reader()
        rows = db.execute(f"SELECT record FROM finished WHERE job_id > ? AND ({where}) "
                          "ORDER BY job_id LIMIT ?", [after, *params, limit]).fetchall()
        total = db.execute(f"SELECT COUNT(*) FROM finished WHERE {where}", params).fetchone()
        return [str(r[0]) for r in rows], int(total[0])

    def max_finished_id(self) -> int:
        """The largest job id in the results store (0 when empty)."""
        row = self._reader().execute("SELECT MAX(job_id) FROM finished").fetchone()
        return int(row[0] or 0) if row is not None else 0

    def finished_count(self) -> dict[tuple[str, str], int]:
        return {(s, c): int(n) for s, c, n in self._reader().execute(
            "SELECT state, job_class, n FROM finished_counts")}

    _read_db: sqlite3.Connection | None = None

    def _reader(self) -> sqlite3.Connection:
        """A second connection for reads on the event loop (WAL: readers never block the
        writer); for `:memory:` the writer's own connection, through its thread."""
        if self._read_db is None:
            if self.on_disk:
                self._read_db = sqlite3.connect(file_uri(self.path, "mode=ro"), uri=True,
                                                check_same_thread=False)
            else:
                self._read_db = _ThreadedReader(self)  # type: ignore[assignment]
        assert self._read_db is not None
        return self._read_db

    def close(self, remove_lock: bool = False) -> None:
        """`remove_lock`: also remove the lock file if this process made it (a failed
        start)."""
        def close_db() -> None:
            self._close_files()
            if self._lock is not None:  # last: the files are closed
                self._lock.release(remove=remove_lock, path=self.path)
                self._lock = None

        if self._read_db is not None and self.on_disk:
            self._read_db.close()
            self._read_db = None
        self._executor.submit(close_db).result()
        self._executor.shutdown(wait=True)


class _ThreadedReader:
    """The `execute` of an in-memory journal's only connection, run in its thread."""

    def __init__(self, journal: Journal):
        self._journal = journal

    def execute(self, sql: str, params: Any = ()) -> _Rows:
        def run() -> list[Any]:
            assert self._journal._db is not None
            return self._journal._db.execute(sql, params).fetchall()

        return _Rows(self._journal._executor.submit(run).result())


class _Rows:
    def __init__(self, rows: list[Any]):
        self._rows = rows

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows

    def __iter__(self) -> Any:
        return iter(self._rows)
