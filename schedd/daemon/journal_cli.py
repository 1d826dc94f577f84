"""`schedd journal check|export|compact FILE`: look after a daemon's journal.

* check: SQLite's integrity check plus the journal's invariants (journal_check.py); lists
  quarantined entries. Exit 0 when sound, 1 when not, 2 when the file cannot be used.
* export: every table as JSON lines (one object per row, with a "table" key), read-only;
  binary values (the snapshot, result rows) as {"base64": ...}.
* compact: copy the journal's write-ahead log into the file and VACUUM it (a stopped
  daemon's journal only; refused when the check fails).

check and export change nothing and may run next to a live daemon: they take the
journal's lock shared (journal_lock.py), and when a daemon holds it they read the live
journal as one more reader (its write-ahead log is then not checked against SQLite's
index). compact takes the lock exclusively, so it refuses a journal a daemon holds, and
no daemon starts on the journal while it runs.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import sqlite3
import sys
from typing import Any, TextIO

from .journal_check import check_journal, earlier_traces, open_readonly
from .journal_lock import JournalLock, LockHeld

EXPORT_ORDER = ("meta", "progress", "overruns", "snapshot", "stimuli", "requests",
                "rejected", "finished", "finished_counts", "results", "run_record")
JSON_COLUMNS = {"stimuli": ("body", "response"), "rejected": ("body", "response"),
                "requests": ("response",), "finished": ("record",)}


def add_parser(sub: Any) -> argparse.ArgumentParser:
    jp = sub.add_parser("journal", help="check, export or compact a daemon's journal",
                        description="Look after the SQLite journal of `schedd serve "
                        "--state-db FILE` (docs/daemon.md, Guarantees).")
    jsub = jp.add_subparsers(dest="journal_command", required=True)
    check = jsub.add_parser("check", help="SQLite integrity check plus the journal's own "
                            "invariants; exit 1 when something is wrong")
    check.add_argument("file", metavar="FILE")
    check.add_argument("--quick", action="store_true",
                       help="SQLite quick_check of the journal proper (what the daemon "
                       "checks at start), not the results store")
    export = jsub.add_parser("export", help="every table as JSON lines")
    export.add_argument("file", metavar="FILE")
    export.add_argument("-o", "--out", default="-", metavar="PATH",
                        help="write here instead of standard output")
    compact = jsub.add_parser("compact", help="fold the write-ahead log into the file and "
                              "reclaim free space (stop the daemon first)")
    compact.add_argument("file", metavar="FILE")
    return jp


def run(args: argparse.Namespace) -> int:
    if args.journal_command == "check":
        return _check(args.file, args.quick)
    if args.journal_command == "export":
        return _export(args.file, args.out)
    return _compact(args.file)


def _shared_lock(path: str) -> tuple[JournalLock | None, bool]:
    """The journal's lock taken shared (None without a lock file), and whether a daemon
    (or a compaction) holds it instead: the journal is live."""
    try:
        return JournalLock.take(path, shared=True, create=False), False
    except LockHeld:
        return None, True
    except OSError:
        return None, False


def _check(path: str, quick: bool) -> int:
    lock, live = _shared_lock(path)
    try:
        report = check_journal(path, quick=quick, live=live)
    finally:
        if lock is not None:
            lock.release()
    for seq, kind, error in report.rejected:
        print(f"{path}: quarantined stimulus {seq} ({kind}): {error}")
    for note in report.notes:
        print(f"{path}: note: {note}")
    if not report.ok:
        for problem in report.problems:
            print(f"{path}: {problem}")
        return 1
    acked = "" if report.acked is None else f", acknowledged up to {report.acked}"
    clock = ("no progress recorded" if report.engine_time is None else
             f"engine time {report.engine_time:g}, clock {report.clock:g}")
    stored = "" if quick else f"{report.finished} finished jobs stored; "
    held = "; held by a running daemon" if live else ""
    print(f"{path}: ok ({report.stimuli} stimuli, last sequence number "
          f"{report.last_seq}{acked}; {len(report.rejected)} quarantined; {stored}{clock}"
          f"{held})")
    return 0


def _export(path: str, out: str) -> int:
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        traces = earlier_traces(path)
        what = "there is no such file" if not os.path.exists(path) else "the file is empty"
        left = f" ({', '.join(traces)} remain from an earlier journal)" if traces else ""
        print(f"schedd: error: {path}: {what}{left}", file=sys.stderr)
        return 2
    lock, live = _shared_lock(path)
    try:
        with open_readonly(path, live) as db:
            if out == "-":
                _dump(db, sys.stdout)
            else:
                with open(out, "w") as f:
                    _dump(db, f)
    except sqlite3.DatabaseError as err:
        print(f"schedd: error: {path}: SQLite cannot read it ({err})", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"schedd: error: cannot write {out}: {err.strerror}", file=sys.stderr)
        return 2
    finally:
        if lock is not None:
            lock.release()
    return 0


def _dump(db: sqlite3.Connection, f: TextIO) -> None:
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for table in EXPORT_ORDER:
        if table not in tables:
            continue
        cur = db.execute(f"SELECT * FROM {table} ORDER BY 1")
        names = [d[0] for d in cur.description]
        for row in cur:
            obj: dict[str, Any] = {"table": table, **{
                name: {"base64": base64.b64encode(value).decode()}
                if isinstance(value, bytes) else value
                for name, value in zip(names, row, strict=True)}}
            for column in JSON_COLUMNS.get(table, ()):
                with contextlib.suppress(TypeError, ValueError):  # else kept as text
                    obj[column] = json.loads(obj[column])
            f.write(json.dumps(obj, sort_keys=True) + "\n")


def _compact(path: str) -> int:
    if not os.path.exists(path):
        print(f"schedd: error: {path}: there is no such file", file=sys.stderr)
        return 2
    try:  # held while it runs: no daemon starts on a journal being compacted
        lock = JournalLock.take(path)
    except LockHeld as err:
        print(f"schedd: error: {err}; not compacted (stop the daemon first)",
              file=sys.stderr)
        return 2
    except OSError as err:
        print(f"schedd: error: cannot lock {path} ({err.strerror})", file=sys.stderr)
        return 2
    assert lock is not None
    compacted = False
    try:
        report = check_journal(path)
        if not report.ok:
            print(f"schedd: error: {path}: {report.problems[0]}; not compacted (see "
                  f"`schedd journal check {path}`)", file=sys.stderr)
            return 2
        before = _size(path)
        try:
            db = sqlite3.connect(path, isolation_level=None, timeout=0.5)
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
        except sqlite3.Error as err:
            print(f"schedd: error: cannot compact {path} ({err})", file=sys.stderr)
            return 2
        compacted = True
    finally:
        lock.release(remove=not compacted, path=path)
    after = _size(path)
    print(f"{path}: compacted, {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB "
          f"({report.stimuli} stimuli kept)")
    return 0


def _size(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal")
               if os.path.exists(p))
