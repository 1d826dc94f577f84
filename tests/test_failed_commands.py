"""A command that fails creates nothing (issue 34, item 8): run as a user would, in a
subprocess, each command that writes a folder or a file fails after it has looked at its
output path, and the file system is compared afterwards: no new folder or file, no hidden
leftover, and whatever was there before byte-identical."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from daemon_proc import DaemonProc

from schedd.v1 import scheduler_pb2 as pb

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "schedd" / "data" / "sample-lublin256-1000.swf")
EXPLODE = str(ROOT / "tests" / "plugins" / "failing_policy.py")
SERVE = ("--clock", "accelerated", "--speedup", "2000", "--cluster", "nodes:64",
         "--policy", "easy", "--tick", "0.05")


def run(*argv: str, cwd: Path, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def tree(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder` (hidden ones too), files by their hash."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        found[name] = (hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file()
                       else "folder")
    return found


def bad_trace(folder: Path) -> Path:
    trace = folder / "bad.swf"
    trace.write_text("1 0 -1 10 x\n")
    return trace


def test_a_failed_report_leaves_no_output_folder(tmp_path: Path) -> None:
    before = tree(tmp_path)
    proc = run("schedd", "report", "no-such-run", "-o", "new/report", cwd=tmp_path)
    assert proc.returncode == 2 and "not a run directory" in proc.stderr
    assert tree(tmp_path) == before
    proc = run("schedd", "report", "--sweep", "no-such.csv", "-o", "report", cwd=tmp_path)
    assert proc.returncode == 2 and "no such sweep table" in proc.stderr
    assert tree(tmp_path) == before


def test_a_failed_report_leaves_an_earlier_report_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "index.html").write_text("an earlier report\n")
    before = tree(tmp_path)
    proc = run("schedd", "report", "no-such-run", "-o", "report", cwd=tmp_path)
    assert proc.returncode == 2
    assert tree(tmp_path) == before


def test_a_simulation_that_fails_midway_creates_no_folder_and_spoils_no_earlier_run(
        tmp_path: Path) -> None:
    explode = ("schedd", "simulate", "--plugin", EXPLODE, "--policy", "explode",
               "--no-progress")
    proc = run(*explode, "--out", "new/run", cwd=tmp_path)
    assert proc.returncode == 1 and "explode: a job of 7 nodes is waiting" in proc.stderr
    assert tree(tmp_path) == {}
    done = run("schedd", "simulate", "--quiet", "--limit", "200", "--out", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = tree(tmp_path)
    assert run(*explode, "--out", "run", cwd=tmp_path).returncode == 1
    assert tree(tmp_path) == before
    # and a run that succeeds into it replaces its files
    again = run("schedd", "simulate", "--quiet", "--policy", "fcfs", "--limit", "200",
                "--out", "run", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    after = tree(tmp_path)
    assert set(after) == set(before) and after["run/jobs.swf"] != before["run/jobs.swf"]


def test_failed_compare_workload_and_import_create_nothing(tmp_path: Path) -> None:
    trace = bad_trace(tmp_path)
    before = tree(tmp_path)
    proc = run("schedd", "compare", "--trace", str(trace), "--percent", "0", "--run",
               "easy", "--trials", "1", "--workers", "1", "--json", "c/figures.json",
               "--markdown", "c/tables.md", cwd=tmp_path)
    assert proc.returncode == 2 and "bad.swf:1:" in proc.stderr
    assert tree(tmp_path) == before  # neither out/compare-... nor c/
    proc = run("schedd", "workload", "accuracy", str(trace), "--alpha", "0",
               "-o", "w/exact.swf", cwd=tmp_path)
    assert proc.returncode == 2 and "bad.swf:1:" in proc.stderr
    assert tree(tmp_path) == before
    proc = run("schedd", "import", "slurm", str(trace), "-o", "i/mine.swf", cwd=tmp_path)
    assert proc.returncode == 2
    assert tree(tmp_path) == before


def test_a_sweep_without_its_scheduler_creates_nothing(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run("schedd", "sweep", "--trace", SAMPLE, "--run", "easy", "-o", "sweep/one",
               "--scheduler", f"tcp://127.0.0.1:{port}", "--no-progress", cwd=tmp_path,
               env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert proc.returncode == 2, proc.stderr
    assert f"cannot reach the Dask scheduler tcp://127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert tree(tmp_path) == {}


def test_results_from_no_daemon_create_no_folder(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run("schedd_clients.schedctl", "--server", f"127.0.0.1:{port}", "results",
               "-o", "new/results", cwd=tmp_path)
    assert proc.returncode == 1 and "cannot reach the schedd daemon" in proc.stderr
    assert tree(tmp_path) == {}


def test_a_serve_whose_grpc_port_is_taken_leaves_no_journal(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("schedd", "serve", "--listen", f"127.0.0.1:{port}", "--metrics-port", "0",
                   *SERVE, "--state-db", "journal.sqlite", cwd=tmp_path)
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert tree(tmp_path) == {}  # no journal, -wal, -shm, -acked or -lock


def test_a_serve_that_fails_leaves_an_earlier_journal_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "journal.sqlite"
    d = DaemonProc(*SERVE, "--state-db", str(db))
    d.stub().SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=1, walltime=60), timeout=10)
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(30) == 0
    before = tree(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("schedd", "serve", "--listen", "127.0.0.1:0", "--metrics-port", str(port),
                   *SERVE, "--state-db", str(db), cwd=tmp_path)
    assert proc.returncode == 2 and f"cannot serve metrics on 127.0.0.1:{port}" in proc.stderr
    after = tree(tmp_path)
    # The lock file names its last holder (docs/daemon.md): that start's pid now.
    assert after.keys() == before.keys()
    assert {k: v for k, v in after.items() if not k.endswith("-lock")} == \
        {k: v for k, v in before.items() if not k.endswith("-lock")}
