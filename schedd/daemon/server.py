"""`schedd serve`: build the engine, recover the journal, serve gRPC, metrics and MQTT.

Startup order: every option checked -> journal (locked against a second daemon; a damaged
one, or one written with other settings, is refused) -> engine and recovery -> gRPC
server (with health checking and reflection) -> metrics -> MQTT bus -> iterations. A start
that fails removes a journal it had just made. SIGTERM/SIGINT stop it cleanly (health goes
NOT_SERVING, progress is written); a crash or `kill -9` loses nothing that was
acknowledged (docs/daemon.md). While the journal cannot be written (a full disk) health
says NOT_SERVING, and a probe write every second finds out when it can again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import re
import signal
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from .. import heap, limits
from ..core.cluster import Cluster
from ..core.engine import Command, Engine, EngineOptions
from ..core.recorder import RunRecorder
from ..policies import make_policy
from ..v1 import scheduler_pb2 as pb
from ..v1 import scheduler_pb2_grpc as pb_grpc
from . import event_loop
from .auth import ANONYMOUS_OPERATOR, Principal, TokenStore
from .budget import BudgetedPolicy
from .clock import VirtualClock
from .config import ConfigError, check_engine_limits
from .eventlog import BACKLOG_BYTES as WATCH_BACKLOG_BYTES
from .eventlog import EVENT_RING, STREAMS_PER_USER, EventLog
from .host import RECORD_IN_MEMORY, RESULTS_IN_MEMORY, EngineHost, ReplayFailed
from .interceptor import _principal, guarded_handlers
from .journal import Journal, JournalError
from .logs import configure_logging
from .metrics import DaemonMetrics
from .service import MAX_WAITING, Refused, SchedulerService, event_bytes_or_message
from .shutdown import cancel_and_wait

if TYPE_CHECKING:
    from .mqtt import Duplicate, Refusal

log = structlog.get_logger("schedd.serve")
SERVICE_NAME = "schedd.v1.Scheduler"
EXIT_ENGINE_FAILED = 3  # docs/daemon.md: the engine failed; restart the daemon
TASK_STOP_GRACE_S = 2.0  # after each cancellation of the background tasks at shutdown
JOURNAL_PROBE_S = 1.0  # wall seconds between probe writes while the journal cannot be written


class StartupError(RuntimeError):
    """The daemon cannot start with these options (one sentence)."""


class RecoverAgain(Exception):
    """A journal entry was quarantined after the engine failed on it mid-recovery: the
    process starts over (`schedd serve` re-executes itself) on the cleaned journal."""


@dataclass
class Settings:
    """Everything that defines the run; the journal refuses to be replayed under others."""

    cluster: str
    policy: str
    options: list[str]
    seed: int
    engine: dict[str, Any]
    clock: str
    speedup: float


def _env_count(name: str, default: int) -> int:
    """A tuning variable of the environment (docs/daemon.md): a whole number 1..10^9."""
    text = os.environ.get(name, "")
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= 10**9:
        raise StartupError(f"{name} must be a whole number from 1 to 10^9, not {text!r}")
    return int(text)


def _snapshot_every() -> int | None:
    """SCHEDD_SNAPSHOT_EVERY: stimuli applied between snapshots; None when not set (the
    default: 5,000, or the number of live jobs when more)."""
    if not os.environ.get("SCHEDD_SNAPSHOT_EVERY"):
        return None
    return _env_count("SCHEDD_SNAPSHOT_EVERY", 1)


def topic_name(cluster: Cluster, name: str | None) -> str:
    text = name or cluster.name
    return re.sub(r"[^a-zA-Z0-9_-]+", "-", text).strip("-") or "cluster"


def _slurm_machine(args: argparse.Namespace) -> Any:
    """The machine a --slurm-conf describes (None without one); StartupError if it cannot
    be read or clashes with --cluster."""
    if not getattr(args, "slurm_conf", None):
        if getattr(args, "slurm_assoc", None) or getattr(args, "slurm_qos", None):
            raise StartupError("--slurm-assoc and --slurm-qos need --slurm-conf")
        return None
    from ..slurm.assoc import AssocError
    from ..slurm.conf import SlurmConfError
    from ..slurm.machine import SlurmSetup
    from ..slurm.qos import QosError

    try:
        setup = SlurmSetup.read(args.slurm_conf, args.slurm_assoc,
                                getattr(args, "slurm_qos", None))
    except (SlurmConfError, AssocError, QosError) as err:
        raise StartupError(str(err)) from None
    args.cluster = f"slurm.conf:{args.slurm_conf}"  # what the journal records
    return setup


class Daemon:
    """The assembled daemon; `start()` then `wait()`; `stop()` from a signal or a test."""

    def __init__(self, args: argparse.Namespace):
        from ..core.cluster_spec import parse_cluster
        from ..options import engine_options_from

        self.args = args
        try:  # SCHEDD_GC_THRESHOLDS (docs/daemon.md, Collector pauses), before any file
            self.gc_thresholds = heap.thresholds_from(os.environ.get(heap.ENV, ""))
        except ValueError as err:
            raise StartupError(str(err)) from None
        try:
            check_engine_limits(args)
        except ConfigError as err:
            raise StartupError(str(err)) from None
        slurm = _slurm_machine(args)
        self.cluster = slurm.cluster if slurm is not None else parse_cluster(args.cluster)
        self.name = topic_name(self.cluster, args.name)
        external = args.agents == "external"
        args.policy = args.policy or ("slurm" if slurm is not None else "easy")
        primary = make_policy(args.policy, args.opt, self.cluster)
        overrides = {}
        if slurm is not None and args.policy == "slurm":
            slurm.bind(primary, None)
            overrides = primary.engine_overrides()  # type: ignore[attr-defined]
            for line in slurm.warnings():
                print(f"schedd: warning: {line}", file=sys.stderr)
        self.engine_options: EngineOptions = engine_options_from(
            args, primary, auto_checkpoint_done=not external, keep_finished=True,
            forget_finished_ids=True,
            checkpoint_timeout_s=args.checkpoint_timeout if external else 0.0, **overrides)
        fallback = make_policy(args.fallback, [], self.cluster)
        self.settings = Settings(args.cluster, args.policy, list(args.opt), args.seed,
                                 json.loads(json.dumps(asdict(self.engine_options))),
                                 args.clock, args.speedup)
        self.tokens = (TokenStore.from_file(args.tokens) if args.tokens
                       else TokenStore(None))
        if bool(args.tls_cert) != bool(args.tls_key):
            raise StartupError("TLS needs both --tls-cert and --tls-key")
        self.mqtt_password = _mqtt_password(args)
        # SCHEDD_MAX_WAITING: requests that may wait for the journal before the next is
        # refused with RESOURCE_EXHAUSTED (docs/daemon.md, Back-pressure).
        self.max_waiting = _env_count("SCHEDD_MAX_WAITING", MAX_WAITING)
        self.metrics = DaemonMetrics(snapshot=lambda: self.host.snapshot())
        # After every check of the options: a refused start makes no file.
        self.journal = Journal(args.state_db,
                               on_commit_seconds=self.metrics.journal_commit.observe)
        try:
            self._assemble(args, primary, fallback)
        except BaseException:
            self.journal.discard_if_new()
            raise
        for note in self.journal.notes:
            log.warning("journal check", note=note)

    def _assemble(self, args: argparse.Namespace, primary: Any, fallback: Any) -> None:
        from ..sim import max_job_nodes

        self.engine = Engine(self.cluster, None, seed=args.seed, options=self.engine_options)
        # The run record behind segments.csv / timeseries.csv (GetResults table=...).
        self.engine.recorder = RunRecorder()
        self.policy = BudgetedPolicy(
            primary, fallback, args.budget, lambda: self.engine.stats["passes"],
            on_pass=lambda name, s: self.metrics.policy_pass.labels(name).observe(s),
            on_overrun=lambda *a: self.host.on_overrun(*a))
        self.engine.policy = self.policy
        self.clock = VirtualClock(args.clock, args.speedup, args.start_time)
        self.metrics.speedup = self.clock.speedup  # the clock lag in wall seconds
        self.metrics.start_policies(primary.name, fallback.name)
        # Watchers' bounds (docs/daemon.md, "Watchers"): backlog bytes, streams per user.
        self.events = EventLog(
            self.name, _env_count("SCHEDD_EVENT_RING", EVENT_RING),
            backlog_bytes=_env_count("SCHEDD_WATCH_BACKLOG_BYTES", WATCH_BACKLOG_BYTES),
            streams_per_user=_env_count("SCHEDD_WATCH_STREAMS_PER_USER", STREAMS_PER_USER))
        self.host = EngineHost(self.engine, self.policy, self.clock, self.journal,
                               self.metrics, self.events, tick=args.tick)
        self.host.check_invariants = args.validate
        self.max_job_nodes = max_job_nodes(self.cluster)
        from importlib.metadata import version

        self.metrics.info.info({
            "version": version("schedd"), "cluster": self.cluster.name, "name": self.name,
            "policy": args.policy, "fallback": args.fallback, "budget": str(args.budget),
            "clock": args.clock, "speedup": str(self.clock.speedup)})
        self.service = SchedulerService(
            self.host, self.journal, cluster_name=self.name,
            max_job_nodes=self.max_job_nodes,
            policy_options=dict(o.partition("=")[::2] for o in args.opt), seed=args.seed,
            engine_options=json.dumps(self.settings.engine, sort_keys=True),
            agents=args.agents,
            policy_spec=json.dumps({"policy": args.policy, "options": list(args.opt),
                                    "fallback": args.fallback, "budget": args.budget}))
        self.service.max_waiting = self.max_waiting
        self.server: grpc.aio.Server | None = None
        self.health = health.aio.HealthServicer()
        self.port = 0
        self.metrics_port = 0
        self.bus: Any = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopped = asyncio.Event()
        self._metrics_server: Any = None
        self.exit_code = 0  # EXIT_ENGINE_FAILED once the engine has failed
        self._failing: asyncio.Task[None] | None = None
        self.host.on_failure = self._engine_failed
        self._serving = False  # health may say SERVING (not stopping, engine not failed)
        self._journal_changed: asyncio.Event | None = None

    # ------------------------------------------------------------------ lifecycle
    def _recover(self) -> None:
        from .stored import REQUESTS_IN_MEMORY, KnownIds, RequestMemo

        rec = self.journal.load()
        meta = {"settings": json.dumps(asdict(self.settings), sort_keys=True)}
        # Finished jobs and older request ids are read back from the journal, not kept.
        self.service.requests = RequestMemo(
            self.journal, _env_count("SCHEDD_REQUESTS_IN_MEMORY", REQUESTS_IN_MEMORY))
        self.service.known_ids = KnownIds(self.service.known_ids, self.journal)
        self.host.snapshot_extra = lambda: {"next_id": self.service.next_id}
        self.host.snapshot_every = _snapshot_every()
        self.host.snapshot_work_seconds = _env_count(
            "SCHEDD_SNAPSHOT_WORK_MS", round(1000 * self.host.snapshot_work_seconds)) / 1000
        self.host.record_in_memory = _env_count("SCHEDD_RECORD_IN_MEMORY", RECORD_IN_MEMORY)
        self.host.results_in_memory = _env_count("SCHEDD_RESULTS_IN_MEMORY",
                                                 RESULTS_IN_MEMORY)
        self.host.on_stored = lambda job_id: self.service.known_ids.discard(job_id)
        if rec.empty:
            self.journal.write_meta(meta)
            return
        if rec.meta.get("settings") != meta["settings"]:
            before = json.loads(rec.meta.get("settings", "{}"))
            now = asdict(self.settings)
            diff = [k for k in now if json.loads(json.dumps(now[k])) != before.get(k)]
            raise StartupError(
                f"the journal {self.args.state_db} was written with other settings "
                f"({', '.join(diff) or 'unknown'} differ); start with the same options or "
                "give a new --state-db")
        try:
            replayed = self.host.recover(rec)
        except ReplayFailed as err:  # the engine is spoilt: quarantine, start afresh
            if not err.seq:
                raise StartupError(f"recovery from the journal {self.args.state_db} "
                                   f"failed ({err.error})") from None
            self.journal.quarantine(err.seq, err.error)
            log.error("journal entry quarantined: the engine rejects it; recovering again",
                      stimulus_id=err.seq, error=err.error)
            raise RecoverAgain() from None
        for seq, kind, error in self.journal.rejected():
            log.warning("quarantined journal entry (not replayed)", stimulus_id=seq,
                        kind=kind, error=error)
        self.service.restore_ids([st for st, _ in rec.stimuli])
        self.service.known_ids = KnownIds(self.service.known_ids, self.journal)
        self.service.next_id = max(self.service.next_id,
                                   int(self.host.restored_extra.get("next_id", 1)))
        self.service.remember_requests([st for st, _ in rec.stimuli])
        log.info("recovered from the journal", stimuli=replayed,
                 jobs=len(self.host.records), engine_time=self.host.engine_time,
                 clock=self.clock.now())

    async def start(self) -> None:
        self._recover()
        heap.settle(self.gc_thresholds)
        # Large freed blocks go back to the kernel, not into a fragmented heap (issue 34).
        returns = heap.return_freed_memory()
        log.info("event loop", loop=type(asyncio.get_running_loop()).__module__)
        log.info("garbage collector set", frozen_objects=gc.get_freeze_count(),
                 thresholds=list(self.gc_thresholds or gc.get_threshold()),
                 returns_freed_memory=returns)
        server = grpc.aio.server(
            options=[("grpc.so_reuseport", 0),
                     ("grpc.max_receive_message_length", limits.MAX_MESSAGE_BYTES)])
        try:
            await self._start_on(server)
        except BaseException:
            await server.stop(None)  # a started server left behind dies noisily at exit
            raise

    async def _start_on(self, server: grpc.aio.Server) -> None:
        add_scheduler_service(self.service, server, self.tokens, self.metrics)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (pb.DESCRIPTOR.services_by_name["Scheduler"].full_name,
             reflection.SERVICE_NAME, health.SERVICE_NAME), server)
        host, port = self.args.listen
        address = f"{host}:{port}"
        creds = self._tls_credentials() if self.args.tls_cert else None
        try:
            if creds is not None:
                self.port = server.add_secure_port(address, creds)
            else:
                self.port = server.add_insecure_port(address)
        except RuntimeError:  # grpc: "Failed to bind", also for a bad certificate
            self.port = 0
        if self.port == 0:
            hint = (" (or --tls-cert/--tls-key are not a PEM certificate and its key)"
                    if self.args.tls_cert else "")
            raise StartupError(f"cannot listen on {address}: the address is in use or not "
                               f"local{hint}")
        await server.start()
        self.server = server
        if self.args.metrics_port:
            try:
                self._metrics_server, _ = start_http_server(
                    self.args.metrics_port, addr=self.args.metrics_host,
                    registry=self.metrics.registry)
            except OSError as err:
                raise StartupError(f"cannot serve metrics on {self.args.metrics_host}:"
                                   f"{self.args.metrics_port}: {err.strerror}") from None
            self.metrics_port = self._metrics_server.server_port
        if self.args.mqtt:
            self._start_bus()
        self._tasks.append(asyncio.create_task(self.host.run(), name="schedd-host"))
        self._watch_journal_writes()
        self._serving = True
        await self._set_health(not self.journal.writes_failing)
        log.info("serving", listen=f"{host}:{self.port}", tls=bool(self.args.tls_cert),
                 auth=self.tokens.enabled, cluster=self.name, policy=self.policy.name,
                 clock=self.clock.mode, speedup=self.clock.speedup,
                 metrics_port=self.metrics_port or None, state_db=self.args.state_db)

    async def _set_health(self, serving: bool) -> None:
        status = (health_pb2.HealthCheckResponse.SERVING if serving
                  else health_pb2.HealthCheckResponse.NOT_SERVING)
        await self.health.set("", status)
        await self.health.set(SERVICE_NAME, status)

    def _watch_journal_writes(self) -> None:
        """Health follows the journal: NOT_SERVING from a failed write (a full disk: the
        engine cannot move on, nothing can be acknowledged) until one succeeds; a probe
        write every JOURNAL_PROBE_S finds out when, even with no request coming."""
        loop = asyncio.get_running_loop()
        changed = self._journal_changed = asyncio.Event()

        def on_write_state(failing: bool) -> None:  # the journal's writer thread
            loop.call_soon_threadsafe(changed.set)

        self.journal.on_write_state = on_write_state
        self._tasks.append(asyncio.create_task(self._follow_journal(changed),
                                               name="schedd-journal-health"))

    async def _follow_journal(self, changed: asyncio.Event) -> None:
        while True:
            await changed.wait()
            changed.clear()
            if not self.journal.writes_failing:
                if self._serving:
                    log.info("the journal is writable again; health SERVING")
                    await self._set_health(True)
                continue
            if self._serving:
                log.error("the journal cannot be written; health NOT_SERVING until a write "
                          "succeeds")
                await self._set_health(False)
            while self.journal.writes_failing:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), JOURNAL_PROBE_S)
                if self.journal.writes_failing:
                    await self.journal.probe_async()

    def _tls_credentials(self) -> grpc.ServerCredentials:
        pem = {}
        for name in ("tls_key", "tls_cert"):
            path = getattr(self.args, name)
            try:
                with open(path, "rb") as f:
                    pem[name] = f.read()
            except OSError as err:
                raise StartupError(f"cannot read --{name.replace('_', '-')} {path}: "
                                   f"{err.strerror}") from None
            if b"-----BEGIN" not in pem[name]:
                raise StartupError(f"--{name.replace('_', '-')} {path} is not a PEM file")
        return grpc.ssl_server_credentials([(pem["tls_key"], pem["tls_cert"])])

    def _start_bus(self) -> None:
        from .mqtt import MqttBus, default_client_id

        mhost, mport = self.args.mqtt
        # The broker keeps the bus's session under this id (clean_session=False): the
        # same on every start, so a restart resumes it; another daemon needs another.
        client_id = getattr(self.args, "mqtt_client_id", None) or default_client_id(self.name)
        self.bus = MqttBus(host=mhost, port=mport, cluster=self.name, metrics=self.metrics,
                           on_notice=self._mqtt_notice, tokens=self.tokens,
                           client_id=client_id,
                           username=getattr(self.args, "mqtt_user", None),
                           password=self.mqtt_password)
        self.events.add_listener(self.bus.publish_event)
        self.host.bus_connected = lambda: bool(self.bus.connected)
        self.host.command_listeners.append(self._publish_command)
        self._tasks.append(asyncio.create_task(self.bus.run(), name="schedd-mqtt"))

    def _engine_failed(self, err: BaseException) -> None:
        """The host stopped driving a failed engine (it logged and counted it): stop
        serving a dead engine and exit non-zero so that the supervisor restarts us."""
        self.exit_code = EXIT_ENGINE_FAILED
        self._failing = asyncio.get_running_loop().create_task(self._stop_failed(),
                                                               name="schedd-failed")

    async def _stop_failed(self) -> None:
        self._serving = False
        await self._set_health(False)
        await self.stop(grace=1.0)

    def _publish_command(self, cmd: Command) -> None:
        rec = self.host.records.get(cmd.job_id)
        self.bus.publish_control(cmd.job_id, {
            "command": cmd.kind, "job_id": cmd.job_id, "time": cmd.time,
            "deadline": cmd.deadline, "nodes": rec.alloc_nodes if rec else 0,
            "cluster": self.name})

    async def _mqtt_notice(self, payload: dict[str, Any],
                           principal: Principal = ANONYMOUS_OPERATOR
                           ) -> str | Refusal | Duplicate | None:
        """A notice published on MQTT by `principal` (the bus mapped the topic's user to
        it): the RPC's validation, ownership rules and request-id idempotency, then the
        journal (`SchedulerService.mqtt_notice`)."""
        from .mqtt import Duplicate, Refusal

        _principal.set(principal)
        try:
            stimulus_id, duplicate = await self.service.mqtt_notice(payload)
        except (KeyError, TypeError, ValueError) as err:
            return f"a notice needs job_id, expected_arrival, nodes and walltime ({err})"
        except Refused as err:
            if err.code == grpc.StatusCode.PERMISSION_DENIED:
                return Refusal("permission", str(err))
            return str(err)
        except JournalError as err:
            self.metrics.journal_write_errors.inc()
            return str(err)
        return Duplicate(stimulus_id) if duplicate else None

    async def wait(self) -> None:
        await self._stopped.wait()

    async def stop(self, grace: float = 2.0) -> None:
        if self._stopped.is_set():
            return
        self._serving = False
        await self.health.enter_graceful_shutdown()
        self.events.close()  # watchers end now, told where to resume, not at the grace
        if self.server is not None:
            await self.server.stop(grace)
        await self.host.stop()
        stuck = await cancel_and_wait(self._tasks, grace=TASK_STOP_GRACE_S)
        if stuck:
            log.error("background tasks did not stop; exiting without them", tasks=stuck)
        self.host.close()
        self.journal.close()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
        self._stopped.set()
        log.info("stopped")

    def abandon(self) -> None:
        """After a failed start: close what was opened; a journal made by this start,
        with nothing in it yet, is removed (the files it made)."""
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
        self.host.close()
        if self.journal.discard_if_new():
            log.info("removed the new journal of a start that failed",
                     state_db=self.args.state_db)


def _mqtt_password(args: argparse.Namespace) -> str | None:
    """The broker password: the first line of --mqtt-password-file."""
    path = getattr(args, "mqtt_password_file", None)
    if not path:
        return None
    if not getattr(args, "mqtt_user", None):
        raise StartupError("--mqtt-password-file needs --mqtt-user")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as err:
        raise StartupError(f"cannot read --mqtt-password-file {path}: {err.strerror}") from None
    if not lines or not lines[0].strip():
        raise StartupError(f"--mqtt-password-file {path} is empty")
    return lines[0].strip()


async def _serve(args: argparse.Namespace) -> int:
    # A computing policy holds the GIL in the engine thread; hand it to the event loop
    # every 1 ms instead of CPython's 5 ms, so RPCs answer while it computes
    # (docs/benchmarks.md: GetJob p99 during a 1 s pass).
    sys.setswitchinterval(0.001)
    daemon = Daemon(args)
    try:
        await daemon.start()
    except RecoverAgain:
        daemon.journal.close()
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    except BaseException:
        daemon.abandon()  # a command that fails creates nothing
        raise
    print(f"schedd: serving {daemon.name} on {args.listen[0]}:{daemon.port}"
          + (f", metrics on http://{args.metrics_host}:{daemon.metrics_port}/metrics"
             if daemon.metrics_port else ""), file=sys.stderr, flush=True)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(daemon.stop()))
    await daemon.wait()
    return daemon.exit_code


def serve_main(args: argparse.Namespace) -> int:
    from ..core.cluster import ClusterError
    from ..policies import PolicyError
    from .auth import TokenFileError

    configure_logging(args.log_format, args.log_level)
    if args.check_config:
        try:  # builds everything but the journal file
            daemon = Daemon(argparse.Namespace(**{**vars(args), "state_db": ":memory:"}))
            daemon.journal.close()
        except (ClusterError, PolicyError, TokenFileError, StartupError, JournalError) as err:
            print(f"schedd: error: {err}", file=sys.stderr)
            return 2
        shown = {k: v for k, v in vars(args).items() if k not in ("command", "check_config")}
        shown["ckpt"] = daemon.engine_options.checkpoint.periodic  # as the policy resolved it
        shown["policy"], shown["cluster"] = daemon.args.policy, daemon.args.cluster
        print(json.dumps(shown, indent=2, sort_keys=True, default=str))
        return 0
    try:
        return event_loop.run(_serve(args))
    except (ClusterError, PolicyError, TokenFileError, StartupError, JournalError) as err:
        print(f"schedd: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


class _Handlers:
    """Takes the method handlers the generated code would register on a server."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass

    def add_registered_method_handlers(self, name: str, handlers: dict[str, Any]) -> None:
        self.handlers = dict(handlers)


def add_scheduler_service(service: Any, server: grpc.aio.Server, tokens: TokenStore,
                          metrics: DaemonMetrics) -> None:
    """The Scheduler service as the generated code registers it, each method behind its
    checks (interceptor.guarded_handlers), and WatchEvents' response serializer passing
    events encoded once for every stream on as they are (service.EncodedEvents) and
    serializing any other message."""
    taken = _Handlers()
    pb_grpc.add_SchedulerServicer_to_server(service, taken)  # type: ignore[arg-type]
    watch = taken.handlers["WatchEvents"]
    taken.handlers["WatchEvents"] = grpc.unary_stream_rpc_method_handler(
        watch.unary_stream, watch.request_deserializer, event_bytes_or_message)
    handlers = guarded_handlers(taken.handlers, tokens, metrics)
    name = "schedd.v1.Scheduler"
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
    server.add_registered_method_handlers(name, handlers)

