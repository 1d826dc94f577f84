"""One MQTT message must never wedge the daemon's notice intake (issue 34, item 1).

A notice whose JSON parses badly enough to raise something other than JSONDecodeError (an
integer of more than 4,300 digits: ValueError; deep nesting: RecursionError), or whose
handling raises for any other reason, used to escape the bus's reader before the PUBACK.
The connection went down, the persistent session gave the same message back on every
reconnect, ahead of everything published after it: `schedd_mqtt_connected` stayed 0 and
no later notice from anyone was applied, across restarts. Now any failure while handling
one message is that message's: refused on its user's rejected topic with a sentence,
counted in `schedd_mqtt_rejected_total`, acknowledged, never delivered again.

The bus against the shared broker, then a real daemon behind a private Mosquitto running
the shipped configuration (deploy/mosquitto.conf, .passwd, .acl) as alice and bob would
use it, with a restart of the daemon in between.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
import structlog
from daemon_proc import DaemonProc, metric_value, noticed_job_ids, wait_until
from mqtt_broker import DEPLOY, PASSWORDS, BrokerProcess
from test_mqtt_bus import make_bus, receive, sample, start, stop, uid

from schedd.daemon.auth import Principal
from schedd.daemon.notice_payload import PayloadError, decode_notice

HUGE_INTEGER = b'{"job_id":' + b"7" * 5000 + b',"expected_arrival":900,"nodes":2,' \
    b'"walltime":600}'
DEEP_NESTING = b'{"job_id":' + b"[" * 5000 + b"]" * 5000 + b"}"
RAISES = 13  # the bus test's handler raises for this job: a bug, not the payload
TOKENS = "op-token operator admin\nalice-token user alice\nbob-token user bob\n"
WAIT = 20.0  # seconds: a deadline to fail by, not a timing that is asserted


def notice(job_id: int, **extra: Any) -> dict[str, Any]:
    return {"job_id": job_id, "expected_arrival": 900.0 + job_id, "nodes": 2,
            "walltime": 600.0, **extra}


@pytest.mark.parametrize(("payload", "error"), [
    (HUGE_INTEGER, "notice has an integer of 5,000 digits; at most 32."),
    (b'{"job_id":-' + b"1" * 33 + b"}", "notice has an integer of 33 digits; at most 32."),
    (DEEP_NESTING, "notice is nested more than 32 levels deep."),
    (b'{"a":' + b"[" * 32 + b"]" * 32 + b"}", "notice is nested more than 32 levels deep."),
    (b"x" * 65_537, "notice is 65,537 bytes; at most 65,536 are read."),
    (b'{"job_id":1,"nodes":2,"job_id":3}', "notice has key 'job_id' twice in one object."),
    (b'{"request_id":"r\xff"}', "notice is not UTF-8 (byte 0xff at position 16)."),
    (b'{"request_id":"\\ud800"}',
     "notice has a string with a lone surrogate (\\ud800), which is not text."),
    (b'{"job_id":', "notice is not valid JSON (Expecting value at position 10)."),
    (b"[1]", "notice must be a JSON object, not list."),
])
def test_each_bad_payload_gets_its_sentence(payload: bytes, error: str) -> None:
    with pytest.raises(PayloadError) as err:
        decode_notice(payload)
    assert str(err.value) == error


def test_what_a_notice_may_hold() -> None:
    """Within the bounds: decoded as json.loads would (NaN and Infinity are the field
    limits' to refuse, with the field's name)."""
    payload = (b'{"job_id":' + b"9" * 32 + b',"walltime":NaN,"x":' + b"[" * 31 + b"]" * 31
               + b',"request_id":"\\ud83d\\ude00 \xc3\xa9"}')
    body = decode_notice(payload)
    assert body["job_id"] == int("9" * 32) and body["request_id"] == "\U0001f600 \u00e9"
    assert body["walltime"] != body["walltime"]  # NaN


def test_the_bus_contains_each_failure_to_its_message(mqtt_broker: tuple[str, int]) -> None:
    host, port = mqtt_broker
    cluster = uid("c")
    applied: list[int] = []

    async def handler(body: dict[str, Any], who: Principal) -> None:
        if body["job_id"] == RAISES:
            raise RuntimeError("a bug in the handler")
        applied.append(body["job_id"])

    async def main() -> None:
        bus, metrics = make_bus(host, port, cluster, on_notice=handler)
        with structlog.testing.capture_logs() as logs:
            task = await start(bus)
            async with aiomqtt.Client(host, port, identifier=uid("alice")) as alice:
                await alice.subscribe(f"schedd/{cluster}/rejected/alice", qos=1)
                topic = f"schedd/{cluster}/cmd/alice/notice"
                for payload in (HUGE_INTEGER, DEEP_NESTING,
                                json.dumps(notice(RAISES)).encode(),
                                json.dumps(notice(1)).encode()):
                    await alice.publish(topic, payload, qos=1)
                async with asyncio.timeout(WAIT):
                    got = [json.loads(m.payload) for m in await receive(alice, 3)]  # type: ignore[arg-type]
                    while applied != [1]:
                        await asyncio.sleep(0.02)
            assert bus.connected
            await stop(task)
        assert [g["reason"] for g in got] == ["malformed", "malformed", "internal"]
        assert got[0]["error"] == "notice has an integer of 5,000 digits; at most 32."
        assert got[1]["error"] == "notice is nested more than 32 levels deep."
        assert got[2]["error"] == "internal error handling the notice (RuntimeError)."
        assert got[0]["payload"] == HUGE_INTEGER.decode()[:200]
        assert sample(metrics, "schedd_mqtt_rejected_total", reason="malformed") == 2
        assert sample(metrics, "schedd_mqtt_rejected_total", reason="internal") == 1
        events = [e["event"] for e in logs]
        assert events.count("mqtt connected") == 1, events  # never dropped, never again
        assert "mqtt disconnected" not in events and "mqtt bus error; reconnecting" \
            not in events
        assert "mqtt message handling failed; refused and acknowledged" in events

    asyncio.run(main())


# --------------------------------------------------------------------------- the daemon

def _serve(broker: BrokerProcess, name: str, db: Path, tokens: Path) -> DaemonProc:
    d = DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                   "--tokens", str(tokens), "--state-db", str(db),
                   "--mqtt", f"{broker.host}:{broker.port}", "--mqtt-user", "schedd",
                   "--mqtt-password-file", str(DEPLOY / "schedd.mqtt-password"),
                   metrics=True)
    wait_until("the daemon's MQTT subscription", lambda: "mqtt connected" in d.log())
    return d


async def _publish_as(broker: BrokerProcess, user: str, topic: str,
                      payloads: list[bytes]) -> None:
    async with aiomqtt.Client(broker.host, broker.port, identifier=uid(user),
                              username=user, password=PASSWORDS[user]) as c:
        for payload in payloads:
            await c.publish(topic, payload, qos=1, timeout=WAIT)


def test_a_poisoned_notice_never_wedges_the_daemon(secured_broker: BrokerProcess,
                                                   tmp_path: Path) -> None:
    """alice's poisons are refused to her, bob's notice after them is applied, the
    daemon's connection never drops, and after a restart the poisons are not back."""
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    db = tmp_path / "journal.sqlite"
    name = f"p{uuid.uuid4().hex[:8]}"
    prefix = f"schedd/{name}"
    rejections: list[dict[str, Any]] = []

    async def first_run() -> None:
        # One connection for alice: the shipped broker gives a login one session.
        async with aiomqtt.Client(secured_broker.host, secured_broker.port,
                                  username="alice", password=PASSWORDS["alice"]) as alice:
            await alice.subscribe(f"{prefix}/rejected/alice", qos=1)
            for poison in (HUGE_INTEGER, DEEP_NESTING):
                await alice.publish(f"{prefix}/cmd/alice/notice", poison, qos=1)
            await _publish_as(secured_broker, "bob", f"{prefix}/cmd/bob/notice",
                              [json.dumps(notice(21, request_id="bob-21")).encode()])
            async with asyncio.timeout(WAIT):
                rejections.extend(json.loads(m.payload)  # type: ignore[arg-type]
                                  for m in await receive(alice, 2))

    d = _serve(secured_broker, name, db, tokens)
    try:
        asyncio.run(first_run())
        wait_until("bob's notice applied after alice's poisons",
                   lambda: metric_value(d, "schedd_notices_total", source="mqtt") >= 1, WAIT)
        assert [r["reason"] for r in rejections] == ["malformed", "malformed"], rejections
        assert all(r["error"].startswith("notice ") and r["error"].endswith(".")
                   for r in rejections)
        assert metric_value(d, "schedd_mqtt_rejected_total", reason="malformed") == 2
        assert metric_value(d, "schedd_mqtt_connected") == 1
        assert noticed_job_ids(d, "bob-token") == [21]
        assert d.log().count("mqtt connected") == 1, d.log()
        assert "mqtt disconnected" not in d.log() and "reconnecting" not in d.log()
    finally:
        assert d.stop() == 0, d.log()

    # The restarted daemon resumes the session: what was acknowledged is not given again.
    d = _serve(secured_broker, name, db, tokens)
    try:
        asyncio.run(_publish_as(secured_broker, "bob", f"{prefix}/cmd/bob/notice",
                                [json.dumps(notice(22, request_id="bob-22")).encode()]))
        wait_until("bob's notice after the restart",
                   lambda: 22 in noticed_job_ids(d, "bob-token"), WAIT)
        # Notices are handled in order: a poison given again would have come before 22.
        assert metric_value(d, "schedd_mqtt_rejected_total", reason="malformed") == 0
        assert metric_value(d, "schedd_mqtt_rejected_total", reason="internal") == 0
        assert metric_value(d, "schedd_mqtt_connected") == 1
        assert d.log().count("mqtt connected") == 1, d.log()
    finally:
        assert d.stop() == 0, d.log()
