"""Journal integrity on real SQLite files written by a real `schedd serve`: damaged files
are refused at start with one sentence naming the file (exit 2, nothing changed), `schedd
journal check|export|compact`, quarantine of entries the engine rejects, and a full disk
that fails requests with UNAVAILABLE instead of acknowledging them."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from daemon_proc import DaemonProc

from schedd.v1 import scheduler_pb2 as pb

ARGS = ("--clock", "lockstep", "--cluster", "nodes:16", "--policy", "easy")


def _submit(stub, i: int) -> pb.SubmitJobResponse:
    return stub.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=1 + i % 4, walltime=200,
                                              runtime=100 + i, submit_time=float(i),
                                              request_id=f"r{i}"), timeout=10)


def _make_journal(db: Path, jobs: int = 12, kill: bool = False) -> list[tuple]:
    """A journal with `jobs` submissions, some finished; returns the jobs as listed."""
    with DaemonProc(*ARGS, "--state-db", str(db)) as d:
        s = d.stub()
        for i in range(1, jobs + 1):
            _submit(s, i)
        s.AdvanceClock(pb.AdvanceClockRequest(to=250), timeout=10)
        listed = [(j.job_id, j.state, j.end_time) for j in
                  s.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5).jobs]
        if kill:
            d.kill()
    return listed


def _serve(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
                           "--metrics-port", "0", *ARGS, "--state-db", str(db)],
                          capture_output=True, text=True, timeout=60)


def _journal(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", "journal", *args],
                          capture_output=True, text=True, timeout=60)


def _digest(*paths: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else "" for p in paths]


def test_check_export_compact_on_a_sound_journal(tmp_path: Path) -> None:
    db = tmp_path / "j.sqlite"
    listed = _make_journal(db)
    check = _journal("check", str(db))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok (12 stimuli, last sequence number 12, acknowledged up to 12" in check.stdout
    finished = sum(1 for _, state, _ in listed if state == pb.JOB_STATE_COMPLETED)
    assert finished > 0 and f"{finished} finished jobs stored" in check.stdout

    out = tmp_path / "export.jsonl"
    assert _journal("export", str(db), "-o", str(out)).returncode == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    stimuli = [r for r in rows if r["table"] == "stimuli"]
    assert [r["seq"] for r in stimuli] == list(range(1, 13))
    assert [r["body"]["id"] for r in stimuli] == list(range(1, 13))
    assert {r["request_id"] for r in stimuli} == {f"operator/r{i}" for i in range(1, 13)}
    assert sum(r["table"] == "finished" for r in rows) == finished
    assert _journal("export", str(db)).stdout.splitlines() == out.read_text().splitlines()

    compact = _journal("compact", str(db))
    assert compact.returncode == 0, compact.stderr
    assert "compacted" in compact.stdout and "12 stimuli kept" in compact.stdout
    assert _journal("check", str(db)).returncode == 0
    with DaemonProc(*ARGS, "--state-db", str(db)) as d:  # still the same state
        got = [(j.job_id, j.state, j.end_time) for j in
               d.stub().ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5).jobs]
    assert got == listed


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    proc = _journal("check", str(tmp_path / "nope.sqlite"))
    assert proc.returncode == 1 and "no such file" in proc.stdout
    assert _journal("export", str(tmp_path / "nope.sqlite")).returncode == 2


@pytest.mark.parametrize("damage", ["page", "record"])
def test_corrupt_file_is_refused_with_one_line_and_left_alone(tmp_path: Path,
                                                              damage: str) -> None:
    db = tmp_path / "j.sqlite"
    _make_journal(db, jobs=40)
    with sqlite3.connect(db) as conn:  # fold the WAL in: the damage goes into the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'stimuli'"
                            ).fetchone()[0]
    data = bytearray(db.read_bytes())
    page = 4096
    if damage == "page":  # the b-tree header of the stimuli table's root page
        data[(root - 1) * page:(root - 1) * page + 12] = b"\xa5" * 12
    else:  # one digit inside a journalled request: SQLite itself sees nothing wrong
        found = re.search(rb'"walltime": ?200', data)  # json.dumps or orjson spacing
        assert found is not None
        at = found.end() - 3  # 200 -> 900
        data[at:at + 1] = b"9"
    db.write_bytes(bytes(data))
    before = _digest(db, Path(f"{db}-wal"))
    proc = _serve(db)
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(error) == 1 and str(db) in error[0] and "damaged" in error[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert _digest(db, Path(f"{db}-wal")) == before  # nothing overwritten
    check = _journal("check", str(db))
    assert check.returncode == 1 and str(db) in check.stdout


@pytest.mark.parametrize("damage", ["truncate", "garble"])
def test_damaged_wal_is_refused_not_silently_shortened(tmp_path: Path, damage: str) -> None:
    db = tmp_path / "j.sqlite"
    _make_journal(db, jobs=30, kill=True)  # kill -9: the WAL is not folded in
    wal = Path(f"{db}-wal")
    size = wal.stat().st_size
    assert size > 4 * 4120  # several frames of 4 KiB pages
    data = bytearray(wal.read_bytes())
    if damage == "truncate":
        wal.write_bytes(bytes(data[:size // 2]))
    else:
        data[size // 2:size // 2 + 2000] = b"\x00garbage" * 250
        wal.write_bytes(bytes(data))
    before = _digest(db, wal)
    proc = _serve(db)
    assert proc.returncode == 2, proc.stderr
    assert str(db) in proc.stderr and "acknowledged requests" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert _digest(db, wal) == before
    check = _journal("check", str(db))
    assert check.returncode == 1 and "missing" in check.stdout


def test_poisoned_entries_are_quarantined_and_recovery_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "j.sqlite"
    listed = _make_journal(db)
    with sqlite3.connect(db) as conn:
        engine_time = conn.execute("SELECT engine_time FROM progress").fetchone()[0]
        good = json.loads(conn.execute("SELECT body FROM stimuli WHERE seq = 1").fetchone()[0])
        # Raises in the engine while running (checkpoint cost overflows at its start)...
        poison = {**good, "id": 100, "ckpt_gb_per_node": 1e308, "ckpt_interval": 5e-324,
                  "submit": engine_time}
        # ... and one that cannot even be read back as a stimulus.
        rows = [(13, "submit", json.dumps(poison), engine_time),
                (14, "cancel", "{not json", engine_time)]
        conn.executemany("INSERT INTO stimuli (seq, kind, request_id, owner, body, response, "
                         "accepted_wall, applied_at) VALUES (?, ?, NULL, '', ?, '{}', 0, ?)",
                         rows)
    with DaemonProc(*ARGS, "--state-db", str(db)) as d:
        s = d.stub()
        got = [(j.job_id, j.state, j.end_time) for j in
               s.ListJobs(pb.ListJobsRequest(page_size=1000), timeout=5).jobs]
        assert got == listed  # every good job recovered, the poisoned one left out
        _submit(s, 50)  # and it serves
        log = d.log()
    assert "journal entry quarantined" in log and "OverflowError" in log
    check = _journal("check", str(db))
    assert check.returncode == 0, check.stdout
    assert "quarantined stimulus 13 (submit): OverflowError" in check.stdout
    assert "quarantined stimulus 14 (cancel): unreadable stimulus" in check.stdout
    assert "2 quarantined" in check.stdout


def _mount_tiny_tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True)
    return proc.returncode == 0


def test_full_disk_fails_requests_with_unavailable_and_acknowledges_only_what_is_stored(
        tmp_path: Path) -> None:
    mnt = tmp_path / "tiny"
    if not _mount_tiny_tmpfs(mnt, "192k"):
        pytest.skip("needs permission to mount a small tmpfs")
    try:
        db = mnt / "j.sqlite"
        acknowledged: list[int] = []
        refusal = None
        with DaemonProc(*ARGS, "--state-db", str(db)) as d:
            s = d.stub()
            for i in range(1, 3000):
                try:
                    s.SubmitJob(pb.SubmitJobRequest(
                        job_id=i, nodes=1, walltime=200, runtime=100, submit_time=1.0,
                        request_id=f"padding-{i:05d}-" + "x" * 100), timeout=10)
                except grpc.RpcError as err:
                    refusal = err
                    break
                acknowledged.append(i)
            assert refusal is not None, "the disk never filled"
            assert refusal.code() == grpc.StatusCode.UNAVAILABLE
            assert "could not be written" in refusal.details()
            assert "rollback" not in refusal.details()
            # Still serving reads; a retry keeps failing the same way, never acknowledged.
            assert s.GetClock(pb.GetClockRequest(), timeout=5).mode == "lockstep"
            with pytest.raises(grpc.RpcError) as again:
                s.SubmitJob(pb.SubmitJobRequest(job_id=5000, nodes=1, walltime=200,
                                                runtime=100, submit_time=1.0), timeout=10)
            assert again.value.code() == grpc.StatusCode.UNAVAILABLE
            d.kill()
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        stored = [json.loads(b)["id"] for (b,) in
                  conn.execute("SELECT body FROM stimuli ORDER BY seq")]
        conn.close()
        assert stored == acknowledged  # all acknowledged ones, nothing else
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)


def _all_jobs(stub) -> list[tuple]:  # noqa: ANN001
    jobs, token = [], ""
    while True:
        page = stub.ListJobs(pb.ListJobsRequest(page_size=300, page_token=token), timeout=10)
        jobs += [(j.job_id, j.state, j.first_start, j.end_time, j.executed) for j in page.jobs]
        token = page.next_page_token
        if not token:
            return jobs


def _results(stub) -> dict[str, list[float]]:  # noqa: ANN001
    columns: dict[str, list[float]] = {}
    for chunk in stub.GetResults(pb.GetResultsRequest(), timeout=30):
        for col in chunk.columns:
            columns.setdefault(col.name, []).extend(col.values)
    return columns


def test_snapshots_compact_the_journal_and_recovery_from_one_is_exact(
        tmp_path: Path) -> None:
    """A lockstep replay of 1,000 jobs with a snapshot every 100 stimuli: the journal
    keeps the snapshot and the tail only; after kill -9 the restart starts from the
    snapshot and shows every job and every result row as before; finished jobs (no longer
    in memory) are still served, their ids stay taken, their request ids still answer."""
    db = tmp_path / "j.sqlite"
    args = ("--clock", "lockstep", "--cluster", "nodes:256", "--policy", "easy",
            "--state-db", str(db))
    env = {"SCHEDD_SNAPSHOT_EVERY": "100"}
    with DaemonProc(*args, env=env) as d:
        proc = subprocess.run(
            [sys.executable, "-m", "schedd_clients.replay", "--out", str(tmp_path / "r"),
             "--server", d.address, "--no-progress", "--lockstep", "--limit", "1000",
             "--no-compare"], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        s = d.stub()
        before, results = _all_jobs(s), _results(s)
        assert "snapshot stored, journal compacted" in d.log()
        d.kill()
    assert len(before) == 1000 and len(results["id"]) == 1000
    check = _journal("check", str(db))
    assert check.returncode == 0, check.stdout
    assert "ok (1 stimuli, last sequence number 1000" in check.stdout
    export = _journal("export", str(db))
    assert export.returncode == 0, export.stderr
    tables = [json.loads(line)["table"] for line in export.stdout.splitlines()]
    assert tables.count("snapshot") == 1 and tables.count("results") == 1000
    assert tables.count("finished") == 1000 and tables.count("stimuli") == 1
    with DaemonProc(*args, env=env) as d:
        s = d.stub()
        assert '"stimuli": 1,' in d.log()  # the tail after the snapshot, not the history
        assert _all_jobs(s) == before
        assert _results(s) == results
        first = s.GetJob(pb.GetJobRequest(job_id=before[0][0]), timeout=5)
        assert first.state == pb.JOB_STATE_COMPLETED
        with pytest.raises(grpc.RpcError) as taken:  # a finished job's id stays taken
            s.SubmitJob(pb.SubmitJobRequest(job_id=before[0][0], nodes=1, walltime=10,
                                            runtime=5), timeout=5)
        assert taken.value.code() in (grpc.StatusCode.ALREADY_EXISTS,
                                      grpc.StatusCode.INVALID_ARGUMENT)
        done = s.ListJobs(pb.ListJobsRequest(states=[pb.JOB_STATE_COMPLETED], page_size=7),
                          timeout=5)
        assert done.total == 1000 and len(done.jobs) == 7 and done.next_page_token
        assert s.GetCluster(pb.GetClusterRequest(), timeout=5).finished == 1000


def test_retry_of_a_request_compacted_away_is_answered_not_applied(tmp_path: Path) -> None:
    db = tmp_path / "j.sqlite"
    env = {"SCHEDD_SNAPSHOT_EVERY": "4"}
    with DaemonProc(*ARGS, "--state-db", str(db), env=env) as d:
        s = d.stub()
        for i in range(1, 13):
            _submit(s, i)
            s.AdvanceClock(pb.AdvanceClockRequest(to=float(i)), timeout=10)
        d.kill()
    with sqlite3.connect(db) as conn:
        kept = conn.execute("SELECT COUNT(*) FROM stimuli").fetchone()[0]
    assert kept < 12  # compacted: r3's stimulus is gone from the stimuli table
    with DaemonProc(*ARGS, "--state-db", str(db), env=env) as d:
        again = _submit(d.stub(), 3)
        assert again.duplicate and again.job_id == 3
        assert d.stub().ListJobs(pb.ListJobsRequest(page_size=100), timeout=5).total == 12


def test_by_default_a_snapshot_waits_for_as_many_stimuli_as_there_are_live_jobs(
        tmp_path: Path) -> None:
    """A snapshot's cost grows with the live jobs; by default the next one is due after
    max(5,000, live jobs) applied stimuli, so its cost per stimulus stays bounded. Three
    streams of 6,000 jobs that all stay queued: a snapshot after the first (6,000 applied,
    6,000 live), none after the second (6,001 applied since, 12,000 live) or the third
    (12,002 applied since, 18,000 live). A fixed SCHEDD_SNAPSHOT_EVERY=5000 takes one after
    each."""
    def snapshots_after_streams(env: dict[str, str]) -> list[int]:
        counts = []
        with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--policy", "easy",
                        "--state-db", str(tmp_path / f"j{len(env)}.sqlite"), env=env) as d:
            s = d.stub()
            for k in range(1, 4):
                jobs = [pb.SubmitJobRequest(nodes=64, walltime=1e7) for _ in range(6000)]
                s.SubmitJobs(iter([pb.SubmitJobsRequest(jobs=jobs)]), timeout=120)

                # Answered after the iteration that applies it, and a snapshot that
                # iteration makes due is stored before then.
                s.AdvanceClock(pb.AdvanceClockRequest(by=1), timeout=120)
                info = s.GetCluster(pb.GetClusterRequest(), timeout=10)
                assert sum(c.jobs for c in info.queue_by_class) + \
                    sum(c.jobs for c in info.running_by_class) == 6000 * k
                counts.append(d.log().count("snapshot stored, journal compacted"))
        return counts

    scaled = snapshots_after_streams({})
    fixed = snapshots_after_streams({"SCHEDD_SNAPSHOT_EVERY": "5000"})
    assert scaled == [1, 1, 1]
    assert fixed == [1, 2, 3]
