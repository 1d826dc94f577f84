"""Is a journal file sound? SQLite's own check plus the journal's invariants.

Read-only: nothing next to the journal is changed by looking at it. A journal no daemon
holds is read with SQLite's index of its write-ahead log (`-shm`) opened read-only
(`readonly_shm`: SQLite builds a private index in memory) or, without a log, as an
immutable file; a connection allowed to write would reset that index, fold a damaged log
into the file and erase the evidence. A journal a daemon holds (its lock, journal_lock.py)
is read as one more reader; the log is then not checked against the index.

Invariants:
* a journal's database file is missing or empty only where no trace of one is left (its
  write-ahead log, SQLite's index of it, `FILE-acked`): otherwise the file was lost;
* the write-ahead log holds every frame SQLite's index left after a crash records as
  committed, with a valid checksum chain (wal_witness.py);
* SQLite `PRAGMA integrity_check` (or `quick_check`) says ok;
* every stimulus row matches its CRC-32 (damage inside a record's text);
* it is a schedd journal (its tables are there, the settings are recorded);
* sequence numbers of stimuli and quarantined stimuli run 1, 2, 3, ... without a gap
  (from the snapshot's last stimulus on, in a compacted journal); the snapshot matches its
  CRC-32;
* every acknowledged request is present: none ends before the mark in `FILE-acked`;
* `applied_at` marks form a prefix in sequence order, never later than the progress mark.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from .wal_witness import log_exists, log_problem

REQUIRED = ("meta", "stimuli", "overruns", "progress")
RESULTS_STORE = {"finished", "results", "run_record", "requests"}  # looked up: `check` only
ACKED_BYTES = 32  # one fixed-size record, written in one call at offset 0


@dataclass
class CheckReport:
    path: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth saying, not damage
    rejected: list[tuple[int, str, str]] = field(default_factory=list)  # seq, kind, error
    stimuli: int = 0
    last_seq: int = 0
    acked: int | None = None
    finished: int = 0
    snapshot_seq: int = 0
    engine_time: float | None = None
    clock: float | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def row_crc(seq: int, kind: str, owner: str, body: str, response: str) -> int:
    """CRC-32 of a stimulus row: damage inside a record's text is caught, not replayed."""
    return zlib.crc32("\x1f".join((str(seq), kind, owner, body, response)).encode())


def acked_path(path: str) -> str:
    return f"{path}-acked"


def side_files(path: str) -> tuple[str, str, str]:
    """The files a journal leaves next to it: SQLite's write-ahead log and its index,
    and the acknowledged mark."""
    return f"{path}-wal", f"{path}-shm", acked_path(path)


def earlier_traces(path: str) -> list[str]:
    """The side files of an earlier journal at `path` that exist."""
    return [p for p in side_files(path) if os.path.lexists(p)]


def acked_record(seq: int) -> bytes:
    """`FILE-acked`'s content: the mark and a CRC-32 of it, so that a damaged mark is
    known as such rather than read as another number."""
    text = f"{seq} {zlib.crc32(f'acked {seq}'.encode()):08x}"
    return text.ljust(ACKED_BYTES - 1).encode() + b"\n"


