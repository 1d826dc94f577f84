"""schedd-ckpt-agent against a real broker and a tiny real gRPC server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import aiomqtt
import grpc
import grpc.aio
import pytest
from schedd_clients import ckpt_agent

from schedd.v1 import scheduler_pb2, scheduler_pb2_grpc

TIMEOUT = 4.0
REPO = Path(__file__).resolve().parents[1]


def run(coro: Coroutine[Any, Any, None]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(TIMEOUT):
            await coro

    asyncio.run(bounded())


class FakeScheduler(scheduler_pb2_grpc.SchedulerServicer):
    """Only CheckpointDone; records calls with their wall time and metadata."""

    def __init__(self, codes: list[grpc.StatusCode] | None = None):
        self.calls: list[tuple[float, scheduler_pb2.CheckpointDoneRequest, dict[str, str]]] = []
        self.codes = list(codes or [])  # error codes to answer with first, in order
        self.got = asyncio.Event()

    async def CheckpointDone(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.calls.append((time.monotonic(), request, dict(context.invocation_metadata())))
        self.got.set()
        if self.codes:
            await context.abort(self.codes.pop(0), "scripted error")
        return scheduler_pb2.CheckpointDoneResponse(stimulus_id=len(self.calls))


async def serve(servicer: FakeScheduler) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    scheduler_pb2_grpc.add_SchedulerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


def args_for(mqtt: tuple[str, int], cluster: str, port: int, *extra: str) -> Any:
    return ckpt_agent.build_parser().parse_args(
        ["--mqtt", f"{mqtt[0]}:{mqtt[1]}", "--cluster", cluster,
         "--server", f"127.0.0.1:{port}", *extra])


def checkpoint(cluster: str, job_id: int, t: float, deadline: float) -> bytes:
    return json.dumps({"command": "checkpoint", "job_id": job_id, "time": t,
                       "deadline": deadline, "nodes": 512, "cluster": cluster},
                      separators=(",", ":"), sort_keys=True).encode()


async def publish(mqtt: tuple[str, int], topic: str, payload: bytes) -> float:
    async with aiomqtt.Client(*mqtt, identifier=f"test-{uuid.uuid4().hex[:8]}") as client:
        sent = time.monotonic()
        await client.publish(topic, payload, qos=1)
    return sent


def test_answers_checkpoint_after_modelled_delay(mqtt_broker: tuple[str, int]) -> None:
    cluster = f"c-{uuid.uuid4().hex[:10]}"

    async def main() -> None:
        fake = FakeScheduler()
        server, port = await serve(fake)
        # Modelled delay: (3650 - 3600) / 100 = 0.5 wall seconds.
        args = args_for(mqtt_broker, cluster, port, "--speedup", "100", "--token", "s3cret",
                        "--once")
        ready = asyncio.Event()
        agent = asyncio.create_task(ckpt_agent.run(args, ready))
        await ready.wait()
        prefix = f"schedd/{cluster}/jobs"
        # Not checkpoints: ignored.
        await publish(mqtt_broker, f"{prefix}/8/control", b'{"command":"warning","job_id":8,'
                      b'"time":1.0,"deadline":-1}')
        await publish(mqtt_broker, f"{prefix}/8/control", b"not json")
        sent = await publish(mqtt_broker, f"{prefix}/7/control",
                             checkpoint(cluster, 7, 3600.0, 3650.0))
        assert await agent == 0  # --once: returns after the answer
        await server.stop(None)
        [(at, request, metadata)] = fake.calls
        assert request.job_id == 7 and request.request_id == "ckpt-7-3600.0"
        assert metadata["authorization"] == "Bearer s3cret"
        assert at - sent >= 0.45  # not before the modelled delay (upper bound: TIMEOUT)

    run(main())


def test_retries_unavailable_and_drops_failed_precondition(
        mqtt_broker: tuple[str, int]) -> None:
    cluster = f"c-{uuid.uuid4().hex[:10]}"

    async def main() -> None:
        fake = FakeScheduler([grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.FAILED_PRECONDITION])
        server, port = await serve(fake)
        args = args_for(mqtt_broker, cluster, port, "--delay", "0", "--once")
        ready = asyncio.Event()
        agent = asyncio.create_task(ckpt_agent.run(args, ready))
        await ready.wait()
        await publish(mqtt_broker, f"schedd/{cluster}/jobs/9/control",
                      checkpoint(cluster, 9, 10.0, -1))
        assert await agent == 0
        await server.stop(None)
        # UNAVAILABLE was retried with the same request id; FAILED_PRECONDITION ended it.
        assert [c[1].request_id for c in fake.calls] == ["ckpt-9-10.0"] * 2

    run(main())


def test_ignore_all_answers_nothing(mqtt_broker: tuple[str, int]) -> None:
    cluster = f"c-{uuid.uuid4().hex[:10]}"

    async def main() -> None:
        fake = FakeScheduler()
        server, port = await serve(fake)
        args = args_for(mqtt_broker, cluster, port, "--delay", "0", "--ignore", "1.0")
        ready = asyncio.Event()
        agent = asyncio.create_task(ckpt_agent.run(args, ready))
        await ready.wait()
        for job_id in range(1, 6):
            await publish(mqtt_broker, f"schedd/{cluster}/jobs/{job_id}/control",
                          checkpoint(cluster, job_id, 100.0, 100.0))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(fake.got.wait(), 0.5)
        agent.cancel()
        await asyncio.wait([agent])
        await server.stop(None)
        assert fake.calls == []

    run(main())


def test_console_script_once(mqtt_broker: tuple[str, int]) -> None:
    """The real command line, as a subprocess, with JSON logs."""
    cluster = f"c-{uuid.uuid4().hex[:10]}"

    async def main() -> None:
        fake = FakeScheduler()
        server, port = await serve(fake)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "schedd_clients.ckpt_agent", "--mqtt",
            f"{mqtt_broker[0]}:{mqtt_broker[1]}", "--cluster", cluster, "--server",
            f"127.0.0.1:{port}", "--delay", "0", "--once", "--log-format", "json",
            cwd=REPO, stderr=subprocess.PIPE)
        try:
            assert proc.stderr is not None
            # Wait for the subscription before publishing (no retained messages).
            while b"mqtt connected" not in await proc.stderr.readline():
                pass
            await publish(mqtt_broker, f"schedd/{cluster}/jobs/3/control",
                          checkpoint(cluster, 3, 5.0, 6.0))
            rest = await proc.stderr.read()
            assert await proc.wait() == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await server.stop(None)
        assert [c[1].job_id for c in fake.calls] == [3]
        lines = [json.loads(line) for line in rest.splitlines() if line.startswith(b"{")]
        answered = [e for e in lines if e["event"] == "checkpoint answered"]
        assert answered and answered[0]["job_id"] == 3

    run(main())


def test_help_and_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        ckpt_agent.main(["--help"])
    assert info.value.code == 0
    assert "CheckpointDone" in capsys.readouterr().out
    for bad in (["--cluster", "x", "--mqtt", "nohost"], ["--cluster", "x", "--ignore", "2"],
                ["--cluster", "x", "--delay", "1", "--speedup", "2"], []):
        with pytest.raises(SystemExit) as info:
            ckpt_agent.main(bad)
        assert info.value.code == 2
