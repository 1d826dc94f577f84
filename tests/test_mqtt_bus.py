"""The daemon's MQTT bus against a real broker (tests/mqtt_broker.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import uuid
from collections.abc import Coroutine
from typing import Any

import aiomqtt
import numpy as np
import structlog
from mqtt_broker import shared_broker_kind

from schedd.daemon.auth import ANONYMOUS_OPERATOR, Principal
from schedd.daemon.metrics import DaemonMetrics
from schedd.daemon.mqtt import MqttBus

TIMEOUT = 4.0  # seconds per test


def run(coro: Coroutine[Any, Any, None]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(TIMEOUT):  # no extra task, unlike wait_for
            await coro

    asyncio.run(bounded())


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def sample(metrics: DaemonMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def failures(metrics: DaemonMetrics) -> float:
    return sample(metrics, "schedd_mqtt_publish_failures_total")


def event(cluster: str, seq: int, kind: str, job_id: int = 7) -> dict[str, Any]:
    return {"seq": seq, "time": 3600.0 + seq, "kind": kind, "job_id": job_id,
            "state": "running", "cause": "decision:start", "nodes": 512,
            "cluster": cluster, "epoch": "a1b2"}


def control(cluster: str, job_id: int, command: str = "checkpoint",
            time: float = 3600.0) -> dict[str, Any]:
    return {"command": command, "job_id": job_id, "time": time, "deadline": time + 50.0,
            "nodes": 512, "cluster": cluster}


async def receive(client: aiomqtt.Client, n: int) -> list[aiomqtt.Message]:
    got: list[aiomqtt.Message] = []
    async for message in client.messages:
        got.append(message)
        if len(got) == n:
            break
    return got


async def start(bus: MqttBus, connect: bool = True) -> asyncio.Task[None]:
    task = asyncio.create_task(bus.run())
    if connect:
        assert await bus.wait_connected(3.0), "bus did not connect"
    return task


async def stop(task: asyncio.Task[None]) -> None:
    """Cancel run() and check it left nothing behind (no pending-task warnings)."""
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled()
    for _ in range(3):
        await asyncio.sleep(0)
    leftover = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
    assert not leftover, leftover


def make_bus(host: str, port: int, cluster: str, **kwargs: Any) -> tuple[MqttBus, DaemonMetrics]:
    metrics = DaemonMetrics()
    bus = MqttBus(host=host, port=port, cluster=cluster, metrics=metrics,
                  client_id=uid("bus"), **kwargs)
    return bus, metrics


def test_events_and_control_topics_payloads_and_qos(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster)
        task = await start(bus)
        async with aiomqtt.Client(host, port, identifier=uid("sub")) as sub:
            await sub.subscribe(f"schedd/{cluster}/#", qos=1)
            started, done = event(cluster, 1, "started"), event(cluster, 2, "completed")
            bus.publish_event(started)
            bus.publish_control(7, control(cluster, 7))
            bus.publish_event(done)
            got = await receive(sub, 3)
        await stop(task)
        by_topic = {str(m.topic): m for m in got}
        assert set(by_topic) == {f"schedd/{cluster}/events/started",
                                 f"schedd/{cluster}/events/completed",
                                 f"schedd/{cluster}/jobs/7/control"}
        ev = by_topic[f"schedd/{cluster}/events/started"]
        assert ev.payload == compact(started) and not ev.retain
        if shared_broker_kind() != "amqtt":
            assert ev.qos == 0
        assert by_topic[f"schedd/{cluster}/events/completed"].payload == compact(done)
        ctl = by_topic[f"schedd/{cluster}/jobs/7/control"]
        assert json.loads(ctl.payload) == control(cluster, 7)  # type: ignore[arg-type]
        assert ctl.qos == 1 and not ctl.retain
        assert sample(metrics, "schedd_mqtt_published_total", kind="event") == 2
        assert sample(metrics, "schedd_mqtt_published_total", kind="control") == 1
        assert failures(metrics) == 0
        assert not bus.connected

    run(main())


def test_bad_messages_are_counted_never_raised(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster)
        bus.publish_event(event(cluster, 1, "started"))  # before run(): not connected
        assert failures(metrics) == 1
        task = await start(bus)
        bus.publish_event({"kind": "started", "bad": object()})
        bus.publish_event({"no": "kind"})
        bus.publish_event({"kind": "a/+/b"})
        bus.publish_control(1, {"command": "stop", "bad": {1, 2}})
        assert failures(metrics) == 5
        # numpy scalars and events from another thread are fine.
        async with aiomqtt.Client(host, port, identifier=uid("sub")) as sub:
            await sub.subscribe(f"schedd/{cluster}/events/#")
            thread = threading.Thread(target=bus.publish_event,
                                      args=({"kind": "queued", "job_id": np.int64(3)},))
            thread.start()
            thread.join()
            [got] = await receive(sub, 1)
        await stop(task)
        assert got.payload == b'{"job_id":3,"kind":"queued"}'
        assert failures(metrics) == 5

    run(main())


def test_control_queued_before_connect_is_bounded_and_ordered(
        mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster, max_queue=3)
        for job_id in range(1, 6):
            bus.publish_control(job_id, control(cluster, job_id))
        assert failures(metrics) == 2  # the two oldest were dropped
        async with aiomqtt.Client(host, port, identifier=uid("sub")) as sub:
            await sub.subscribe(f"schedd/{cluster}/jobs/+/control", qos=1)
            task = await start(bus)
            got = await receive(sub, 3)
        await stop(task)
        assert [str(m.topic).split("/")[3] for m in got] == ["3", "4", "5"]
        assert sample(metrics, "schedd_mqtt_published_total", kind="control") == 3

    run(main())


def refusals(metrics: DaemonMetrics, reason: str) -> float:
    return sample(metrics, "schedd_mqtt_rejected_total", reason=reason)


def test_notices_are_handled_and_rejections_published(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")
    seen: list[dict[str, Any]] = []

    async def on_notice(notice: dict[str, Any], who: Principal) -> str | None:
        assert who == ANONYMOUS_OPERATOR  # no tokens: the anonymous topic is an operator
        seen.append(notice)
        if notice.get("job_id", 0) <= 0:
            return "job_id must be a positive integer."
        return None

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster, on_notice=on_notice)
        task = await start(bus)
        good = {"job_id": 7, "expected_arrival": 7200.0, "nodes": 512, "walltime": 3600.0,
                "request_id": "n-1"}
        bad = {"job_id": -1, "expected_arrival": 7200.0, "nodes": 512, "walltime": 3600.0}
        async with aiomqtt.Client(host, port, identifier=uid("sub")) as sub:
            await sub.subscribe(f"schedd/{cluster}/notices/rejected", qos=1)
            await sub.publish(f"schedd/{cluster}/notices", compact(good), qos=1)
            await sub.publish(f"schedd/{cluster}/notices", compact(bad), qos=1)
            got = await receive(sub, 1)
        await stop(task)
        assert seen == [good, bad]
        [rejected] = got
        assert json.loads(rejected.payload) == {  # type: ignore[arg-type]
            "error": "job_id must be a positive integer.", "payload": compact(bad).decode(),
            "reason": "invalid"}
        # Accepted notices are counted by the daemon when applied, not here (once only).
        assert sample(metrics, "schedd_notices_total", source="mqtt") == 0
        assert bus.notices_rejected == 1
        assert refusals(metrics, "invalid") == 1

    run(main())


def test_malformed_notices_are_rejected(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")
    called: list[dict[str, Any]] = []

    async def handler(notice: dict[str, Any], who: Principal) -> str | None:
        called.append(notice)
        return None

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster, on_notice=handler)
        task = await start(bus)
        long_garbage = "{" + "x" * 500
        with structlog.testing.capture_logs() as logs:
            async with aiomqtt.Client(host, port, identifier=uid("sub")) as sub:
                await sub.subscribe(f"schedd/{cluster}/notices/rejected", qos=1)
                for raw in ("{not json", "[1, 2]", long_garbage):
                    await sub.publish(f"schedd/{cluster}/notices", raw, qos=1)
                got = [json.loads(m.payload) for m in await receive(sub, 3)]  # type: ignore[arg-type]
        await stop(task)
        assert called == []
        assert [g["payload"] for g in got] == ["{not json", "[1, 2]", long_garbage[:200]]
        assert "not valid JSON" in got[0]["error"]
        assert got[1]["error"] == "notice must be a JSON object, not list."
        assert all(g["error"].endswith(".") for g in got)
        assert bus.notices_rejected == 3
        assert refusals(metrics, "malformed") == 3
        assert sample(metrics, "schedd_notices_total", source="mqtt") == 0
        warnings = [e for e in logs if e["event"] == "mqtt notice rejected"]
        assert len(warnings) == 3 and all(e["log_level"] == "warning" for e in warnings)

    run(main())


def test_outage_drops_events_queues_control_and_replays_in_order(private_broker: Any) -> None:
    broker = private_broker
    host, port = broker.host, broker.port
    cluster = uid("c")
    sub_id = uid("sub")

    async def main() -> None:
        # Reconnect attempts at about 0.25, 0.75, 1.75 s after the disconnect.
        bus, metrics = make_bus(host, port, cluster, backoff_max=2.0)
        with structlog.testing.capture_logs() as logs:
            task = await start(bus)
            # A persistent session: the broker keeps what is published for the subscriber
            # while it is away (and, with Mosquitto, across the broker restart).
            async with aiomqtt.Client(host, port, identifier=sub_id,
                                      clean_session=False) as sub:
                await sub.subscribe(f"schedd/{cluster}/jobs/+/control", qos=1)
                bus.publish_control(1, control(cluster, 1))
                [first] = await receive(sub, 1)
            assert str(first.topic) == f"schedd/{cluster}/jobs/1/control"

            await asyncio.to_thread(broker.stop)
            while bus.connected:
                await asyncio.sleep(0.02)
            before = failures(metrics)
            for seq in range(3):
                bus.publish_event(event(cluster, seq, "queued"))
            for job_id in range(10, 15):
                bus.publish_control(job_id, control(cluster, job_id, time=100.0 + job_id))
            assert failures(metrics) == before + 3
            await asyncio.sleep(0.9)  # two reconnect attempts fail
            assert not bus.connected

            await asyncio.to_thread(broker.start)
            async with aiomqtt.Client(host, port, identifier=sub_id,
                                      clean_session=False) as sub:
                if not broker.persistent:
                    # amqtt forgot the session: subscribe again before the bus's next
                    # attempt, at about 1.75 s.
                    await sub.subscribe(f"schedd/{cluster}/jobs/+/control", qos=1)
                    assert not bus.connected, "bus reconnected before the subscriber"
                assert await bus.wait_connected(3.0)
                got = await receive(sub, 5)
            await stop(task)
        jobs = [json.loads(m.payload)["job_id"] for m in got]  # type: ignore[arg-type]
        assert jobs == [10, 11, 12, 13, 14]
        assert all(m.qos == 1 for m in got)
        assert sample(metrics, "schedd_mqtt_published_total", kind="control") == 6
        assert failures(metrics) == before + 3
        events = [e["event"] for e in logs]
        assert events.count("mqtt connected") == 2
        assert events.count("mqtt disconnected") == 1
        assert events.count("mqtt broker unavailable; retrying") == 0

    run(main())


def test_broker_down_from_the_start() -> None:
    cluster = uid("c")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]  # nothing listens here once the socket closes

    async def main() -> None:
        bus, metrics = make_bus("127.0.0.1", dead_port, cluster, backoff_max=0.25)
        with structlog.testing.capture_logs() as logs:
            task = await start(bus, connect=False)
            assert not await bus.wait_connected(1.0)
            bus.publish_event(event(cluster, 1, "started"))
            bus.publish_control(3, control(cluster, 3))
            await stop(task)
        assert failures(metrics) == 1
        events = [e["event"] for e in logs]
        assert events.count("mqtt broker unavailable; retrying") == 1

    run(main())
