"""MQTT advance notices take the walltime as a duration string too ("1:30:00", "1h30m"),
like every other place a duration is read; a number written as a string stays refused
(tests/test_daemon_validation.py) and a malformed duration is rejected with a sentence."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid

from daemon_proc import DaemonProc, read_events

from schedd.v1 import scheduler_pb2 as pb


def test_mqtt_notice_walltime_as_duration_string(mqtt_broker):
    import aiomqtt

    host, port = mqtt_broker
    name = f"dur{uuid.uuid4().hex[:6]}"
    good = [{"job_id": 7, "expected_arrival": 500, "nodes": 1, "walltime": "1:30:00"},
            {"job_id": 8, "expected_arrival": 500, "nodes": 1, "walltime": "1h30m"}]
    bad = {"job_id": 9, "expected_arrival": 500, "nodes": 1, "walltime": "1h2h"}

    async def exchange() -> list[dict]:
        got: list[dict] = []
        async with aiomqtt.Client(host, port, identifier=f"t-{name}") as c:
            await c.subscribe(f"schedd/{name}/notices/rejected", qos=1)
            for payload in [*good, bad]:
                await c.publish(f"schedd/{name}/notices", json.dumps(payload), qos=1)

            async def read() -> None:
                async for m in c.messages:
                    got.append(json.loads(m.payload))

            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(read(), 5)
        return got

    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", f"{host}:{port}") as d:
        time.sleep(1.0)  # the daemon subscribes once connected
        rejected = asyncio.run(exchange())
        events = read_events(d.stub(), pb.WatchEventsRequest(from_seq=1, kinds=["notice"]), 2)
    assert [e.job_id for e in events] == [7, 8]
    assert len(rejected) == 1 and "'1h2h'" in rejected[0]["error"], rejected
    assert "walltime" in rejected[0]["error"]
