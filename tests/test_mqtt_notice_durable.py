"""MQTT advance notices are at-least-once end to end, and exactly once with a request_id.

The daemon's MQTT session is persistent (clean_session=False, client id
`schedd-<name>`), so the broker keeps the notices published while the daemon is down,
and the daemon acknowledges (PUBACK) a notice only once it is journalled or refused, so a
daemon killed in between gets it again after its restart. Before, the session was clean
and paho acknowledged on arrival: every test here lost its notices.

Real daemon subprocesses and a real broker (tests/mqtt_broker.py). No timing is asserted:
the tests wait for what they check (a journal row, a log line, the process's exit), and
where a kill must land between two steps of the daemon they either stop it (SIGSTOP)
before the notices reach it or let it kill itself at that step (SCHEDD_MQTT_CRASH_AT, a
test-only hook of schedd/daemon/mqtt.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from daemon_proc import DaemonProc, read_events
from daemon_proc import wait_until as _until
from mqtt_broker import shared_broker_kind

from schedd.daemon.config import add_serve_parser
from schedd.daemon.mqtt import CRASH_ENV
from schedd.v1 import scheduler_pb2 as pb

WAIT = 20.0  # seconds: a deadline to fail by, not a timing that is asserted


@pytest.fixture
def broker(mqtt_broker: tuple[str, int]) -> tuple[str, int]:
    """The shared broker, if it keeps persistent sessions as MQTT 3.1.1 says."""
    if shared_broker_kind() == "amqtt":
        pytest.skip("amqtt 0.12 neither queues a persistent session's QoS 1 messages "
                    "while its client is away nor sends the unacknowledged ones again")
    return mqtt_broker


def _name() -> str:
    return f"dura{uuid.uuid4().hex[:8]}"


def _serve(name: str, host: str, port: int, db: Path,
           env: dict[str, str] | None = None) -> DaemonProc:
    return DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                      "--mqtt", f"{host}:{port}", "--state-db", str(db), env=env)


def _subscribed(d: DaemonProc) -> None:
    """The daemon logs `mqtt connected` once it has subscribed to the notice topics."""
    _until("the daemon's MQTT subscription", lambda: "mqtt connected" in d.log())


def _state(pid: int) -> str:
    """The process's state letter (proc(5)): T once SIGSTOP has stopped it."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def _rows(db: Path) -> dict[int, list[str | None]]:
    """The journal's notice stimuli: job id -> their request ids, in journal order."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute("SELECT request_id, body FROM stimuli WHERE kind = 'notice' "
                           "ORDER BY seq").fetchall()
    finally:
        con.close()
    out: dict[int, list[str | None]] = {}
    for rid, body in rows:
        out.setdefault(json.loads(body)["job_id"], []).append(rid)
    return out


def _publish(host: str, port: int, messages: list[tuple[str, dict[str, Any]]]) -> None:
    """Publish at QoS 1 from one client; returns once the broker has acknowledged each
    (aiomqtt's publish waits for the PUBACK): every one is the broker's to deliver."""

    async def main() -> None:
        async with aiomqtt.Client(host, port, identifier=f"pub-{uuid.uuid4().hex[:8]}") as c:
            for topic, payload in messages:
                await c.publish(topic, json.dumps(payload), qos=1, timeout=WAIT)

    asyncio.run(main())


def _forget_session(host: str, port: int, client_id: str) -> None:
    """Drop the daemon's persistent session from the shared broker (a clean connect with
    its id), so that the tests leave nothing queued behind them."""

    async def main() -> None:
        async with aiomqtt.Client(host, port, identifier=client_id, clean_session=True):
            pass

    asyncio.run(main())


def _notice(job_id: int, request_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"job_id": job_id, "expected_arrival": 900.0 + job_id, "nodes": 2,
                            "walltime": 600.0}
    if request_id is not None:
        body["request_id"] = request_id
    return body


def _settle(host: str, port: int, name: str, db: Path, sentinel: int) -> None:
    """Publish a notice for job `sentinel` and wait until it is journalled: the daemon
    handles notices one at a time, so whatever it had been given before is handled."""
    _publish(host, port, [(f"schedd/{name}/notices", _notice(sentinel, f"s-{sentinel}"))])
    _until(f"the sentinel notice {sentinel}", lambda: sentinel in _rows(db))


def _mixed(name: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[int, list[str | None]]]:
    """Notices on both topics, with and without request ids; and the journal rows that
    applying each exactly once gives (request ids are per user: `operator` on the
    anonymous topic, the topic's user on cmd/<user>/notice)."""
    anon, alice = f"schedd/{name}/notices", f"schedd/{name}/cmd/alice/notice"
    messages = [(anon, _notice(11, "r-11")), (alice, _notice(12, "r-12")),
                (anon, _notice(13)), (alice, _notice(14)), (anon, _notice(15, "r-15"))]
    expected: dict[int, list[str | None]] = {
        11: ["operator/r-11"], 12: ["alice/r-12"], 13: [None], 14: [None],
        15: ["operator/r-15"]}
    return messages, expected


def _settled_rows(host: str, port: int, name: str, db: Path,
                  expected: dict[int, list[str | None]]) -> dict[int, list[str | None]]:
    """The journal's rows for `expected`'s jobs once they are all there (or WAIT has
    passed: then the assertion shows what is missing), and a sentinel has been handled
    after them, so that a second delivery would show too."""
    deadline = time.monotonic() + WAIT
    while not set(expected) <= set(_rows(db)) and time.monotonic() < deadline:
        time.sleep(0.05)
    _settle(host, port, name, db, 99)
    rows = _rows(db)
    return {job: rows.get(job, []) for job in expected}


def test_notices_published_while_the_daemon_is_down_are_applied_after_its_restart(
        broker: tuple[str, int], tmp_path: Path) -> None:
    """Stopped cleanly (SIGTERM, so MQTT DISCONNECT), the daemon keeps its session: the
    broker queues the notices published meanwhile and delivers them when the daemon,
    restarted on the same journal, resumes the session under the same client id. Each is
    journalled once and applied (a `notice` event)."""
    host, port = broker
    name, db = _name(), tmp_path / "journal.db"
    messages, expected = _mixed(name)
    try:
        with _serve(name, host, port, db) as d:
            _subscribed(d)
            first_log = d.log()
        assert d.proc.returncode == 0
        _publish(host, port, messages)  # the daemon is down: the broker holds them
        with _serve(name, host, port, db) as d2:
            _subscribed(d2)
            rows = _settled_rows(host, port, name, db, expected)
            events = read_events(d2.stub(), pb.WatchEventsRequest(from_seq=1,
                                                                 kinds=["notice"]), 6)
            log = d2.log()
    finally:
        _forget_session(host, port, f"schedd-{name}")
    assert rows == expected
    assert sorted(e.job_id for e in events) == [*sorted(expected), 99]
    for text in (first_log, log):  # the same id both times: schedd-<name>
        assert f'"client_id": "schedd-{name}"' in text


def test_notices_acknowledged_to_the_publisher_survive_kill_9(broker: tuple[str, int],
                                                              tmp_path: Path) -> None:
    """kill -9 right after the publisher got its PUBACKs, before the daemon took any of
    the notices: it is stopped (SIGSTOP) while they are published, so the broker has
    sent them to a process that never reads them, then killed. Restarted on the same
    journal, it gets them all from its session and applies each exactly once."""
    host, port = broker
    name, db = _name(), tmp_path / "journal.db"
    messages, expected = _mixed(name)
    d = _serve(name, host, port, db)
    try:
        _subscribed(d)
        d.proc.send_signal(signal.SIGSTOP)
        _until("the daemon to stop", lambda: _state(d.proc.pid) == "T")
        _publish(host, port, messages)  # each acknowledged by the broker
        d.kill()
        assert _rows(db) == {}  # nothing journalled: all of it is the broker's
        with _serve(name, host, port, db) as d2:
            _subscribed(d2)
            rows = _settled_rows(host, port, name, db, expected)
    finally:
        d.kill()
        _forget_session(host, port, f"schedd-{name}")
    assert rows == expected


@pytest.mark.parametrize(("point", "request_id", "after"), [
    ("received", "r-21", ["operator/r-21"]),
    ("received", None, [None]),
    ("handled", "r-21", ["operator/r-21"]),
    ("handled", None, [None, None]),  # at-least-once: docs/mqtt.md, "Delivery of notices"
], ids=["received-request-id", "received-no-id", "handled-request-id", "handled-no-id"])
def test_kill_9_while_a_notice_is_handled(broker: tuple[str, int], tmp_path: Path,
                                          point: str, request_id: str | None,
                                          after: list[str | None]) -> None:
    """The daemon kills itself (SCHEDD_MQTT_CRASH_AT) with a notice taken from the
    connection but not yet journalled (`received`), or journalled but not yet
    acknowledged (`handled`). Either way the broker still has it and sends it again to
    the restarted daemon. `received`: it is applied once (before, it had been
    acknowledged on arrival and was lost). `handled`: with a request_id the repeat is a
    duplicate, not applied again; without one it is applied a second time, the
    documented at-least-once."""
    host, port = broker
    name, db = _name(), tmp_path / "journal.db"
    notice = _notice(21, request_id)
    d = _serve(name, host, port, db, env={CRASH_ENV: point})
    try:
        _subscribed(d)
        _publish(host, port, [(f"schedd/{name}/notices", notice)])
        try:
            d.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the daemon did not kill itself at {point}:\n"
                                 f"{d.log()[-2000:]}") from None
        assert d.proc.returncode == -signal.SIGKILL
        before = _rows(db).get(21, [])
        with _serve(name, host, port, db) as d2:
            _subscribed(d2)
            rows = _settled_rows(host, port, name, db, {21: after})
            log = d2.log()
    finally:
        d.kill()
        _forget_session(host, port, f"schedd-{name}")
    assert before == ([] if point == "received" else after[:1])
    assert rows == {21: after}
    assert ("mqtt notice duplicate" in log) == (point == "handled" and request_id is not None)


def test_client_id_option() -> None:
    """--mqtt-client-id overrides schedd-<name>; an empty id cannot hold a session."""
    parser = add_serve_parser(argparse.ArgumentParser().add_subparsers())
    assert parser.parse_args([]).mqtt_client_id is None
    assert parser.parse_args(["--mqtt-client-id", "schedd-a"]).mqtt_client_id == "schedd-a"
    for bad in ("", "x" * 257):
        with pytest.raises(SystemExit):
            parser.parse_args(["--mqtt-client-id", bad])
