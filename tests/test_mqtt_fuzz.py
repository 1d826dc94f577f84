"""Fuzz the MQTT notice intake through a real Mosquitto running the shipped ACL.

alice, logged in to a private broker with deploy/mosquitto.conf, .passwd and .acl as
shipped, publishes what Hypothesis draws on her command topic: integers far beyond 4,300
digits, nesting far beyond the recursion limit, wrong types in every field, strings of
up to 1 MB, invalid UTF-8, lone surrogates, NaN and Infinity, keys given twice, bytes at
random. After every example she publishes a valid notice, which must be applied (its
`notice` event comes back). One daemon serves the whole fuzz (Hypothesis runs inside the
test, the daemon is the test's): at the end it has never
lost its broker connection, and it has answered every bad payload with a sentence of
its own, never with `internal` (a bug contained, tests/test_mqtt_poison.py).
"""

from __future__ import annotations

import json
import queue
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as paho
import pytest
from daemon_proc import DaemonProc, metric_value, wait_until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mqtt_broker import DEPLOY, PASSWORDS, BrokerProcess

WAIT = 20.0  # seconds: a deadline to fail by, not a timing that is asserted
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])
TOKENS = "op-token operator admin\nalice-token user alice\nbob-token user bob\n"
FIELDS = ("job_id", "expected_arrival", "nodes", "walltime", "notice_time", "request_id")


def _notice(job_id: int) -> dict[str, Any]:
    return {"job_id": job_id, "expected_arrival": 900.0 + job_id, "nodes": 2,
            "walltime": 600.0}


def _with(field: str, value_text: str, job_id: int = 5) -> bytes:
    """A notice whose `field` is the JSON text `value_text`, as it would be sent."""
    body = {k: json.dumps(v) for k, v in _notice(job_id).items()}
    body[field] = value_text
    return ("{" + ",".join(f'"{k}":{v}' for k, v in body.items()) + "}").encode()


# --------------------------------------------------------------------------- payloads

ODD_TEXT = ["", "\u0000", "\ud800", "\udfff x", "\ufeff", "🎉" * 50, "a" * 129, "1h",
            "1:30:00", "-1", "NaN", "1e999", "\u202e"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(),
                    st.integers(-(2**200), 2**200), st.floats(),
                    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e308,
                                     -0.0, 5e-324]),
                    st.text(max_size=40), st.sampled_from(ODD_TEXT))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)


@st.composite
def wrong_types(draw: st.DrawFn) -> bytes:
    """A notice with some fields of any type, some missing, some keys added."""
    body: dict[str, Any] = _notice(draw(st.integers(0, 2**63)))
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=4)):
        body[field] = draw(values)
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=2)):
        body.pop(field, None)
    body.update(draw(st.dictionaries(st.text(max_size=6), values, max_size=2)))
    return json.dumps(body).encode("utf-8", errors="surrogatepass")


@st.composite
def huge_integers(draw: st.DrawFn) -> bytes:
    digits = draw(st.one_of(st.integers(19, 40), st.integers(4_290, 4_310),
                            st.integers(4_300, 60_000)))
    sign = draw(st.sampled_from(["", "-"]))
    return _with(draw(st.sampled_from(FIELDS + ("extra",))), sign + "9" * digits)


@st.composite
def deep_nesting(draw: st.DrawFn) -> bytes:
    depth = draw(st.one_of(st.integers(30, 40), st.integers(900, 1_100),
                           st.integers(1_000, 40_000)))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    inner = opener * depth + "0" + closer * depth
    if draw(st.booleans()):
        return inner.encode()  # not even an object at the top
    return _with(draw(st.sampled_from(FIELDS + ("extra",))), inner)


@st.composite
def big_strings(draw: st.DrawFn) -> bytes:
    size = draw(st.sampled_from([65_000, 65_536, 65_537, 300_000, 1_048_576]))
    return _with(draw(st.sampled_from(FIELDS + ("extra",))), json.dumps("x" * size))


@st.composite
def invalid_utf8(draw: st.DrawFn) -> bytes:
    good = _with("request_id", json.dumps("r-" + draw(st.text(max_size=8))))
    bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80",
                                b"\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]))
    at = draw(st.integers(0, len(good)))
    return good[:at] + bad + good[at:]


