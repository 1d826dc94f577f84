"""The daemon against a real MQTT broker: events and job-control topics, JIT checkpoints
answered by an external agent (or timed out), notices from instruments, broker outage."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import aiomqtt
import pytest
from daemon_proc import DaemonProc, wait_until

from schedd.v1 import scheduler_pb2 as pb

PLUGIN = str(Path(__file__).parent / "plugins" / "preempting.py")


def _metric(d: DaemonProc, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics").read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class AgentProc:
    """`schedd-ckpt-agent ARGS` as a subprocess; `.subscribed()` waits for its MQTT
    subscription (its session is clean: a control command published before it
    subscribed is not delivered to it), `.said()` is its log so far."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "schedd_clients.ckpt_agent",
                                      *args], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self._lines: list[str] = []
        self._subscribed = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.append(line)
            if "mqtt connected" in line:  # logged once subscribed
                self._subscribed.set()

    def said(self) -> str:
        return "".join(self._lines)

    def subscribed(self, timeout: float = 20.0) -> None:
        assert self._subscribed.wait(timeout), f"the agent did not subscribe:\n{self.said()}"

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(5)


def _collect(host: str, port: int, topic: str, action, seconds: float = 3.0,  # noqa: ANN001
             until: int = 0) -> list[tuple[str, dict, int]]:
    """Subscribe, run `action()` in a thread, collect (topic, payload, qos) messages."""

    async def main() -> list[tuple[str, dict, int]]:
        got: list[tuple[str, dict, int]] = []
        async with aiomqtt.Client(host, port, identifier=f"t-{uuid.uuid4().hex[:8]}") as c:
            await c.subscribe(topic, qos=1)
            task = asyncio.create_task(asyncio.to_thread(action))

            async def read() -> None:
                async for m in c.messages:
                    got.append((str(m.topic), json.loads(m.payload), m.qos))
                    if until and len(got) >= until:
                        return

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(read(), seconds)
            await task
        return got

    return asyncio.run(main())


def _preempt_batch_for_realtime(s) -> None:  # noqa: ANN001
    """Batch job 1 fills the 8 nodes; real-time job 2 arrives at 100 and makes it
    checkpoint (rt-jit-toy); at 101 job 1 is still writing its checkpoint."""
    s.SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=8, walltime=10_000, runtime=5000))
    s.AdvanceClock(pb.AdvanceClockRequest(to=100))
    s.SubmitJob(pb.SubmitJobRequest(job_id=2, nodes=8, walltime=100, runtime=50,
                                    job_class=pb.JOB_CLASS_REALTIME))
    s.AdvanceClock(pb.AdvanceClockRequest(to=101))
    assert s.GetJob(pb.GetJobRequest(job_id=1)).state == pb.JOB_STATE_CHECKPOINTING


def _name() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def test_events_and_control_topics(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    name = _name()
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", f"{host}:{port}", "--plugin", PLUGIN,
                    "--policy", "rt-jit-toy") as d:
        s = d.stub()
        time.sleep(0.5)  # the bus connects in the background

        def act() -> None:
            s.SubmitJob(pb.SubmitJobRequest(job_id=1, nodes=8, walltime=1000, runtime=500))
            s.AdvanceClock(pb.AdvanceClockRequest(to=10))
            s.SubmitJob(pb.SubmitJobRequest(job_id=2, nodes=4, walltime=100, runtime=50,
                                            job_class=pb.JOB_CLASS_REALTIME))
            s.AdvanceClock(pb.AdvanceClockRequest(to=5000))

        msgs = _collect(host, port, f"schedd/{name}/#", act, seconds=4)
    topics = [t for t, _, _ in msgs]
    assert f"schedd/{name}/events/started" in topics
    assert f"schedd/{name}/events/checkpointing" in topics
    assert f"schedd/{name}/events/completed" in topics
    controls = [(p, q) for t, p, q in msgs if t == f"schedd/{name}/jobs/1/control"]
    kinds = [p["command"] for p, _ in controls]
    assert kinds[:3] == ["start", "checkpoint", "stop"]
    assert controls[1][0]["deadline"] > controls[1][0]["time"]  # the modelled end
    assert all(q == 1 for _, q in controls)  # control is QoS 1
    started = next(p for t, p, _ in msgs if t.endswith("/events/started"))
    assert started["job_id"] == 1 and started["cluster"] == name and started["nodes"] == 8


def test_external_agent_answers_jit_checkpoint(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    name = _name()
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", f"{host}:{port}", "--plugin", PLUGIN, "--policy", "rt-jit-toy",
                    "--agents", "external", "--checkpoint-timeout", "600") as d:
        agent = AgentProc("--cluster", name, "--mqtt", f"{host}:{port}", "--server",
                          d.address, "--delay", "0.2", "--once")
        try:
            wait_until("the daemon's MQTT connection", lambda: "mqtt connected" in d.log())
            agent.subscribed()
            s = d.stub()
            _preempt_batch_for_realtime(s)
            # Lockstep: the clock stands still; only the agent's CheckpointDone moves it on.
            assert agent.wait(20) == 0, agent.said()
            deadline = time.monotonic() + 10
            while s.GetJob(pb.GetJobRequest(job_id=2)).state != pb.JOB_STATE_RUNNING:
                assert time.monotonic() < deadline, d.log()
                time.sleep(0.05)
            job1 = s.GetJob(pb.GetJobRequest(job_id=1))
            assert job1.state == pb.JOB_STATE_PREEMPTED and job1.preemptions == 1
            s.AdvanceClock(pb.AdvanceClockRequest(until_idle=True))
            done = s.GetJob(pb.GetJobRequest(job_id=1))
            assert done.state == pb.JOB_STATE_COMPLETED
            assert done.checkpoints >= 1  # the JIT checkpoint was written and kept
        finally:
            agent.kill()


