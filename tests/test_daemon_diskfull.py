"""A full disk under the journal (a real one: a small tmpfs, mounted as root): while the
journal cannot be written the daemon says NOT_SERVING on gRPC health (its engine cannot
move on and nothing can be acknowledged), and SERVING again once a write succeeds, found
by its own probe write when no request comes (issue 34). Without the permission to mount,
the test is skipped: it says so, and no emulated error stands in for the disk."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from daemon_proc import DaemonProc, wait_until
from event_watch import all_jobs
from grpc_health.v1 import health_pb2, health_pb2_grpc

from schedd.v1 import scheduler_pb2 as pb

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@contextlib.contextmanager
def _tiny_disk(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                            str(path)], capture_output=True, text=True)
    if mount.returncode != 0:
        pytest.skip(f"needs permission to mount a small tmpfs ({mount.stderr.strip()})")
    try:
        yield path
    finally:
        for _ in range(50):
            if subprocess.run(["umount", str(path)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)


def _fill(folder: Path) -> Path:
    """Take every free byte of the file system with one file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):  # ENOSPC: full
            while os.write(fd, b"\0" * 4096):
                pass
    finally:
        os.close(fd)
    return filler


def _health(channel: grpc.Channel, service: str = "") -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)


@pytest.mark.parametrize("clock", ["lockstep", "accelerated"])
def test_health_is_not_serving_while_the_journal_cannot_be_written(tmp_path: Path,
                                                                    clock: str) -> None:
    args = ("--clock", clock, "--speedup", "100", "--cluster", "nodes:16", "--tick", "0.1")
    with _tiny_disk(tmp_path / "tiny", "1m") as disk:
        d = DaemonProc(*args, "--state-db", str(disk / "j.sqlite"))
        try:
            s, channel = d.stub(), d.channel()
            assert _health(channel) == SERVING
            acknowledged = []
            for i in range(1, 6):
                s.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=1, walltime=1000,
                                                runtime=500), timeout=10)
                acknowledged.append(i)
            filler = _fill(disk)
            refusal = None
            for i in range(6, 3000):
                try:
                    s.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=1, walltime=1000,
                                                    runtime=500,
                                                    request_id=f"pad-{i}-" + "x" * 100),
                                timeout=10)
                except grpc.RpcError as err:
                    refusal = err
                    break
                acknowledged.append(i)
            assert refusal is not None, "the disk never filled"
            assert refusal.code() == grpc.StatusCode.UNAVAILABLE, refusal
            wait_until("health NOT_SERVING", lambda: _health(channel) == NOT_SERVING,
                       timeout=10)
            assert _health(channel, "schedd.v1.Scheduler") == NOT_SERVING
            # Still full: a request still fails, and health still says so; reads answer.
            with pytest.raises(grpc.RpcError) as again:
                s.SubmitJob(pb.SubmitJobRequest(job_id=5000, nodes=1, walltime=10),
                            timeout=10)
            assert again.value.code() == grpc.StatusCode.UNAVAILABLE
            assert _health(channel) == NOT_SERVING
            assert s.GetClock(pb.GetClockRequest(), timeout=5).mode == clock

            filler.unlink()  # room again: no request comes, the probe finds out
            wait_until("health SERVING again", lambda: _health(channel) == SERVING,
                       timeout=10)
            assert _health(channel, "schedd.v1.Scheduler") == SERVING
            s.SubmitJob(pb.SubmitJobRequest(job_id=5001, nodes=1, walltime=10), timeout=10)
            assert set(acknowledged) | {5001} <= set(all_jobs(s))
            assert "the journal cannot be written; health NOT_SERVING" in d.log()
            assert "the journal is writable again; health SERVING" in d.log()
        finally:
            d.stop()
