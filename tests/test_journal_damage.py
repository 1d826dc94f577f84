"""A journal damaged after kill -9 under load, scenario by scenario (issue 34): the real
`schedd serve` either recovers every acknowledged job or refuses in one line with exit 2
and leaves every file next to the journal byte-identical; `schedd journal check` reports
the same finding. A new journal is made only where nothing was, and a start that fails
leaves nothing behind."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from daemon_proc import DaemonProc, wait_until
from event_watch import all_jobs
from refused_start import serve_refused

from schedd.v1 import scheduler_pb2 as pb

ARGS = ("--clock", "accelerated", "--speedup", "2000", "--cluster", "nodes:64",
        "--policy", "easy", "--tick", "0.05")
NAME = "journal.sqlite"
FRAME = 24 + 4096  # a frame of the write-ahead log: its header and one 4 KiB page


def _loaded_then_killed(tmp: Path) -> tuple[Path, set[int]]:
    """A journal of a daemon killed with -9 while three clients submitted: its files,
    and the ids of the jobs acknowledged before the kill."""
    db = tmp / NAME
    acked: set[int] = set()
    lock = threading.Lock()
    stop = threading.Event()
    d = DaemonProc(*ARGS, "--state-db", str(db))

    def client(base: int) -> None:
        stub = d.stub()
        i = 0
        while not stop.is_set():
            i += 1
            try:
                stub.SubmitJob(pb.SubmitJobRequest(
                    job_id=base + i, nodes=1 + i % 4, walltime=300, runtime=20 + i % 90,
                    submit_time=0.0), timeout=10)
            except grpc.RpcError:
                return
            with lock:
                acked.add(base + i)

    threads = [threading.Thread(target=client, args=(k * 100_000,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    try:
        wait_until("400 acknowledged submissions", lambda: len(acked) >= 400, timeout=60)
        d.kill()  # while the clients are still submitting
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        if d.proc.poll() is None:
            d.kill()
    with lock:
        return db, set(acked)


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[int]]:
    db, acked = _loaded_then_killed(tmp_path_factory.mktemp("crashed"))
    assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists(), "kill -9 leaves both"
    assert _last_frame(db) >= 2, "the log should hold committed frames at the kill"
    return db, acked


def _last_frame(db: Path) -> int:
    """mxFrame of SQLite's index of the log (walformat.html: offset 16, native u32)."""
    return int(struct.unpack("=I", Path(f"{db}-shm").read_bytes()[16:20])[0])