def test_silent_agent_times_out_and_job_is_requeued(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", _name(),
                    "--mqtt", f"{host}:{port}", "--plugin", PLUGIN, "--policy", "rt-jit-toy",
                    "--agents", "external", "--checkpoint-timeout", "300",
                    metrics=True) as d:
        s = d.stub()
        _preempt_batch_for_realtime(s)
        s.AdvanceClock(pb.AdvanceClockRequest(to=2000))  # past the modelled end + 300 s
        job2 = s.GetJob(pb.GetJobRequest(job_id=2))
        assert job2.first_start > 101  # started only when the timeout freed the nodes
        assert _metric(d, "schedd_checkpoint_timeouts_total") == 1
        events = s.WatchEvents(pb.WatchEventsRequest(from_seq=1, job_id=1), timeout=2)
        causes = []
        with pytest.raises(Exception):  # noqa: B017 — the deadline ends the stream
            for e in events:
                causes.append(e.cause)
        assert "checkpoint-timeout" in causes


def test_notice_from_an_instrument(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    name = _name()
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", f"{host}:{port}", metrics=True) as d:
        time.sleep(0.8)

        async def publish() -> None:
            async with aiomqtt.Client(host, port) as c:
                await c.publish(f"schedd/{name}/notices", json.dumps(
                    {"job_id": 77, "expected_arrival": 900.0, "nodes": 4, "walltime": 600.0}),
                    qos=1)
                await c.publish(f"schedd/{name}/notices", json.dumps(
                    {"job_id": 78, "expected_arrival": -5.0, "nodes": 4, "walltime": 60.0}),
                    qos=1)

        rejected = _collect(host, port, f"schedd/{name}/notices/rejected",
                            lambda: asyncio.run(publish()), seconds=3, until=1)
        s = d.stub()
        events = list(_take(s, 5))
        assert any(e.kind == "notice" and e.job_id == 77 for e in events)
        assert rejected and "expected_arrival" in rejected[0][1]["error"]
        assert rejected[0][1]["reason"] == "invalid"
        # One accepted notice counts once (the bus and the daemon both counted it).
        assert _metric(d, "schedd_notices_total") == 1
        assert _metric(d, "schedd_mqtt_rejected_total") == 1


def test_anonymous_notice_refused_when_tokens_are_on(mqtt_broker: tuple[str, int],
                                                     tmp_path: Path) -> None:
    """With a tokens file the anonymous topic has no identity: nothing changes, counted."""
    host, port = mqtt_broker
    name = _name()
    tokens = tmp_path / "tokens"
    tokens.write_text("op-token operator root\n")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", f"{host}:{port}", "--tokens", str(tokens), metrics=True) as d:
        time.sleep(0.8)

        async def publish() -> None:
            async with aiomqtt.Client(host, port) as c:
                await c.publish(f"schedd/{name}/notices", json.dumps(
                    {"job_id": 77, "expected_arrival": 900.0, "nodes": 4, "walltime": 600.0}),
                    qos=1)

        rejected = _collect(host, port, f"schedd/{name}/notices/rejected",
                            lambda: asyncio.run(publish()), seconds=3, until=1)
        assert [r[1]["reason"] for r in rejected] == ["anonymous"]
        assert _metric(d, "schedd_mqtt_rejected_total") == 1
        assert _metric(d, "schedd_notices_total") == 0
        events = _take(d.stub(), 5, (("authorization", "Bearer op-token"),))
        assert [e.kind for e in events if e.kind == "notice"] == []


def _take(stub, n: int, metadata=None):  # noqa: ANN001, ANN202
    call = stub.WatchEvents(pb.WatchEventsRequest(from_seq=1), timeout=2, metadata=metadata)
    try:
        for e in call:
            yield e
            n -= 1
            if n == 0:
                return
    except Exception:  # noqa: BLE001 — deadline: fewer events than asked
        return


def test_daemon_keeps_scheduling_while_the_broker_is_down(private_broker) -> None:  # noqa: ANN001
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", _name(),
                    "--mqtt", f"{private_broker.host}:{private_broker.port}",
                    metrics=True) as d:
        deadline = time.monotonic() + 10
        while _metric(d, "schedd_mqtt_connected") != 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        private_broker.stop()
        s = d.stub()
        for i in range(1, 6):
            s.SubmitJob(pb.SubmitJobRequest(job_id=i, nodes=4, walltime=100, runtime=60))
        s.AdvanceClock(pb.AdvanceClockRequest(until_idle=True))
        assert all(j.state == pb.JOB_STATE_COMPLETED
                   for j in s.ListJobs(pb.ListJobsRequest()).jobs)
        assert _metric(d, "schedd_mqtt_publish_failures_total") > 0
        assert _metric(d, "schedd_mqtt_connected") == 0
        private_broker.start()
        deadline = time.monotonic() + 20
        while _metric(d, "schedd_mqtt_connected") != 1:
            assert time.monotonic() < deadline, d.log()
            time.sleep(0.1)
