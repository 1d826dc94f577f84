"""Checkpoints of the journal's write-ahead log, off the commit path.

SQLite checkpoints a WAL database by itself inside the commit that takes the log past
1,000 pages: that commit, and every request waiting on it, pays for copying the log into
the database file and syncing it (about a tenth of a 20,000-submission commit; issue 21).
The journal raises that threshold on its writing connection to a safety net (`SAFETY_PAGES`,
reached only if these checkpoints stop keeping up) and this thread checkpoints instead, on
its own connection: as soon as about as much was written as SQLite's own threshold holds
(`ROWS`, counted by the writer's changed rows), and otherwise `IDLE_S` after the first
write since the last checkpoint. Checkpointing more often than SQLite would costs more:
each one syncs the database file.

A PASSIVE checkpoint never waits for the writer and never makes it wait; it copies what
was committed when it began, and the log is crash-safe whether or not it ran.
"""

from __future__ import annotations

import sqlite3
import threading

SAFETY_PAGES = 20_000  # about 80 MB of log before the writer checkpoints by itself
ROWS = 10_000  # rows changed since the last checkpoint: about SQLite's 1,000 pages of log
IDLE_S = 5.0  # a trickle of writes is checkpointed this long after its first


class WalCheckpointer:
    def __init__(self, path: str, idle_s: float | None = None):
        self.idle_s = IDLE_S if idle_s is None else idle_s
        self.checkpoints = 0  # completed
        self.last_error: str | None = None  # the last failure (a full disk, say)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._written = threading.Event()
        self._due = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedd-wal", daemon=True)
        self._thread.start()

    def written(self, due: bool) -> None:
        """Something was committed (cheap; called after every commit); `due`: enough since
        the last checkpoint to make one now."""
        self._written.set()
        if due:
            self._due.set()

    def _run(self) -> None:
        while True:
            self._written.wait()
            self._due.wait(self.idle_s)
            if self._stopping.is_set():
                return  # the last connection to close checkpoints what is left
            self._written.clear()  # before: a commit from now on asks for the next one
            self._due.clear()
            try:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as err:  # retried at the next write; the log stays valid
                self.last_error = str(err)
            else:
                self.checkpoints += 1

    def close(self) -> None:
        self._stopping.set()
        self._written.set()
        self._due.set()
        self._thread.join()
        self._db.close()
