"""One daemon per journal (issue 34): a second `schedd serve` on a journal a live daemon
holds refuses at start in one line naming the file and the holder's pid (exit 2) instead
of serving and failing every write; `schedd journal check|export` may look at the live
journal, `compact` refuses it; kill -9 frees the lock for the next daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from daemon_proc import DaemonProc
from event_watch import all_jobs
from refused_start import serve_refused

from schedd.v1 import scheduler_pb2 as pb

ARGS = ("--clock", "lockstep", "--cluster", "nodes:16", "--policy", "easy")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=60)


def _submit(stub, job_id: int) -> None:  # noqa: ANN001
    stub.SubmitJob(pb.SubmitJobRequest(job_id=job_id, nodes=1, walltime=100, runtime=50),
                   timeout=10)


def test_a_second_daemon_on_a_held_journal_refuses_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "j.sqlite"
    first = DaemonProc(*ARGS, "--state-db", str(db))
    try:
        _submit(first.stub(), 1)
        second = serve_refused(*ARGS, "--state-db", str(db))
        assert second.returncode == 2, second.stderr[-3000:]
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert lines[0].startswith(f"schedd: error: the journal {db} is in use by process "
                                   f"{first.proc.pid}"), lines[0]
        assert "nothing was changed" in lines[0]
        # The first one goes on serving and writing, alone.
        _submit(first.stub(), 2)
        assert sorted(all_jobs(first.stub())) == [1, 2]

        check = _run("journal", "check", str(db))
        assert check.returncode == 0, check.stdout + check.stderr
        assert "ok (2 stimuli" in check.stdout and "held by a running daemon" in check.stdout
        export = _run("journal", "export", str(db))
        assert export.returncode == 0, export.stderr
        rows = [json.loads(line) for line in export.stdout.splitlines()]
        assert [r["body"]["id"] for r in rows if r["table"] == "stimuli"] == [1, 2]
        compact = _run("journal", "compact", str(db))
        assert compact.returncode == 2
        assert f"in use by process {first.proc.pid}" in compact.stderr
        assert "not compacted" in compact.stderr
        first.kill()  # kill -9: the kernel drops the lock with the process
    finally:
        first.stop()
    with DaemonProc(*ARGS, "--state-db", str(db)) as again:
        assert sorted(all_jobs(again.stub())) == [1, 2]
    compact = _run("journal", "compact", str(db))  # stopped: compact may run
    assert compact.returncode == 0, compact.stderr
