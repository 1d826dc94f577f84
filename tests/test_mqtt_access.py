"""MQTT under the same access rules as gRPC (docs/mqtt.md, "Access control").

A command's identity is the <user> level of `schedd/<cluster>/cmd/<user>/<command>`; the
shipped Mosquitto config (deploy/mosquitto.conf, .acl, .passwd) makes that a login: a
private Mosquitto runs it unchanged here, and these tests show that it refuses anonymous
and foreign publishes and that the daemon refuses (and counts) what the tokens file does
not allow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
import grpc
import pytest
from daemon_proc import DaemonProc
from mqtt_broker import DEPLOY, PASSWORDS, BrokerProcess
from test_mqtt_bus import compact, make_bus, run, sample, start, stop, uid

from schedd.daemon.auth import ANONYMOUS_OPERATOR, Principal, TokenStore
from schedd.daemon.mqtt import Refusal
from schedd.v1 import scheduler_pb2 as pb

TOKENS = "op-token operator admin\nalice-token user alice\nbob-token user bob\n"
ALICE = (("authorization", "Bearer alice-token"),)


def notice(job_id: int, arrival: float = 900.0) -> dict[str, Any]:
    return {"job_id": job_id, "expected_arrival": arrival, "nodes": 4, "walltime": 600.0}


# --------------------------------------------------------------------------- identities

def test_principal_of_user_follows_the_tokens_file() -> None:
    store = TokenStore({"t1": Principal("admin", "operator"), "t2": Principal("alice", "user"),
                        "t3": Principal("carol", "operator"), "t4": Principal("carol", "user")})
    assert store.principal_of_user("admin") == Principal("admin", "operator")
    assert store.principal_of_user("alice") == Principal("alice", "user")
    assert store.principal_of_user("carol") == Principal("carol", "user")  # the lesser role
    assert store.principal_of_user("mallory") is None
    for unsafe in ("", "a/b", "a+", "#", "a\0"):
        assert store.principal_of_user(unsafe) is None
    # Without tokens every caller is an operator (as over gRPC), under its own name.
    assert TokenStore(None).principal_of_user("alice") == Principal("alice", "operator")
    assert TokenStore(None).principal_of_user("a/b") is None


def test_command_topics_map_users_and_count_refusals(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")
    tokens = TokenStore({"t1": Principal("admin", "operator"), "t2": Principal("alice", "user")})
    calls: list[tuple[int, Principal]] = []

    async def handler(body: dict[str, Any], who: Principal) -> str | Refusal | None:
        calls.append((body["job_id"], who))
        if body["job_id"] == 5:
            return Refusal("permission", "job 5 belongs to bob; alice may act on its own "
                           "jobs only")
        return None

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster, on_notice=handler, tokens=tokens)
        task = await start(bus)
        prefix = f"schedd/{cluster}"
        async with aiomqtt.Client(host, port, identifier=uid("t")) as c:
            await c.subscribe(f"{prefix}/rejected/+", qos=1)
            await c.subscribe(f"{prefix}/notices/rejected", qos=1)
            for topic, body in ((f"{prefix}/cmd/alice/notice", notice(1)),
                                (f"{prefix}/cmd/admin/notice", notice(2)),
                                (f"{prefix}/cmd/mallory/notice", notice(3)),
                                (f"{prefix}/cmd/alice/cancel", notice(4)),
                                (f"{prefix}/notices", notice(6)),
                                (f"{prefix}/cmd/alice/notice", notice(5))):
                await c.publish(topic, compact(body), qos=1)
            got: dict[str, dict[str, Any]] = {}
            async for m in c.messages:
                body = json.loads(m.payload)  # type: ignore[arg-type]
                got[body["reason"]] = {"topic": str(m.topic), **body}
                if len(got) == 4:
                    break
        await stop(task)
        assert calls == [(1, Principal("alice", "user")), (2, Principal("admin", "operator")),
                         (5, Principal("alice", "user"))]
        assert got["unknown_user"]["topic"] == f"{prefix}/rejected/mallory"
        assert "'mallory' is not a user" in got["unknown_user"]["error"]
        assert got["unknown_command"]["topic"] == f"{prefix}/rejected/alice"
        assert got["anonymous"]["topic"] == f"{prefix}/notices/rejected"
        assert got["permission"]["topic"] == f"{prefix}/rejected/alice"
        assert got["permission"]["payload"] == compact(notice(5)).decode()
        for reason in ("unknown_user", "unknown_command", "anonymous", "permission"):
            assert sample(metrics, "schedd_mqtt_rejected_total", reason=reason) == 1, reason
        assert sample(metrics, "schedd_mqtt_rejected_total", reason="invalid") == 0
        assert bus.notices_rejected == 4

    run(main())


def test_without_tokens_the_anonymous_topic_is_an_operator(
        mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")
    calls: list[Principal] = []

    async def handler(body: dict[str, Any], who: Principal) -> None:
        calls.append(who)

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster, on_notice=handler)
        task = await start(bus)
        async with aiomqtt.Client(host, port, identifier=uid("t")) as c:
            await c.publish(f"schedd/{cluster}/notices", compact(notice(1)), qos=1)
            await c.publish(f"schedd/{cluster}/cmd/alice/notice", compact(notice(2)), qos=1)
        for _ in range(100):
            if len(calls) == 2:
                break
            await asyncio.sleep(0.02)
        await stop(task)
        assert calls == [ANONYMOUS_OPERATOR, Principal("alice", "operator")]
        assert bus.notices_rejected == 0

    run(main())


# --------------------------------------------------------------------------- the broker

def client(broker: BrokerProcess, user: str | None) -> aiomqtt.Client:
    return aiomqtt.Client(broker.host, broker.port, identifier=uid(user or "anon"),
                          username=user, password=PASSWORDS.get(user or ""))


async def collect(sub: aiomqtt.Client, seconds: float) -> list[str]:
    topics: list[str] = []

    async def read() -> None:
        async for m in sub.messages:
            topics.append(str(m.topic))

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(read(), seconds)
    return topics


def test_shipped_acl_denies_foreign_topics(secured_broker: BrokerProcess) -> None:
    p = f"schedd/{uid('c')}"

    async def main() -> None:
        for user, password in ((None, None), ("alice", "wrong")):
            with pytest.raises(aiomqtt.MqttError):
                async with aiomqtt.Client(secured_broker.host, secured_broker.port,
                                          username=user, password=password):
                    pass
        async with client(secured_broker, "schedd") as daemon, \
                client(secured_broker, "bob") as bob, client(secured_broker, "alice") as alice:
            await daemon.subscribe(f"{p}/cmd/+/+", qos=1)
            await bob.subscribe(f"{p}/events/+", qos=1)
            await bob.subscribe(f"{p}/jobs/+/control", qos=1)
            await bob.subscribe(f"{p}/rejected/+", qos=1)
            # QoS 1: the broker acknowledges even what its ACL drops, so every publish
            # below returns; what arrives shows what was allowed.
            await alice.publish(f"{p}/cmd/alice/notice", b"own", qos=1)
            await alice.publish(f"{p}/cmd/bob/notice", b"foreign", qos=1)
            await alice.publish(f"{p}/cmd/alice/notice/extra", b"deeper", qos=1)
            await alice.publish(f"{p}/events/completed", b"forged event", qos=1)
            await alice.publish(f"{p}/jobs/7/control", b"forged control", qos=1)
            await alice.publish(f"{p}/rejected/bob", b"forged rejection", qos=1)
            await daemon.publish(f"{p}/events/started", b"real event", qos=1)
            await daemon.publish(f"{p}/rejected/alice", b"for alice only", qos=1)
            await daemon.publish(f"{p}/rejected/bob", b"for bob", qos=1)
            seen_by_daemon, seen_by_bob = await asyncio.gather(collect(daemon, 1.0),
                                                               collect(bob, 1.0))
        assert seen_by_daemon == [f"{p}/cmd/alice/notice"]
        assert sorted(seen_by_bob) == [f"{p}/events/started", f"{p}/rejected/bob"]

    run_long(main())


def run_long(coro: Any, seconds: float = 15.0) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(seconds):
            await coro

    asyncio.run(bounded())


def _metric(d: DaemonProc, name: str, **labels: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics").read().decode()
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}} ") or (not labels and line.startswith(name + " ")):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name}{labels} not exported")


def test_daemon_behind_the_shipped_broker(secured_broker: BrokerProcess,
                                          tmp_path: Path) -> None:
    """alice and bob log in as themselves; only what the tokens file lets them do counts.
    admin has a broker login but, here, no token."""
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(line + "\n" for line in TOKENS.splitlines()
                              if not line.endswith(" admin")))
    name = f"t{uuid.uuid4().hex[:8]}"
    p = f"schedd/{name}"
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--tokens", str(tokens), "--mqtt",
                    f"{secured_broker.host}:{secured_broker.port}", "--mqtt-user", "schedd",
                    "--mqtt-password-file", str(DEPLOY / "schedd.mqtt-password"),
                    metrics=True) as d:
        deadline = time.monotonic() + 10
        while _metric(d, "schedd_mqtt_connected") != 1:
            assert time.monotonic() < deadline, d.log()
            time.sleep(0.1)
        s = d.stub()
        s.SubmitJob(pb.SubmitJobRequest(job_id=5, nodes=8, walltime=1000, runtime=500),
                    metadata=ALICE)

        async def publish() -> list[dict[str, Any]]:
            # One connection per login (the shipped broker's client id is the login):
            # not the daemon's own login, which would take its session.
            async with client(secured_broker, "bob") as bob, \
                    client(secured_broker, "admin") as tokenless, \
                    client(secured_broker, "alice") as alice:
                await bob.subscribe(f"{p}/rejected/bob", qos=1)
                await alice.subscribe(f"{p}/rejected/alice", qos=1)
                # bob, on his own topic, about alice's job: the daemon refuses it.
                await bob.publish(f"{p}/cmd/bob/notice", compact(notice(5)), qos=1)
                # bob as alice: the broker drops it; the daemon never sees it.
                await bob.publish(f"{p}/cmd/alice/notice", compact(notice(50)), qos=1)
                # A login without a token: refused.
                await tokenless.publish(f"{p}/cmd/admin/notice", compact(notice(60)), qos=1)
                # alice's own notice: accepted.
                await alice.publish(f"{p}/cmd/alice/notice", compact(notice(70)), qos=1)
                got: list[dict[str, Any]] = []
                async for m in bob.messages:
                    got.append(json.loads(m.payload))  # type: ignore[arg-type]
                    break
                assert await collect(alice, 1.0) == []  # alice's notice was accepted
                return got

        got: list[dict[str, Any]] = []

        async def main() -> None:
            got.extend(await publish())

        run_long(main(), 10)
        assert [g["reason"] for g in got] == ["permission"], got
        assert "job 5 belongs to alice" in got[0]["error"]
        deadline = time.monotonic() + 5
        while _metric(d, "schedd_notices_total", source="mqtt") < 1:
            assert time.monotonic() < deadline, d.log()
            time.sleep(0.05)
        time.sleep(0.3)
        assert _metric(d, "schedd_mqtt_rejected_total", reason="permission") == 1
        assert _metric(d, "schedd_mqtt_rejected_total", reason="unknown_user") == 1
        assert _metric(d, "schedd_notices_total", source="mqtt") == 1  # alice's, once
        events = s.WatchEvents(pb.WatchEventsRequest(from_seq=1, kinds=["notice"]),
                               timeout=1.5, metadata=ALICE)
        noticed = []
        with pytest.raises(grpc.RpcError) as err:
            for e in events:
                noticed.append(e.job_id)
        assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert noticed == [70]  # nothing of bob's or the unknown login's went in


def test_checkpoint_agent_logs_in_to_the_shipped_broker(secured_broker: BrokerProcess,
                                                        tmp_path: Path) -> None:
    """An agent reads control commands as a broker user (any user may; only the daemon
    may publish them) and answers the JIT checkpoint."""
    from test_daemon_mqtt import PLUGIN, AgentProc, _preempt_batch_for_realtime

    password = tmp_path / "alice.mqtt"
    password.write_text(PASSWORDS["alice"] + "\n")
    name = f"t{uuid.uuid4().hex[:8]}"
    broker = f"{secured_broker.host}:{secured_broker.port}"
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--mqtt", broker, "--mqtt-user", "schedd", "--mqtt-password-file",
                    str(DEPLOY / "schedd.mqtt-password"), "--plugin", PLUGIN,
                    "--policy", "rt-jit-toy", "--agents", "external", metrics=True) as d:
        agent = AgentProc("--cluster", name, "--mqtt", broker, "--mqtt-user", "alice",
                          "--mqtt-password-file", str(password), "--server", d.address,
                          "--delay", "0.1", "--once")
        try:
            deadline = time.monotonic() + 10
            while _metric(d, "schedd_mqtt_connected") != 1:
                assert time.monotonic() < deadline, d.log()
                time.sleep(0.1)
            agent.subscribed()
            _preempt_batch_for_realtime(d.stub())
            assert agent.wait(20) == 0, agent.said()
        finally:
            agent.kill()
        assert "checkpoint answered" in agent.said()