@st.composite
def non_numbers(draw: st.DrawFn) -> bytes:
    text = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999",
                                 "1e-999", "0e0", "-0"]))
    return _with(draw(st.sampled_from(FIELDS)), text)


@st.composite
def duplicated_keys(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(FIELDS))
    payload = _with(field, json.dumps(draw(scalars)))
    again = f',"{field}":{json.dumps(draw(scalars))}}}'.encode()
    return payload[:-1] + again


payloads = st.one_of(wrong_types(), huge_integers(), deep_nesting(), big_strings(),
                     invalid_utf8(), non_numbers(), duplicated_keys(),
                     st.binary(max_size=300),
                     st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))


# --------------------------------------------------------------------------- the stand

class Alice:
    """alice's one connection (the shipped broker gives a login one session): publishes
    on her command topic and reads the daemon's `notice` events."""

    def __init__(self, broker: BrokerProcess, name: str):
        self.topic = f"schedd/{name}/cmd/alice/notice"
        self.noticed: queue.Queue[int] = queue.Queue()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2,
                                  protocol=paho.MQTTv311)
        self.client.username_pw_set("alice", PASSWORDS["alice"])
        self.client.on_message = self._on_message
        subscribed: queue.Queue[bool] = queue.Queue()
        self.client.on_subscribe = lambda *_: subscribed.put(True)
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()
        self.client.subscribe(f"schedd/{name}/events/notice", qos=1)
        subscribed.get(timeout=WAIT)

    def _on_message(self, client: Any, userdata: Any, message: paho.MQTTMessage) -> None:
        self.noticed.put(json.loads(message.payload)["job_id"])

    def publish(self, payload: bytes) -> None:
        info = self.client.publish(self.topic, payload, qos=1)
        info.wait_for_publish(WAIT)
        assert info.is_published(), f"the broker did not take a {len(payload)}-byte payload"

    def wait_noticed(self, job_id: int) -> None:
        while True:
            try:
                if self.noticed.get(timeout=WAIT) == job_id:
                    return
            except queue.Empty:
                raise AssertionError(f"the valid notice for job {job_id} was not "
                                     "applied") from None

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def stand(secured_broker: BrokerProcess, tmp_path: Path) -> Iterator[tuple[DaemonProc, Alice]]:
    """One daemon behind the shipped broker, and alice's connection to it."""
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    name = f"fz{uuid.uuid4().hex[:8]}"
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                    "--tokens", str(tokens), "--state-db", str(tmp_path / "journal"),
                    "--mqtt", f"{secured_broker.host}:{secured_broker.port}",
                    "--mqtt-user", "schedd",
                    "--mqtt-password-file", str(DEPLOY / "schedd.mqtt-password"),
                    metrics=True) as daemon:
        wait_until("the daemon's MQTT subscription", lambda: "mqtt connected" in daemon.log())
        alice = Alice(secured_broker, name)
        try:
            yield daemon, alice
        finally:
            alice.close()


def test_after_any_payload_a_valid_notice_gets_through(
        stand: tuple[DaemonProc, Alice]) -> None:
    d, alice = stand
    job_ids = iter(range(1_000_000, 2_000_000))  # above the ids fuzzed notices tend to name

    @FUZZ
    @given(payload=payloads)
    def one_payload_then_a_valid_notice(payload: bytes) -> None:
        alice.publish(payload)
        job_id = next(job_ids)
        alice.publish(json.dumps({**_notice(job_id), "request_id": f"fz-{job_id}"})
                      .encode())
        alice.wait_noticed(job_id)

    one_payload_then_a_valid_notice()
    # The daemon never lost its connection, and had a sentence for every bad payload.
    assert metric_value(d, "schedd_mqtt_connected") == 1
    assert d.log().count("mqtt connected") == 1, d.log()[-5000:]
    assert "mqtt disconnected" not in d.log()
    assert metric_value(d, "schedd_mqtt_rejected_total", reason="malformed") > 0
    internal = [line for line in d.log().splitlines() if "handling failed" in line]
    assert metric_value(d, "schedd_mqtt_rejected_total", reason="internal") == 0, internal[:3]
