"""Run `schedd serve` as a real subprocess for integration and end-to-end tests."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc as pb_grpc

SERVING = re.compile(r"schedd: serving \S+ on ([\d.]+):(\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DaemonProc:
    """`schedd serve ARGS` on a free port; `.port`, `.stub()`, `.log()`, `.kill()`."""

    def __init__(self, *args: str, metrics: bool = False, env: dict[str, str] | None = None,
                 timeout: float = 20.0):
        self.metrics_port = free_port() if metrics else 0
        cmd = [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
               "--metrics-port", str(self.metrics_port), "--log-format", "json", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env={**os.environ, **(env or {})})
        self._lines: list[str] = []
        self._ready = threading.Event()
        self.port = 0
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("schedd serve did not start:\n" + self.log())

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.append(line)
            m = SERVING.search(line)
            if m and not self._ready.is_set():
                self.port = int(m.group(2))
                self._ready.set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        return "".join(self._lines)

    def channel(self) -> grpc.Channel:
        # A private subchannel: by default channels of one process to one address share
        # one, and a channel that saw the previous daemon on this port die holds it in
        # reconnect backoff, so an RPC to the restarted daemon failed fast with
        # "Connection refused" although it was serving.
        return grpc.insecure_channel(self.address,
                                     options=[("grpc.use_local_subchannel_pool", 1)])

    def stub(self) -> pb_grpc.SchedulerStub:
        return pb_grpc.SchedulerStub(self.channel())

    def kill(self) -> None:
        """kill -9: no chance to clean up."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def __enter__(self) -> DaemonProc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_with_env(journal: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`schedd serve` on `journal` with `env` added, for settings that stop the start: it
    is expected to exit (status and stderr in the result), not to serve."""
    return subprocess.run([sys.executable, "-m", "schedd", "serve", "--listen",
                           "127.0.0.1:0", "--metrics-port", "0", "--state-db", str(journal)],
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=60)


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def read_events(stub, request: pb.WatchEventsRequest, n: int,
                timeout: float = 3.0) -> list[pb.Event]:
    """Up to n events of the stream (fewer if the deadline comes first), then cancel."""
    call = stub.WatchEvents(request, timeout=timeout)
    events: list[pb.Event] = []
    try:
        for event in call:
            events.append(event)
            if len(events) >= n:
                break
    except grpc.RpcError as err:
        assert err.code() in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED), err
    finally:
        call.cancel()
    return events


def wait_until(what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """`check()` once it is truthy; fails naming `what` after `timeout` seconds (a
    deadline to fail by, not a timing that is asserted)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def noticed_job_ids(d: DaemonProc, token: str) -> list[int]:
    """Job ids of the daemon's `notice` events so far, as the holder of `token` sees
    them (the stream is read until its 1-s deadline)."""
    call = d.stub().WatchEvents(pb.WatchEventsRequest(from_seq=1, kinds=["notice"]),
                                timeout=1.0,
                                metadata=(("authorization", f"Bearer {token}"),))
    seen: list[int] = []
    try:
        for e in call:
            seen.append(e.job_id)
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED, err
    return seen


def metric_value(d: DaemonProc, name: str, **labels: str) -> float:
    """One sample of the daemon's /metrics (labels exactly as given)."""
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics",
                                  timeout=5).read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}} ") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name}{labels} not exported")


def rss_kb(pid: int) -> int:
    """A process's resident set, KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")
