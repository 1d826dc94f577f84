"""The daemon's MQTT bus: job events out, per-job control commands out, commands in.

The bus never blocks the daemon and never raises into it. `publish_event` and
`publish_control` only encode the message and append it to an in-memory queue; a
publisher task drains the queue while the broker is connected. When the broker is
down, events are dropped (`WatchEvents` still has them, resumable) and control
commands are kept, up to `max_queue`, and delivered in order after the reconnect,
because a job agent that misses a checkpoint request gets killed at the deadline.

Commands in come under the same roles and ownership rules as gRPC. MQTT carries no
token, so the identity is the topic: `schedd/<cluster>/cmd/<user>/<command>`, which the
broker's ACL lets only broker user <user> publish to (deploy/mosquitto.acl). The bus maps
<user> to the tokens file's principal (`TokenStore.principal_of_user`) and hands both to
the handler; anything it cannot attribute is refused and counted in
`schedd_mqtt_rejected_total{reason}`.

Topics (docs/mqtt.md):
    schedd/<cluster>/events/<kind>          events, QoS 0
    schedd/<cluster>/jobs/<job_id>/control  control commands, QoS 1
    schedd/<cluster>/cmd/<user>/notice      advance notices in (subscribed, QoS 1)
    schedd/<cluster>/rejected/<user>        their rejections, QoS 1
    schedd/<cluster>/notices                anonymous notices in: only without tokens
    schedd/<cluster>/notices/rejected       their rejections, QoS 1

Notices are at-least-once end to end (docs/mqtt.md, "Delivery of notices"): the bus's
session is persistent (clean_session=False, a stable client id, `schedd-<cluster>` by
default; the shipped broker takes the login as the id instead, so that no other login
can take the session), so the broker keeps notices published while the daemon is down,
and a notice is acknowledged (PUBACK) only once the handler has answered, that is after
it is journalled or refused; a daemon killed before that gets it again from the broker.
A notice with a `request_id` is applied once: the handler answers a repeat with the same
content with `Duplicate` (acknowledged, logged, not applied again) and a reuse of the id
for another notice with a refusal. Without one, a redelivered notice is applied again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiomqtt
import paho.mqtt.client as paho
import structlog

from schedd.daemon.auth import ANONYMOUS_OPERATOR, Principal, TokenStore
from schedd.daemon.notice_payload import PayloadError, decode_notice

if TYPE_CHECKING:
    from schedd.daemon.metrics import DaemonMetrics

log = structlog.get_logger("schedd.mqtt")


@dataclass(frozen=True)
class Refusal:
    """A handler's refusal: `reason` labels schedd_mqtt_rejected_total, `error` is the
    sentence published back. A plain string from a handler means reason "invalid"."""

    reason: str
    error: str


@dataclass(frozen=True)
class Duplicate:
    """A handler's answer to a notice whose `request_id` its user already used for the
    same notice (a publisher's retry, or QoS 1 delivering it again): acknowledged, not
    applied again. `stimulus_id` is the first notice's."""

    stimulus_id: int


# notice: (payload, who published it) -> None when accepted, a Duplicate when accepted
# before, else why not.
NoticeHandler = Callable[[dict[str, Any], Principal],
                         Awaitable["str | Refusal | Duplicate | None"]]

COMMANDS = ("notice",)  # the <command> levels of schedd/<cluster>/cmd/<user>/<command>
# Refusal reasons: metrics.MQTT_REJECT_REASONS lists them (their series start at 0).

BACKOFF_MIN = 0.25
KEEPALIVE = 15  # seconds; a silent dead broker is noticed within about 2 x this
OP_TIMEOUT = 10.0  # seconds for CONNACK, SUBACK, PUBACK
RAW_LIMIT = 200  # characters of a rejected payload echoed back
# Tests only: kill -9 the daemon at one point of handling a notice, to check that the
# broker gives it again ("received": taken from the connection, not yet handled;
# "handled": journalled or refused, not yet acknowledged). tests/test_mqtt_notice_durable.py
CRASH_ENV = "SCHEDD_MQTT_CRASH_AT"
CRASH_POINTS = ("received", "handled")


def encode(obj: Any) -> bytes:
    """The bus's wire format: compact, key-sorted JSON."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True,
                      default=_json_default).encode()


def _json_default(obj: Any) -> Any:
    # numpy scalars from the engine's arrays: turn them into plain numbers.
    item = getattr(obj, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


@dataclass
class _Outgoing:
    topic: str
    payload: bytes
    qos: int
    kind: str  # metric label: event, control or rejection
    durable: bool  # kept across an outage (control) or dropped (events, rejections)
    retried: bool = False


class MqttBus:
    """Publishes events and control commands; feeds advance notices to `on_notice`."""

    def __init__(self, *, host: str, port: int, cluster: str, metrics: DaemonMetrics,
                 on_notice: NoticeHandler | None = None, max_queue: int = 10_000,
                 client_id: str | None = None, backoff_max: float = 10.0,
                 tokens: TokenStore | None = None, username: str | None = None,
                 password: str | None = None):
        if max_queue < 1:
            raise ValueError("max_queue must be at least 1")
        self.host = host
        self.port = port
        self.cluster = cluster
        self.metrics = metrics
        self.on_notice = on_notice
        self.max_queue = max_queue
        # Stable: the broker keeps the session (subscriptions, undelivered notices) under
        # this id, and a restarted daemon resumes it. Two daemons on one broker need two.
        self.client_id = client_id or default_client_id(cluster)
        self.backoff_max = max(backoff_max, BACKOFF_MIN)
        self.prefix = f"schedd/{cluster}"
        self.notice_topic = f"{self.prefix}/notices"  # anonymous: only without tokens
        self.rejected_topic = f"{self.prefix}/notices/rejected"
        self.command_topic = f"{self.prefix}/cmd/+/+"  # <user>/<command>
        self.tokens = tokens if tokens is not None else TokenStore(None)
        self.username = username  # the broker login (password_file), not a token user
        self.password = password
        self.notices_rejected = 0  # no Prometheus series for these; tests and logs read it
        self.notices_duplicate = 0  # repeats acknowledged, not applied again (no series either)
        self._out: deque[_Outgoing] = deque()
        self._wakeup = asyncio.Event()
        self._connected = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        crash_at = os.environ.get(CRASH_ENV, "")
        self._crash_at = crash_at if crash_at in CRASH_POINTS else ""

    # -- the daemon's side: non-blocking, never raises --------------------------------

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_connected(self, timeout: float) -> bool:
        """True once connected (and subscribed), False if `timeout` seconds pass first."""
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def publish_event(self, event: dict[str, Any]) -> None:
        try:
            kind = str(event["kind"])
            if not kind or any(c in kind for c in "+#\0"):
                raise ValueError(f"event kind {kind!r} cannot be a topic level")
            msg = _Outgoing(f"{self.prefix}/events/{kind}", encode(event), 0, "event",
                            durable=False)
        except Exception as exc:
            self._fail("event not encodable", exc)
            return
        self._submit(msg)

    def publish_control(self, job_id: int, command: dict[str, Any]) -> None:
        try:
            msg = _Outgoing(f"{self.prefix}/jobs/{int(job_id)}/control", encode(command), 1,
                            "control", durable=True)
        except Exception as exc:
            self._fail("control command not encodable", exc)
            return
        self._submit(msg)

    def _submit(self, msg: _Outgoing) -> None:
        try:
            loop = self._loop
            if loop is not None and threading.get_ident() != self._loop_thread:
                # Called from a worker thread: the queue belongs to the loop's thread.
                loop.call_soon_threadsafe(self._enqueue, msg)
            else:
                self._enqueue(msg)
        except Exception as exc:  # e.g. the loop is closed: the daemon is going away
            self._fail("could not queue message", exc)

    def _enqueue(self, msg: _Outgoing) -> None:
        if not msg.durable and not self.connected:
            self.metrics.mqtt_publish_failures.inc()
            return
        if len(self._out) >= self.max_queue:
            self._out.popleft()
            self.metrics.mqtt_publish_failures.inc()
        self._out.append(msg)
        self._wakeup.set()

    def _fail(self, what: str, exc: BaseException) -> None:
        self.metrics.mqtt_publish_failures.inc()
        log.warning("mqtt publish failed", what=what, error=str(exc))

    # -- the connection -------------------------------------------------------------

    async def run(self) -> None:
        """Connect, serve, reconnect with exponential backoff; returns only when cancelled."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        backoff = BACKOFF_MIN
        down_logged = False
        try:
            while True:
                # A persistent session: the broker keeps our subscriptions and queues
                # QoS 1 notices while we are away (down, restarting, killed), and sends
                # again those we did not acknowledge.
                client = aiomqtt.Client(self.host, self.port, identifier=self.client_id,
                                        username=self.username, password=self.password,
                                        keepalive=KEEPALIVE, timeout=OP_TIMEOUT,
                                        clean_session=False)
                # Before connecting: the broker sends queued notices right after CONNACK.
                _paho(client).manual_ack_set(True)
                try:
                    async with client:
                        if self.on_notice is not None:
                            await client.subscribe(self.command_topic, qos=1)
                            await client.subscribe(self.notice_topic, qos=1)
                        self._set_connected()
                        log.info("mqtt connected", host=self.host, port=self.port,
                                 client_id=self.client_id, queued=len(self._out))
                        down_logged = False
                        backoff = BACKOFF_MIN
                        await self._serve(client)
                except Exception as exc:
                    was_connected = self.connected
                    self._set_disconnected()
                    # One line per transition: lost, or first failure to connect.
                    if not isinstance(exc, aiomqtt.MqttError):
                        log.exception("mqtt bus error; reconnecting", host=self.host,
                                      port=self.port)
                    elif was_connected:
                        log.warning("mqtt disconnected", host=self.host, port=self.port,
                                    error=str(exc), retry_max=self.backoff_max)
                    elif not down_logged:
                        log.warning("mqtt broker unavailable; retrying", host=self.host,
                                    port=self.port, error=str(exc),
                                    retry_max=self.backoff_max)
                    down_logged = True
                finally:
                    _retrieve_disconnect_error(client)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.backoff_max)
        finally:
            if self.connected:
                log.info("mqtt closed", host=self.host, port=self.port)
            self._set_disconnected()

    def _set_connected(self) -> None:
        self._connected.set()
        if self._out:
            self._wakeup.set()

    def _set_disconnected(self) -> None:
        self._connected.clear()
        # Events accepted while connected but not yet sent are lost with the connection.
        kept = deque(m for m in self._out if m.durable)
        dropped = len(self._out) - len(kept)
        if dropped:
            self.metrics.mqtt_publish_failures.inc(dropped)
        self._out = kept

    async def _serve(self, client: aiomqtt.Client) -> None:
        """Read and publish until one of them fails (the connection is gone)."""
        tasks = [asyncio.create_task(self._read(client), name="mqtt-read"),
                 asyncio.create_task(self._publish(client), name="mqtt-publish")]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
        errors = [t.exception() for t in tasks if not t.cancelled()]
        for error in errors:
            if error is not None:
                raise error
        raise aiomqtt.MqttError("MQTT session ended")

    async def _publish(self, client: aiomqtt.Client) -> None:
        while True:
            while not self._out:
                self._wakeup.clear()
                await self._wakeup.wait()
            msg = self._out.popleft()
            try:
                await client.publish(msg.topic, msg.payload, qos=msg.qos, timeout=OP_TIMEOUT)
            except asyncio.CancelledError:
                # Cut off by a disconnect or shutdown: QoS 1 is at-least-once, send again.
                if msg.durable:
                    self._out.appendleft(msg)
                raise
            except Exception as exc:
                self.metrics.mqtt_publish_failures.inc()
                if msg.durable and not msg.retried:
                    msg.retried = True
                    self._out.appendleft(msg)
                if isinstance(exc, aiomqtt.MqttError):
                    raise  # the connection is broken: reconnect, then retry
                log.warning("mqtt publish failed", topic=msg.topic, error=str(exc))
                continue
            self.metrics.mqtt_published.labels(kind=msg.kind).inc()

    async def _read(self, client: aiomqtt.Client) -> None:
        """Handle the messages one at a time, in order, and acknowledge each once it is
        handled: an accepted notice is then journalled (committed), a refused one logged
        and its rejection queued. One at a time also keeps the PUBACKs in the order of
        the PUBLISHes, which MQTT 3.1.1 requires (section 4.6); paho's `ack` sends at
        once, so the order is ours to keep. Cancelled (shutdown, lost connection) before
        the acknowledgement, a notice stays the broker's, which sends it again on the next
        connection; its `request_id` makes that repeat harmless.

        Whatever else handling one message raises stays with that message (`_contain`):
        it is refused, counted and acknowledged like any refusal. Let through, it would
        end the connection before the PUBACK, and the persistent session would give the
        same message back on every reconnect, ahead of every later notice (issue 34)."""
        # Also runs without a notice handler: it is what notices a lost connection.
        async for message in client.messages:
            if self.on_notice is not None:
                try:
                    await self._handle_message(client, message)
                except Exception as exc:
                    self._contain(message, exc)
            # Anything else (a subscription a former run left in the session) is
            # acknowledged too, or it would hold up the ones after it.
            _ack(client, message)

    async def _handle_message(self, client: aiomqtt.Client, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        if message.topic.matches(self.command_topic):
            await self._crash_point("received", client)
            user, command = topic.split("/")[-2:]
            await self._handle_command(user, command, message.payload)
            await self._crash_point("handled", client)
        elif message.topic.matches(self.notice_topic):
            await self._crash_point("received", client)
            await self._handle_anonymous(message.payload)
            await self._crash_point("handled", client)

    def _contain(self, message: aiomqtt.Message, exc: Exception) -> None:
        """Refuse a message whose handling raised (a bug, or a payload nothing foresaw):
        reason `internal`, on the rejected topic of the user its topic names. Raises
        nothing itself: the message is acknowledged whatever happens here."""
        try:
            topic = str(message.topic)
            log.error("mqtt message handling failed; refused and acknowledged", topic=topic,
                      payload=_text(message.payload)[:RAW_LIMIT], exc_info=exc)
            user, rejected_topic = "", self.rejected_topic
            if message.topic.matches(self.command_topic):
                user = topic.split("/")[-2]
                rejected_topic = f"{self.prefix}/rejected/{user}"
            self._reject(Refusal("internal", "internal error handling the notice "
                                 f"({type(exc).__name__})."),
                         _text(message.payload), rejected_topic, user)
        except Exception:  # even the log failed: count what was not sent, move on
            with contextlib.suppress(Exception):
                self.metrics.mqtt_publish_failures.inc()

    async def _crash_point(self, point: str, client: aiomqtt.Client) -> None:
        """SCHEDD_MQTT_CRASH_AT (tests only): kill -9 ourselves here. First let the
        connection write what it has queued, as it would while the journal commits: an
        acknowledgement sent on arrival (the bus before manual acks) goes out now."""
        if self._crash_at != point:
            return
        while _paho(client).want_write():
            await asyncio.sleep(0.001)
        log.warning("mqtt crash point: kill -9", point=point)
        os.kill(os.getpid(), signal.SIGKILL)

    async def _handle_command(self, user: str, command: str, payload: Any) -> None:
        """`cmd/<user>/<command>`: the broker's ACL vouches that <user> published it."""
        rejected_topic = f"{self.prefix}/rejected/{user}"
        principal = self.tokens.principal_of_user(user)
        if principal is None:
            self._reject(Refusal("unknown_user", f"{user!r} is not a user of this daemon "
                                 "(no token in its tokens file)."),
                         _text(payload), rejected_topic, user)
        elif command not in COMMANDS:
            self._reject(Refusal("unknown_command", f"unknown command {command!r}; "
                                 f"expected one of: {', '.join(COMMANDS)}."),
                         _text(payload), rejected_topic, user)
        else:
            await self._handle_notice(payload, principal, rejected_topic)

    async def _handle_anonymous(self, payload: Any) -> None:
        """`notices`: no identity, so only a daemon without tokens takes it (as gRPC
        without tokens trusts every caller as an operator)."""
        if self.tokens.enabled:
            self._reject(Refusal("anonymous", f"{self.notice_topic} carries no identity and "
                                 "this daemon checks tokens; publish to "
                                 f"{self.prefix}/cmd/<user>/notice."),
                         _text(payload), self.rejected_topic, "")
            return
        await self._handle_notice(payload, ANONYMOUS_OPERATOR, self.rejected_topic)

    async def _handle_notice(self, payload: Any, principal: Principal,
                             rejected_topic: str) -> None:
        raw = _text(payload)
        try:
            obj = decode_notice(_bytes(payload))
        except PayloadError as exc:
            self._reject(Refusal("malformed", str(exc)), raw, rejected_topic, principal.user)
            return
        assert self.on_notice is not None
        # A handler that raises is refused by `_contain`, as anything else that raises.
        outcome = await self.on_notice(obj, principal)
        if outcome is None:
            # Counted in schedd_notices_total by the daemon when it applies the notice.
            log.info("mqtt notice accepted", job_id=obj.get("job_id"), user=principal.user,
                     request_id=obj.get("request_id"))
            return
        if isinstance(outcome, Duplicate):
            # Not an error: the publisher retried (or the broker delivered it twice).
            self.notices_duplicate += 1
            log.info("mqtt notice duplicate", job_id=obj.get("job_id"), user=principal.user,
                     request_id=obj.get("request_id"), stimulus_id=outcome.stimulus_id)
            return
        if isinstance(outcome, str):
            outcome = Refusal("invalid", outcome)
        self._reject(outcome, raw, rejected_topic, principal.user)

    def _reject(self, refusal: Refusal, raw: str, topic: str, user: str) -> None:
        self.notices_rejected += 1
        self.metrics.mqtt_rejected.labels(refusal.reason).inc()
        log.warning("mqtt notice rejected", reason=refusal.reason, user=user,
                    error=refusal.error, payload=raw[:RAW_LIMIT])
        try:
            payload = encode({"error": refusal.error, "payload": raw[:RAW_LIMIT],
                              "reason": refusal.reason})
        except Exception as exc:
            self._fail("rejection not encodable", exc)
            return
        self._enqueue(_Outgoing(topic, payload, 1, "rejection", durable=False))


def _text(payload: Any) -> str:
    """The payload as text for logs and rejections, which show its first RAW_LIMIT
    characters: its first 4 x RAW_LIMIT bytes (UTF-8 takes at most 4 a character; bad
    UTF-8 replaced)."""
    if isinstance(payload, bytes | bytearray):
        return bytes(payload[:4 * RAW_LIMIT]).decode("utf-8", errors="replace")
    return "" if payload is None else str(payload)


def _bytes(payload: Any) -> bytes:
    """The payload as received (paho gives bytes; aiomqtt's type also allows others)."""
    if isinstance(payload, bytes | bytearray):
        return bytes(payload)
    return b"" if payload is None else str(payload).encode()


def default_client_id(cluster: str) -> str:
    """The bus's MQTT client id unless given one: one per cluster name, the same on every
    start, so that the daemon resumes its broker session (docs/mqtt.md)."""
    return f"schedd-{cluster}"


def _paho(client: aiomqtt.Client) -> paho.Client:
    # aiomqtt 2.5.1 has no manual acknowledgement (empicano/aiomqtt#345, PR #346 not
    # merged), but its paho-mqtt client has (`manual_ack_set`, `ack`, paho >= 2.0): the
    # one place the bus reaches under aiomqtt's public API.
    return client._client  # noqa: SLF001


def _ack(client: aiomqtt.Client, message: aiomqtt.Message) -> None:
    """PUBACK `message` (QoS 1; QoS 0 needs none). On a connection that is gone it does
    nothing: the broker sends the message again on the next one."""
    if message.qos == 0:
        return
    rc: object
    try:
        rc = _paho(client).ack(message.mid, message.qos)
    except Exception as exc:
        rc = exc
    if rc != paho.MQTT_ERR_SUCCESS:
        log.debug("mqtt ack not sent", mid=message.mid, error=str(rc))


def _retrieve_disconnect_error(client: aiomqtt.Client) -> None:
    # aiomqtt stores an unexpected disconnect as the exception of a private future; if
    # the reader was cancelled before it looked, asyncio would log "Future exception was
    # never retrieved" when the client is collected.
    fut = getattr(client, "_disconnected", None)
    if isinstance(fut, asyncio.Future) and fut.done() and not fut.cancelled():
        with contextlib.suppress(Exception):
            fut.exception()