def read_acked(path: str) -> tuple[int | None, str | None]:
    """The last acknowledged sequence number recorded next to the journal, or None, and
    a note when the file is there but unreadable (then it witnesses nothing)."""
    name = acked_path(path)
    try:
        with open(name, "rb") as f:
            raw = f.read(ACKED_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as err:
        return None, f"{name} cannot be read ({err.strerror}): ignored"
    words = raw.decode("ascii", "replace").split()
    if len(words) == 1 and words[0].isascii() and words[0].isdigit():
        return int(words[0]), None  # written by an earlier version, without a checksum
    if (len(words) == 2 and words[0].isascii() and words[0].isdigit()
            and words[1] == f"{zlib.crc32(f'acked {words[0]}'.encode()):08x}"):
        return int(words[0]), None
    return None, (f"{name} is damaged (not a mark with its checksum): ignored; it is "
                  "written again at the next commit")


def file_uri(path: str, query: str) -> str:
    """An SQLite URI for `path` (its `%`, `?` and `#` escaped) with `query`."""
    quoted = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{quoted}?{query}"


@contextlib.contextmanager
def open_readonly(path: str, live: bool) -> Iterator[sqlite3.Connection]:
    """A connection that cannot change the journal or anything next to it (see the
    module's docstring). `live`: a daemon holds the journal."""
    made_shm = ""
    if live:
        uri = file_uri(path, "mode=ro")
    elif log_exists(path):
        shm = f"{path}-shm"
        if not os.path.lexists(shm):  # readonly_shm opens it, never creates it
            with open(shm, "xb"):
                made_shm = shm
        uri = file_uri(path, "mode=ro&readonly_shm=1")
    else:
        uri = file_uri(path, "mode=ro&immutable=1")
    try:
        db = sqlite3.connect(uri, uri=True)
        try:
            yield db
        finally:
            db.close()
    finally:
        if made_shm:
            with contextlib.suppress(OSError):
                os.unlink(made_shm)


def check_journal(path: str, quick: bool = False, live: bool = False) -> CheckReport:
    """`live`: a daemon holds the journal (its log is then not checked against the
    index, which the daemon keeps changing)."""
    report = CheckReport(path)
    traces = earlier_traces(path)
    left = f"{', '.join(traces)} remain from an earlier journal" if traces else ""
    if not os.path.exists(path):
        report.problems.append(f"its database file is missing but {left} (a new journal is "
                               "made only where none was)" if traces else
                               "there is no such file")
        return report
    if os.path.getsize(path) == 0:
        report.problems.append(f"its database file is empty but {left} (a new journal is "
                               "made only where none was)" if traces else
                               "the file is empty (not a journal yet)")
        return report
    acked, note = read_acked(path)
    if note:
        report.notes.append(note)
    # Before any connection: the first one to open the journal resets SQLite's index.
    lost = None if live else log_problem(path)
    try:
        with open_readonly(path, live) as db:
            _check(db, report, quick, acked)
    except sqlite3.DatabaseError as err:
        report.problems.append(f"SQLite cannot read it ({err}): the file is corrupt or not "
                               "a journal")
    except OSError as err:
        report.problems.append(f"it cannot be read ({err.strerror})")
    if lost:  # after a missing acknowledged request, which says more
        report.problems.append(lost)
    return report


def _check(db: sqlite3.Connection, report: CheckReport, quick: bool,
           acked: int | None) -> None:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if quick:  # at start: the journal proper, not the (large) results store
        verdict = []
        for table in sorted(tables - RESULTS_STORE):
            verdict += [str(r[0]) for r in db.execute(f"PRAGMA quick_check({table})")]
        verdict = [v for v in verdict if v != "ok"] or ["ok"]
    else:
        verdict = [str(r[0]) for r in db.execute("PRAGMA integrity_check")]
    if verdict != ["ok"]:
        report.problems.append("SQLite integrity check failed: " + "; ".join(verdict[:3]))
        return
    missing = [t for t in REQUIRED if t not in tables]
    if missing:
        report.problems.append(f"not a schedd journal (no table {', '.join(missing)})")
        return
    columns = {r[1] for r in db.execute("PRAGMA table_info(stimuli)")}
    crc = "crc" if "crc" in columns else "NULL"
    seqs = []
    for seq, kind, owner, body, response, stored in db.execute(
            f"SELECT seq, kind, owner, body, response, {crc} FROM stimuli ORDER BY seq"):
        seqs.append(int(seq))
        if stored is not None and stored != row_crc(seq, kind, owner, body, response):
            report.problems.append(f"stimulus {seq} is damaged (its checksum does not "
                                   "match its contents)")
            return
    if "rejected" in tables:
        report.rejected = [(int(s), str(k), str(e)) for s, k, e in db.execute(
            "SELECT seq, kind, error FROM rejected ORDER BY seq")]
    if "finished" in tables and not quick:
        report.finished = int(db.execute("SELECT COUNT(*) FROM finished").fetchone()[0])
    report.stimuli = len(seqs)
    first = 1
    if "snapshot" in tables:  # a compacted journal starts at its snapshot's stimulus
        snap = db.execute("SELECT last_seq, state, crc FROM snapshot WHERE id = 1").fetchone()
        if snap is not None:
            first = report.snapshot_seq = int(snap[0])
            if zlib.crc32(snap[1]) != snap[2]:
                report.problems.append("the snapshot is damaged (its checksum does not "
                                       "match its contents)")
                return
    every = sorted(s for s in seqs + [s for s, _, _ in report.rejected] if s >= first)
    report.last_seq = every[-1] if every else 0
    gaps = [(a, b) for a, b in zip([first - 1, *every], every, strict=False) if b != a + 1]
    if gaps:
        a, b = gaps[0]
        report.problems.append(f"sequence numbers jump from {a} to {b} (stimuli "
                               f"{a + 1}..{b - 1} are missing)" if b > a else
                               f"sequence number {b} appears twice")
    report.acked = acked
    if acked is not None and acked > report.last_seq:
        report.problems.append(
            f"acknowledged requests {report.last_seq + 1}..{acked} are missing (the last "
            f"acknowledged is {acked}, the journal ends at {report.last_seq}): its "
            "write-ahead log was truncated or damaged")
    if not db.execute("SELECT 1 FROM meta WHERE key = 'settings'").fetchone() and every:
        report.problems.append("the run's settings are not recorded")
    row = db.execute("SELECT engine_time, clock FROM progress WHERE id = 1").fetchone()
    if row is not None:
        report.engine_time, report.clock = float(row[0]), float(row[1])
    late = db.execute("SELECT MIN(seq) FROM stimuli WHERE applied_at IS NULL").fetchone()[0]
    if late is not None:
        after = db.execute("SELECT MIN(seq) FROM stimuli WHERE applied_at IS NOT NULL AND "
                           "seq > ?", (late,)).fetchone()[0]
        if after is not None:
            report.problems.append(f"stimulus {after} is marked applied but the earlier "
                                   f"stimulus {late} is not")
    top = db.execute("SELECT MAX(applied_at) FROM stimuli").fetchone()[0]
    if top is not None and (report.engine_time is None or top > report.engine_time):
        report.problems.append(f"a stimulus is marked applied at {top:g}, after the "
                               f"recorded engine time {report.engine_time}")
