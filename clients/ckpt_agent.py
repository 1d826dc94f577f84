"""schedd-ckpt-agent: a stand-in for the jobs' checkpoint agents.

It listens for the daemon's per-job control commands on MQTT
(`schedd/<cluster>/jobs/+/control`) and answers each `checkpoint` command by calling the
daemon's gRPC `CheckpointDone` once the checkpoint would be written: after `--delay`
wall seconds, or by default after the modelled checkpoint time `(deadline - time) /
--speedup`. `--ignore` leaves a fraction of the requests unanswered so the daemon's
checkpoint timeout gets exercised. docs/mqtt.md describes the messages.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import uuid
from collections.abc import Sequence
from typing import Any

import aiomqtt
import grpc
import grpc.aio
import structlog

from schedd.v1 import scheduler_pb2, scheduler_pb2_grpc

log = structlog.get_logger("schedd.ckpt_agent")

BACKOFF_MIN = 0.25
MQTT_BACKOFF_MAX = 10.0
RPC_BACKOFF_MAX = 5.0
RPC_RETRY_FOR = 30.0  # wall seconds of UNAVAILABLE before a request is given up
RPC_TIMEOUT = 10.0
KEEPALIVE = 15

DROP_CODES = {grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND}
RETRY_CODES = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


def host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def positive(text: str) -> float:
    value = non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="schedd-ckpt-agent",
        description="Answer the schedd daemon's checkpoint requests (MQTT topic "
                    "schedd/<cluster>/jobs/+/control) with gRPC CheckpointDone calls, "
                    "after the modelled checkpoint time or a fixed delay.",
        epilog="Example: schedd-ckpt-agent --cluster mira --speedup 60 "
               "--server 127.0.0.1:50051 --token $SCHEDD_TOKEN")
    parser.add_argument("--cluster", required=True,
                        help="cluster name, the <cluster> level of the MQTT topics")
    parser.add_argument("--mqtt", type=host_port, default=("127.0.0.1", 1883),
                        metavar="HOST:PORT", help="MQTT broker (default 127.0.0.1:1883)")
    parser.add_argument("--mqtt-user", metavar="NAME",
                        help="broker login, for a broker that refuses anonymous clients "
                             "(deploy/mosquitto.conf)")
    parser.add_argument("--mqtt-password-file", metavar="FILE",
                        help="file whose first line is the --mqtt-user password")
    parser.add_argument("--server", default="127.0.0.1:50051", metavar="HOST:PORT",
                        help="the daemon's gRPC address (default 127.0.0.1:50051)")
    parser.add_argument("--token", help="bearer token, sent as 'authorization: Bearer "
                        "TOKEN' metadata")
    parser.add_argument("--tls-ca", metavar="FILE", help="PEM root certificate(s): use "
                        "TLS to the daemon and trust these")
    delay = parser.add_mutually_exclusive_group()
    delay.add_argument("--delay", type=non_negative, metavar="SECONDS",
                       help="answer after this many wall seconds (default: the modelled "
                            "delay, (deadline - time) / speedup)")
    delay.add_argument("--speedup", type=positive, default=1.0, metavar="K",
                       help="virtual seconds per wall second of the daemon's clock, for "
                            "the modelled delay (default 1)")
    parser.add_argument("--ignore", type=fraction, default=0.0, metavar="FRACTION",
                        help="leave this fraction of the requests unanswered, to "
                             "exercise the daemon's checkpoint timeout (default 0)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the --ignore draws (default 0)")
    parser.add_argument("--once", action="store_true",
                        help="exit after answering one request (for tests)")
    parser.add_argument("--log-format", choices=("json", "console"), default="console",
                        help="log lines as JSON or for people (default console)")
    return parser


def configure_logging(fmt: str) -> None:
    renderer: Any = (structlog.processors.JSONRenderer() if fmt == "json"
                     else structlog.dev.ConsoleRenderer())
    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True),
                    structlog.processors.format_exc_info if fmt == "json"
                    else structlog.dev.set_exc_info,
                    renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


class Agent:
    """Turns control messages into (delayed) CheckpointDone calls."""

    def __init__(self, args: argparse.Namespace, stub: Any,
                 metadata: tuple[tuple[str, str], ...]):
        self.args = args
        self.stub = stub
        self.metadata = metadata
        self.rng = random.Random(args.seed)
        self.inflight: set[str] = set()  # request ids being answered (QoS 1 duplicates)
        self.tasks: set[asyncio.Task[None]] = set()
        self.answered = asyncio.Event()  # for --once
        self.count = 0

    def on_message(self, topic: str, payload: Any) -> None:
        try:
            cmd = json.loads(payload)
            if not isinstance(cmd, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            log.warning("bad control message", topic=topic, error=str(exc))
            return
        if cmd.get("command") != "checkpoint":
            return
        try:
            job_id = int(cmd.get("job_id", topic.split("/")[3]))
            time = float(cmd["time"])
            deadline = float(cmd.get("deadline", -1))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            log.warning("bad checkpoint request", topic=topic, error=repr(exc))
            return
        request_id = f"ckpt-{job_id}-{time}"  # the same for a redelivered request
        if request_id in self.inflight:
            return
        if self.rng.random() < self.args.ignore:
            log.info("checkpoint request ignored", job_id=job_id, request_id=request_id)
            return
        if self.args.delay is not None:
            delay = self.args.delay
        else:
            delay = max(deadline - time, 0.0) / self.args.speedup if deadline >= 0 else 0.0
        self.inflight.add(request_id)
        task = asyncio.create_task(self.answer(job_id, request_id, delay))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def answer(self, job_id: int, request_id: str, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            try:
                outcome = await self.call(job_id, request_id)
            except Exception as exc:  # a bad --server or --tls-ca: keep serving the rest
                log.exception("checkpoint answer failed", job_id=job_id)
                outcome = f"failed ({type(exc).__name__})"
            log.info("checkpoint answered", job_id=job_id, request_id=request_id,
                     delay=round(delay, 3), outcome=outcome)
        finally:
            self.inflight.discard(request_id)
        self.count += 1
        self.answered.set()

    async def call(self, job_id: int, request_id: str) -> str:
        request = scheduler_pb2.CheckpointDoneRequest(request_id=request_id, job_id=job_id)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + RPC_RETRY_FOR
        backoff = BACKOFF_MIN
        while True:
            try:
                response = await self.stub.CheckpointDone(request, metadata=self.metadata,
                                                          timeout=RPC_TIMEOUT)
                return f"done (stimulus {response.stimulus_id})"
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
                if code in DROP_CODES:
                    # The job finished, was killed at the deadline or is gone.
                    log.info("checkpoint answer dropped", job_id=job_id, code=code.name,
                             detail=exc.details())
                    return f"dropped ({code.name})"
                if code not in RETRY_CODES or loop.time() + backoff > give_up:
                    log.error("checkpoint answer failed", job_id=job_id, code=code.name,
                              detail=exc.details())
                    return f"failed ({code.name})"
                log.warning("daemon unavailable; retrying", job_id=job_id, code=code.name,
                            retry_in=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RPC_BACKOFF_MAX)


async def listen(args: argparse.Namespace, agent: Agent,
                 ready: asyncio.Event | None = None) -> None:
    """Subscribe and feed the agent, reconnecting with backoff, until cancelled."""
    host, port = args.mqtt
    topic = f"schedd/{args.cluster}/jobs/+/control"
    backoff = BACKOFF_MIN
    down_logged = connected = False
    while True:
        client = aiomqtt.Client(host, port, keepalive=KEEPALIVE,
                                identifier=f"schedd-ckpt-agent-{uuid.uuid4().hex[:8]}",
                                username=args.mqtt_user,
                                password=getattr(args, "mqtt_password", None))
        try:
            async with client:
                await client.subscribe(topic, qos=1)
                log.info("mqtt connected", host=host, port=port, topic=topic)
                connected, down_logged, backoff = True, False, BACKOFF_MIN
                if ready is not None:
                    ready.set()
                async for message in client.messages:
                    agent.on_message(str(message.topic), message.payload)
        except aiomqtt.MqttError as exc:
            # One log line per transition, not per retry.
            if connected:
                log.warning("mqtt disconnected", host=host, port=port, error=str(exc))
            elif not down_logged:
                log.warning("mqtt broker unavailable; retrying", host=host, port=port,
                            error=str(exc))
            connected, down_logged = False, True
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, MQTT_BACKOFF_MAX)


def open_channel(args: argparse.Namespace) -> grpc.aio.Channel:
    if args.tls_ca:
        with open(args.tls_ca, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        return grpc.aio.secure_channel(args.server, creds)
    return grpc.aio.insecure_channel(args.server)


async def run(args: argparse.Namespace, ready: asyncio.Event | None = None) -> int:
    """The agent; returns after one answer with --once, else runs until cancelled."""
    metadata: tuple[tuple[str, str], ...] = ()
    if args.token:
        metadata = (("authorization", f"Bearer {args.token}"),)
    channel = open_channel(args)
    agent = Agent(args, scheduler_pb2_grpc.SchedulerStub(channel), metadata)
    listener = asyncio.create_task(listen(args, agent, ready))
    try:
        if args.once:
            await agent.answered.wait()
        else:
            await listener
    finally:
        pending = [listener, *agent.tasks]
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
        await channel.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_format)
    if args.tls_ca:
        try:
            with open(args.tls_ca, "rb"):
                pass
        except OSError as exc:
            parser.error(f"--tls-ca: {exc}")
    args.mqtt_password = None
    if args.mqtt_password_file:
        if not args.mqtt_user:
            parser.error("--mqtt-password-file needs --mqtt-user")
        try:
            with open(args.mqtt_password_file) as f:
                args.mqtt_password = f.readline().strip()
        except OSError as exc:
            parser.error(f"--mqtt-password-file: {exc.strerror}: {args.mqtt_password_file}")
    log.info("checkpoint agent starting", cluster=args.cluster, mqtt=list(args.mqtt),
             server=args.server, delay=args.delay, speedup=args.speedup, ignore=args.ignore)
    try:
        return asyncio.run(run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
