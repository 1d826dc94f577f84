"""Issue 17 follow-up: an MQTT advance notice with a `request_id` is applied once.

A publisher that retries (its PUBACK was lost, or it timed out and published again)
delivers the same notice twice. The daemon answers the repeat as the gRPC path does: the
same request id with the same notice is acknowledged and not journalled again (also after
a restart on the same journal); with a different notice it is refused on the rejected
topic. Request ids are per principal and shared with gRPC `AdvanceNotice`.

Real daemon subprocesses and a real broker (tests/mqtt_broker.py); the tests wait for
what they check (a journal row, a rejection), never for a fixed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import aiomqtt
import pytest
from daemon_proc import DaemonProc, read_events
from daemon_proc import wait_until as _until

from schedd.v1 import scheduler_pb2 as pb

WAIT = 20.0  # seconds: a deadline to fail by, not a timing that is asserted


def _name() -> str:
    return f"idem{uuid.uuid4().hex[:8]}"


def _subscribed(d: DaemonProc) -> None:
    """The daemon logs `mqtt connected` once it has subscribed to the notice topics."""
    _until("the daemon's MQTT subscription", lambda: "mqtt connected" in d.log())


def _notices(db: Path, job_id: int) -> list[tuple[int, str | None, str, dict]]:
    """The journal's notice stimuli for `job_id`: (seq, request_id, owner, body)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute("SELECT seq, request_id, owner, body FROM stimuli "
                           "WHERE kind = 'notice' ORDER BY seq").fetchall()
    finally:
        con.close()
    out = []
    for seq, rid, owner, body in rows:
        obj = json.loads(body)
        if obj["job_id"] == job_id:
            out.append((seq, rid, owner, obj))
    return out


def _exchange(host: str, port: int, messages: list[tuple[str, dict]], rejected_topic: str,
              done: Callable[[list[dict]], bool]) -> list[dict]:
    """Subscribe to `rejected_topic`, publish `messages` (topic, payload) in order at QoS 1
    from one client, then collect rejections until `done(rejections)` (checked after each
    one, and every 50 ms, so that it can also look at the journal)."""

    async def main() -> list[dict]:
        got: list[dict] = []
        async with aiomqtt.Client(host, port, identifier=f"t-{uuid.uuid4().hex[:8]}") as c:
            await c.subscribe(rejected_topic, qos=1)
            for topic, payload in messages:
                await c.publish(topic, json.dumps(payload), qos=1)

            async def read() -> None:
                async for m in c.messages:
                    got.append(json.loads(m.payload))

            reader = asyncio.create_task(read())
            try:
                deadline = time.monotonic() + WAIT
                while not done(got):
                    if time.monotonic() > deadline:
                        raise AssertionError(f"timed out; rejections so far: {got}")
                    await asyncio.sleep(0.05)
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        return got

    return asyncio.run(main())


NOTICE = {"job_id": 77, "expected_arrival": 900.0, "nodes": 4, "walltime": 600.0}
SENTINEL = {"job_id": 99, "expected_arrival": 900.0, "nodes": 1, "walltime": 60.0}


def _serve(name: str, host: str, port: int, db: Path, *extra: str,
           env: dict[str, str] | None = None) -> DaemonProc:
    return DaemonProc("--clock", "lockstep", "--cluster", "nodes:8", "--name", name,
                      "--mqtt", f"{host}:{port}", "--state-db", str(db), *extra, env=env)


def test_a_repeated_notice_is_applied_once(mqtt_broker: tuple[str, int],
                                           tmp_path: Path) -> None:
    """The same notice twice with one request id: one journal row, one `notice` event,
    no rejection. A sentinel notice published after them (same client, same topic, so
    the broker keeps the order) shows that the daemon has handled both."""
    host, port = mqtt_broker
    name, db = _name(), tmp_path / "journal.db"
    topic = f"schedd/{name}/notices"
    with _serve(name, host, port, db) as d:
        _subscribed(d)
        rejected = _exchange(
            host, port,
            [(topic, {**NOTICE, "request_id": "n-77"}), (topic, {**NOTICE, "request_id": "n-77"}),
             (topic, {**SENTINEL, "request_id": "n-99"})],
            f"{topic}/rejected", lambda got: bool(_notices(db, 99)))
        rows = _notices(db, 77)
        events = read_events(d.stub(), pb.WatchEventsRequest(from_seq=1, kinds=["notice"]), 3)
        log = d.log()
    assert rejected == []
    assert [(rid, owner) for _, rid, owner, _ in rows] == [("operator/n-77", "operator")]
    assert [e.job_id for e in events] == [77, 99]
    assert "mqtt notice duplicate" in log


