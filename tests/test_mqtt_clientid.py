"""Only the daemon's login can use the daemon's MQTT session (issue 34, item 6).

The broker keeps the daemon's persistent session, and the notices queued in it while the
daemon is away, under a client id. With the first shipped configuration any login could
connect with that id (`mosquitto_sub -u alice -i schedd-<name> ...`): the broker closed
the daemon's connection and, the attacker's session being clean, threw away the daemon's
subscriptions and the queued notices. deploy/mosquitto.conf now sets
`use_username_as_clientid true`: the broker takes every client's login as its client id,
so the daemon's session is its login's, `schedd`, and another login connecting with any
id, `schedd-<name>` or `schedd` included, gets a session of its own.

A private Mosquitto running the shipped files (tests/mqtt_broker.py, `secured_broker`),
a real daemon, alice's takeover attempts as clients would make them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import aiomqtt
from daemon_proc import DaemonProc, noticed_job_ids, wait_until
from mqtt_broker import DEPLOY, PASSWORDS, BrokerProcess

from schedd.daemon.mqtt import default_client_id

WAIT = 20.0  # seconds: a deadline to fail by, not a timing that is asserted
TOKENS = "op-token operator admin\nalice-token user alice\nbob-token user bob\n"


def _serve(broker: BrokerProcess, name: str, db: Path, tokens: Path) -> DaemonProc:
    d = DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                   "--tokens", str(tokens), "--state-db", str(db),
                   "--mqtt", f"{broker.host}:{broker.port}", "--mqtt-user", "schedd",
                   "--mqtt-password-file", str(DEPLOY / "schedd.mqtt-password"))
    wait_until("the daemon's MQTT subscription", lambda: "mqtt connected" in d.log())
    return d


async def _take_over(broker: BrokerProcess, user: str, client_ids: list[str]) -> None:
    """`user` connects with each of `client_ids` as `mosquitto_sub -i ID` would (a clean
    session), then as a client resuming a session (clean_session=False) that subscribes
    to the daemon's command topics."""
    for client_id in client_ids:
        for clean in (True, False):
            async with aiomqtt.Client(broker.host, broker.port, identifier=client_id,
                                      username=user, password=PASSWORDS[user],
                                      clean_session=clean) as c:
                await c.subscribe("schedd/+/cmd/+/+", qos=1)


async def _publish(broker: BrokerProcess, user: str, topic: str, body: dict) -> None:
    async with aiomqtt.Client(broker.host, broker.port, username=user,
                              password=PASSWORDS[user]) as c:
        await c.publish(topic, json.dumps(body), qos=1, timeout=WAIT)


def test_another_login_cannot_take_the_daemons_session(secured_broker: BrokerProcess,
                                                       tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    db = tmp_path / "journal.sqlite"
    name = f"id{uuid.uuid4().hex[:8]}"
    ids = [default_client_id(name), "schedd"]  # the daemon's id, and its login

    d = _serve(secured_broker, name, db, tokens)
    try:
        # While the daemon is connected: alice's attempts do not close its connection.
        asyncio.run(_take_over(secured_broker, "alice", ids))
        asyncio.run(_publish(secured_broker, "bob", f"schedd/{name}/cmd/bob/notice",
                             {"job_id": 30, "expected_arrival": 900, "nodes": 2,
                              "walltime": 600, "request_id": "bob-30"}))
        wait_until("bob's notice", lambda: 30 in noticed_job_ids(d, "bob-token"), WAIT)
        assert d.log().count("mqtt connected") == 1, d.log()
        assert "mqtt disconnected" not in d.log()
    finally:
        assert d.stop() == 0, d.log()

    # While it is down: bob's notice is queued in its session; alice tries again.
    asyncio.run(_publish(secured_broker, "bob", f"schedd/{name}/cmd/bob/notice",
                         {"job_id": 31, "expected_arrival": 900, "nodes": 2,
                          "walltime": 600, "request_id": "bob-31"}))
    asyncio.run(_take_over(secured_broker, "alice", ids))

    d = _serve(secured_broker, name, db, tokens)
    try:
        wait_until("the notice queued while the daemon was down",
                   lambda: 31 in noticed_job_ids(d, "bob-token"), WAIT)
    finally:
        assert d.stop() == 0, d.log()