# ------------------------------------------------------------------ the damage
def _cut_log(db: Path) -> None:
    """Cut the log in the middle of its committed frames (not of a longer file that
    holds frames of an earlier generation after them)."""
    keep = 32 + (_last_frame(db) // 2) * FRAME + FRAME // 3
    wal = Path(f"{db}-wal")
    wal.write_bytes(wal.read_bytes()[:keep])


def _garble_log(db: Path) -> None:
    wal = Path(f"{db}-wal")
    data = bytearray(wal.read_bytes())
    at = 32 + (_last_frame(db) // 2) * FRAME + 100
    data[at:at + 64] = bytes(range(64))
    wal.write_bytes(bytes(data))


def _rm(suffix: str) -> Callable[[Path], None]:
    return lambda db: Path(f"{db}{suffix}").unlink()


def _garbage(suffix: str, size: int | None = None) -> Callable[[Path], None]:
    def damage(db: Path) -> None:
        f = Path(f"{db}{suffix}")
        f.write_bytes(os.urandom(size if size is not None else f.stat().st_size))
    return damage


def _acked_digit(db: Path) -> None:
    """One digit of the mark changed: its checksum no longer matches."""
    f = Path(f"{db}-acked")
    text = f.read_text()
    f.write_text(("9" if text[0] != "9" else "8") + text[1:])


def _fold_log(db: Path) -> None:
    """What a clean stop does: the log copied into the file, the log and index gone."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert not Path(f"{db}-wal").exists()


def _db_header(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[:100] = os.urandom(100)
    db.write_bytes(bytes(data))


def _all(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(db: Path) -> None:
        for step in steps:
            step(db)
    return damage


# refuse: exit 2, one line, nothing changed. recover: every acknowledged job is back.
# lost?: refuse when plain SQLite on a copy of the damaged files misses an acknowledged
# job (the damage lost one), else either, as long as nothing acknowledged is missing.
SCENARIOS = {
    "db-truncated-to-0": (lambda db: db.write_bytes(b""), "refuse"),
    "db-deleted": (lambda db: db.unlink(), "refuse"),
    "db-and-wal-deleted": (_all(lambda db: db.unlink(), _rm("-wal")), "refuse"),
    # Page 1 is in the log after the crash: the file's header is not read, nothing lost.
    "db-garbage-header": (_db_header, "lost?"),
    "db-garbage-header-log-folded": (_all(_fold_log, _db_header), "refuse"),
    "db-truncated-to-0-log-folded": (_all(_fold_log, lambda db: db.write_bytes(b"")),
                                     "refuse"),
    "wal-deleted": (_rm("-wal"), "lost?"),
    "wal-cut-in-half": (_cut_log, "refuse"),
    "wal-cut-in-half-acked-deleted": (_all(_cut_log, _rm("-acked")), "refuse"),
    "wal-garbled-acked-deleted": (_all(_garble_log, _rm("-acked")), "refuse"),
    "wal-cut-in-half-shm-deleted": (_all(_cut_log, _rm("-shm")), "lost?"),
    "acked-deleted": (_rm("-acked"), "recover"),
    "acked-garbage": (_garbage("-acked"), "recover"),
    "acked-digit-changed": (_acked_digit, "recover"),
    "shm-deleted": (_rm("-shm"), "recover"),
    "shm-garbage": (_garbage("-shm"), "recover"),
}


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir())}


def _serve(db: Path) -> subprocess.CompletedProcess[str]:
    return serve_refused(*ARGS, "--state-db", str(db))


def _check(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", "journal", "check", str(db)],
                          capture_output=True, text=True, timeout=60)


def _plain_sqlite_misses(db: Path, acked: set[int], scratch: Path) -> bool:
    """Whether SQLite itself, on a copy of the damaged files, misses an acknowledged job
    (what a daemon that trusted it would serve)."""
    scratch.mkdir()
    for p in db.parent.iterdir():
        shutil.copy(p, scratch / p.name)
    try:
        conn = sqlite3.connect(scratch / NAME)
        ids = {int(i) for (i,) in conn.execute(
            "SELECT json_extract(body, '$.id') FROM stimuli WHERE kind = 'submit' "
            "UNION SELECT job_id FROM finished")}
        conn.close()
    except sqlite3.DatabaseError:
        return True
    return not acked <= ids


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_damaged_journal_recovers_every_acknowledged_job_or_refuses_untouched(
        crashed: tuple[Path, set[int]], tmp_path: Path, scenario: str) -> None:
    pristine, acked = crashed
    folder = tmp_path / "j"
    shutil.copytree(pristine.parent, folder)
    db = folder / NAME
    damage, expect = SCENARIOS[scenario]
    damage(db)
    if expect == "lost?":
        expect = ("refuse" if _plain_sqlite_misses(db, acked, tmp_path / "scratch")
                  else "either")
    before = _files(folder)

    check = _check(db)
    assert _files(folder) == before, "`schedd journal check` changed a file"
    if expect == "recover":
        assert check.returncode == 0, check.stdout + check.stderr
        with DaemonProc(*ARGS, "--state-db", str(db)) as d:
            jobs = all_jobs(d.stub())
        missing = acked - set(jobs)
        assert not missing, f"{len(missing)} acknowledged jobs lost, e.g. {sorted(missing)[:5]}"
        return

    if expect == "either":
        try:
            with DaemonProc(*ARGS, "--state-db", str(db)) as d:
                jobs = all_jobs(d.stub())
        except RuntimeError:  # it did not start: a refusal, looked at below
            pass
        else:
            assert acked <= set(jobs)
            return
    proc = _serve(db)
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("schedd: error: "), proc.stderr
    assert str(db) in lines[0] and "nothing was changed" in lines[0]
    assert _files(folder) == before, "a refused start changed or left a file"
    # `schedd journal check` reports the same finding (exit 1).
    finding = lines[0].split(" is damaged: ", 1)[-1].split("; nothing was changed")[0]
    assert check.returncode == 1, check.stdout
    assert finding in check.stdout, (finding, check.stdout)


def test_a_new_journal_is_made_only_where_nothing_was(tmp_path: Path) -> None:
    db = tmp_path / NAME
    with DaemonProc(*ARGS, "--state-db", str(db)) as d:
        d.stub().SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=1, walltime=60), timeout=10)
    assert db.stat().st_size > 0 and Path(f"{db}-acked").exists()
    # Only the mark of an earlier journal left: not a place for a new one.
    db.unlink()
    before = _files(tmp_path)
    proc = _serve(db)
    assert proc.returncode == 2 and "-acked remain from an earlier journal" in proc.stderr
    assert _files(tmp_path) == before
    Path(f"{db}-acked").unlink()  # nothing left: a new journal
    with DaemonProc(*ARGS, "--state-db", str(db)) as d:
        assert all_jobs(d.stub()) == {}


def test_a_start_that_fails_on_its_metrics_port_creates_no_journal(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
             "--metrics-port", str(port), *ARGS, "--state-db", str(tmp_path / NAME)],
            capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"cannot serve metrics on 127.0.0.1:{port}" in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no journal, no side file, no lock file
