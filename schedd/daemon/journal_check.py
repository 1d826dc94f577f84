"""Is a journal file sound? SQLite's own check plus the journal's invariants.

Read-only: the file is opened with `mode=ro`, so a damaged journal (or its write-ahead log)
is never checkpointed, merged or otherwise changed by looking at it.

Invariants:
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

import os
import sqlite3
import zlib
from dataclasses import dataclass, field

REQUIRED = ("meta", "stimuli", "overruns", "progress")
RESULTS_STORE = {"finished", "results", "run_record", "requests"}  # looked up: `check` only


@dataclass
class CheckReport:
    path: str
    problems: list[str] = field(default_factory=list)
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


def read_acked(path: str) -> int | None:
    """The last acknowledged sequence number recorded next to the journal, if any."""
    try:
        with open(acked_path(path), "rb") as f:
            text = f.read(64).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def check_journal(path: str, quick: bool = False) -> CheckReport:
    report = CheckReport(path)
    if not os.path.exists(path):
        report.problems.append("there is no such file")
        return report
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as err:
        report.problems.append(f"SQLite cannot open it ({err})")
        return report
    try:
        _check(db, report, quick, read_acked(path))
    except sqlite3.DatabaseError as err:
        report.problems.append(f"SQLite cannot read it ({err}): the file is corrupt or not "
                               "a journal")
    finally:
        db.close()
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