def test_a_reused_request_id_with_another_notice_is_refused(mqtt_broker: tuple[str, int],
                                                           tmp_path: Path) -> None:
    """Same request id, different notice: refused on the rejected topic with a sentence;
    the first notice stands. A notice without a request id is still accepted each time
    (at-least-once, docs/mqtt.md)."""
    host, port = mqtt_broker
    name, db = _name(), tmp_path / "journal.db"
    topic = f"schedd/{name}/cmd/alice/notice"
    with _serve(name, host, port, db) as d:
        _subscribed(d)
        rejected = _exchange(
            host, port,
            [(topic, {**NOTICE, "request_id": "r1"}),
             (topic, {**NOTICE, "nodes": 8, "request_id": "r1"}),
             (topic, SENTINEL), (topic, SENTINEL)],
            f"schedd/{name}/rejected/alice",
            lambda got: bool(got) and len(_notices(db, 99)) == 2)
        rows = _notices(db, 77)
    assert len(rejected) == 1, rejected
    assert rejected[0]["reason"] == "invalid"
    assert "request_id 'r1'" in rejected[0]["error"]
    assert "different request" in rejected[0]["error"]
    assert rejected[0]["error"].endswith(".")
    assert json.loads(rejected[0]["payload"])["nodes"] == 8
    assert [(rid, body["nodes"]) for _, rid, _, body in rows] == [("alice/r1", 4)]


def test_request_ids_are_per_user_and_shared_with_grpc(mqtt_broker: tuple[str, int],
                                                       tmp_path: Path) -> None:
    """As over gRPC, a request id is the user's: bob may use alice's id for his own
    notice. And it is one id whichever way it came: alice retrying her MQTT notice over
    gRPC `AdvanceNotice` gets the first notice's stimulus id, and nothing new is
    journalled."""
    host, port = mqtt_broker
    name, db = _name(), tmp_path / "journal.db"
    tokens = tmp_path / "tokens"
    tokens.write_text("alice-token user alice\nbob-token user bob\n")
    bobs = {**NOTICE, "job_id": 78, "nodes": 2}
    with _serve(name, host, port, db, "--tokens", str(tokens)) as d:
        _subscribed(d)
        rejected = _exchange(
            host, port,
            [(f"schedd/{name}/cmd/alice/notice", {**NOTICE, "request_id": "same"}),
             (f"schedd/{name}/cmd/bob/notice", {**bobs, "request_id": "same"})],
            f"schedd/{name}/rejected/+", lambda got: bool(got) or bool(_notices(db, 78)))
        first = _notices(db, 77)
        answer = d.stub().AdvanceNotice(
            pb.AdvanceNoticeRequest(request_id="same", **NOTICE),
            metadata=(("authorization", "Bearer alice-token"),), timeout=10)
        again = _notices(db, 77)
        bob = _notices(db, 78)
    assert rejected == []
    assert [(rid, owner) for _, rid, owner, _ in first] == [("alice/same", "alice")]
    assert [(rid, owner) for _, rid, owner, _ in bob] == [("bob/same", "bob")]
    assert answer.stimulus_id == first[0][0]
    assert again == first


@pytest.mark.parametrize("compacted", [False, True], ids=["journal", "compacted"])
def test_a_notice_repeated_after_a_restart_is_applied_once(mqtt_broker: tuple[str, int],
                                                           tmp_path: Path,
                                                           compacted: bool) -> None:
    """The request id is journalled with the notice: a daemon killed after journalling
    it, restarted on the same journal, neither applies the repeat nor takes the id for
    another notice. `compacted`: with a snapshot after every stimulus the first notice
    has (normally) left the `stimuli` table and its id is answered from `requests`."""
    host, port = mqtt_broker
    name, db = _name(), tmp_path / "journal.db"
    topic = f"schedd/{name}/notices"
    env = {"SCHEDD_SNAPSHOT_EVERY": "1" if compacted else "1000000"}
    notice = {**NOTICE, "request_id": "boot-77"}
    d = _serve(name, host, port, db, env=env)
    try:
        _subscribed(d)
        _exchange(host, port, [(topic, notice), (topic, {**SENTINEL, "job_id": 98})],
                  f"{topic}/rejected", lambda got: bool(_notices(db, 98)))
        # Applied (and marked so in the journal) before its event is published.
        applied = read_events(d.stub(), pb.WatchEventsRequest(from_seq=1, kinds=["notice"]),
                              2)
        before = _notices(db, 77)
        d.kill()  # kill -9: as if the PUBACK never reached the publisher
    finally:
        d.stop()
    assert [e.job_id for e in applied] == [77, 98]
    if compacted:
        assert [rid for _, rid, _, _ in before] in ([], ["operator/boot-77"])
    else:
        assert [rid for _, rid, _, _ in before] == ["operator/boot-77"]
    with _serve(name, host, port, db, env=env) as d2:
        _subscribed(d2)
        rejected = _exchange(
            host, port,
            [(topic, notice), (topic, {**notice, "walltime": 1200.0}),
             (topic, {**SENTINEL, "request_id": "boot-99"})],
            f"{topic}/rejected", lambda got: bool(got) and bool(_notices(db, 99)))
        after = _notices(db, 77)
        events = read_events(d2.stub(), pb.WatchEventsRequest(from_seq=1, kinds=["notice"]),
                             3, timeout=2.0)
        log = d2.log()
    assert [r["reason"] for r in rejected] == ["invalid"], rejected
    assert "request_id 'boot-77'" in rejected[0]["error"]
    assert after == before  # nothing new for job 77
    assert [e.job_id for e in events] == [99]  # recovery publishes no old events
    assert "mqtt notice duplicate" in log
