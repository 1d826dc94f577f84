"""The engine host: drives the engine from the daemon's clock, off the event loop.

One worker thread owns the engine. An iteration (in that thread) applies the stimuli
committed since the last one, in journal order, then handles every event due by the
clock's current virtual time, with one policy pass per instant (the engine's rule, as in
`schedd simulate`). The event loop stays free for RPCs and scrapes: it never touches the
engine, only the records each iteration hands back.

Virtual time while a policy computes: the engine's time stands still at the instant being
scheduled; decisions take effect at that instant, exactly as in `schedd simulate`. The
clock keeps moving (realtime, accelerated), so the engine falls behind it by the
computation time times the speed-up; that gap is the clock lag (`schedd_clock_lag_seconds`,
`Clock.lag`), and the next iteration catches up. In lockstep the clock does not move while
the policy computes, so there is no lag and the results equal `schedd simulate`'s.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import math
import pickle
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

from ..core.bgq import BlockCluster
from ..core.decisions import DecisionError
from ..core.engine import Command, Engine
from ..core.job import JobState
from ..core.results import ResultTable
from ..core.validate import validate
from ..run_files import RECORD_TABLES, record_tables
from .budget import BudgetedPolicy
from .clock import VirtualClock
from .eventlog import EventLog
from .journal import Journal, JournalError, Progress, Recovered, Snapshot
from .metrics import DaemonMetrics, StateSnapshot
from .records import (
    FINAL_STATES,
    HOLDING_STATES,
    PENDING,
    WAITING_STATES,
    JobRecord,
    Stimulus,
    decode_record,
    ecc_of_body,
    encode_record,
    event_kind,
    notice_of_body,
    record_of_job,
    record_of_spec,
)
from .snapshot import SNAPSHOT_EVERY, SNAPSHOT_WORK_RATIO, SNAPSHOT_WORK_SECONDS, dumps, restore
from .stored import RECORD_ROWS, pack_rows, stored_chunks, stored_record

log = structlog.get_logger("schedd.host")

CLASS_NAMES = {"B": "batch", "R": "realtime", "O": "ondemand", "M": "malleable",
               "D": "dedicated"}
# The event kinds _count_event turns into metrics; other kinds return at once.
_INTERRUPTIONS = ("checkpointing", "preempted")
_COUNTED_EVENTS = frozenset(("started", *_INTERRUPTIONS, *FINAL_STATES))
ITERATION_WALL_CAP = 0.2  # seconds of engine work before the loop gets a turn
RESULTS_IN_MEMORY = 20_000  # engine result rows kept before they are only in the store
RECORD_IN_MEMORY = 20_000  # run-record rows per table kept before they are only in the store
CLOCK_LEASE_TICKS = 2  # ticks of wall time journalled ahead of the clock reading (_mark)
MARK_RETRY_WALL = 1.0  # wall seconds between attempts when the journal cannot be written
FAILED = ("the scheduling engine failed and the daemon is stopping to restart; retry "
          "once it serves again")


class ReplayFailed(Exception):
    """Recovery met a stimulus the engine raised on while running (not when applied):
    the engine state is unusable, so the stimulus is quarantined and recovery restarts."""

    def __init__(self, seq: int, error: str):
        super().__init__(error)
        self.seq, self.error = seq, error


def _blame(err: BaseException, applied: list[Stimulus]) -> Stimulus | None:
    """The stimulus behind an engine exception: the job the failing frames were
    handling (its submission), else the last stimulus applied."""
    tb = err.__traceback__
    job_ids: list[int] = []
    while tb is not None:
        local = tb.tb_frame.f_locals
        for name in ("job", "spec"):
            value = getattr(local.get(name), "id", None)
            if isinstance(value, int):
                job_ids.append(value)
        x_job_id = getattr(getattr(local.get("x"), "job", None), "id", None)
        if isinstance(x_job_id, int):
            job_ids.append(x_job_id)
        tb = tb.tb_next
    for job_id in reversed(job_ids):  # innermost first
        for st in reversed(applied):
            if st.job_id == job_id and st.kind == "submit":
                return st
        for st in reversed(applied):
            if st.job_id == job_id:
                return st
    return applied[-1] if applied else None


class EngineFailed(Exception):
    """An exception escaped an engine step or a policy pass: the engine state can no
    longer be trusted, so the daemon stops (and its supervisor restarts it)."""

    def __init__(self) -> None:
        super().__init__(FAILED)


EventRow = tuple[float, str, int, str, str, int]  # time, kind, job id, state, cause, nodes


@dataclass
class ClusterSnapshot:
    free: int = 0
    down: int = 0
    reserved: int = 0
    partitions: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass
class IterationOut:
    applied: list[tuple[int, float]]  # (stimulus seq, engine time when applied)
    rejected: list[tuple[Stimulus, str]]
    transitions: list[tuple[float, int, JobState, str, int]]
    commands: list[Command]
    eccs: list[tuple[Any, str]]
    records: dict[int, JobRecord]
    finished: list[tuple[int, str, str, int, str, str]]  # rows for the results store
    results: list[tuple[int, int, bytes]]  # result rows for the results store
    overruns: list[int]
    engine_time: float
    next_time: float | None
    caught_up: bool
    cluster: ClusterSnapshot
    seconds: float
    record: list[tuple[str, int, bytes]] = field(default_factory=list)  # run record rows
    # Events of the stimuli taken in (submitted, notice): (time, kind, job, state, cause,
    # nodes), published in time order with the iteration's transitions (_publish).
    intake: list[EventRow] = field(default_factory=list)
    start_time: float = 0.0  # the engine's time when the iteration began


class EngineHost:
    def __init__(self, engine: Engine, policy: BudgetedPolicy, clock: VirtualClock,
                 journal: Journal, metrics: DaemonMetrics, events: EventLog, *,
                 tick: float = 0.5):
        self.engine = engine
        self.policy = policy
        self.clock = clock
        self.journal = journal
        self.metrics = metrics
        self.events = events
        self.tick = tick
        self.records: dict[int, JobRecord] = {}
        self.owners: dict[int, str] = {}
        self.cluster_snapshot = ClusterSnapshot(free=engine.cluster.total_nodes)
        self.engine_time = engine.now
        self.next_time: float | None = None
        self.idle = True
        self._pending: list[Stimulus] = []
        self._accepted_at: dict[int, float] = {}  # stimulus seq -> clock when committed
        # Events later than the engine's time, held until it gets there (_publish).
        self._held: list[tuple[float, int, int, EventRow]] = []
        self._event_order = 0  # ties in time keep the order events were made in
        self._wake = asyncio.Event()
        self._stopping = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="schedd-engine")
        self._advance_waiters: list[tuple[float, asyncio.Future[None]]] = []
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._run_until_idle = False
        self._overruns: list[int] = []
        self._last_results = 0  # rows of engine.results already handed to the store
        self.results_base = 0  # number of the first row of engine.results, from the first
        # The same for the run record's tables (the recorder's rows: segments, waits, levels).
        self._record_sent = dict.fromkeys(RECORD_TABLES, 0)
        self.record_base = dict.fromkeys(RECORD_TABLES, 0)
        self.record_in_memory = RECORD_IN_MEMORY
        self.results_in_memory = RESULTS_IN_MEMORY  # SCHEDD_RESULTS_IN_MEMORY
        self.last_applied_seq = 0  # stimuli up to here are applied (in seq order)
        self._applied_since_snapshot = 0
        self._work_since_snapshot = 0.0  # iterations' wall seconds since the last snapshot
        self._snapshot_seconds = 0.0  # what the last snapshot took (pickle and store)
        self.snapshot_work_seconds = SNAPSHOT_WORK_SECONDS  # SCHEDD_SNAPSHOT_WORK_MS
        # A fixed interval (SCHEDD_SNAPSHOT_EVERY), or None: the default, which also waits
        # for as many stimuli as there are live jobs. A snapshot's cost grows with the live
        # jobs, so that bounds its cost per stimulus (recovery replays at most that many).
        self.snapshot_every: int | None = None
        # Set by the daemon: extra state for snapshots (the service's id cursor).
        self.snapshot_extra: Callable[[], dict[str, Any]] = dict
        self.restored_extra: dict[str, Any] = {}
        # Called with each job id whose record moved to the results store.
        self.on_stored: Callable[[int], None] = lambda job_id: None
        # Job-control commands (checkpoint, warning, resize, start, stop) go to these.
        self.command_listeners: list[Callable[[Command], None]] = []
        self.bus_connected: Callable[[], bool] = lambda: False  # set when MQTT is on
        # Set by the daemon: called once, on the loop, when the engine has failed.
        self.on_failure: Callable[[BaseException], None] = lambda err: None
        self.failure: BaseException | None = None
        self._recent: deque[Stimulus] = deque(maxlen=16)  # for the failure's log line
        # The clock reading the journal holds (a restart resumes there or later): no
        # reading beyond it is published (`published_now`).
        self.durable_clock = clock.now()
        self.journal_failing = False  # set while progress cannot be written
        # Finished jobs live in the journal's results store; their counts by
        # (state, class letter) stay here for metrics and GetCluster.
        self.finished_counts: dict[tuple[str, str], int] = {}
        self.check_invariants = False  # serve --validate: a broken invariant is fatal
        engine.outbox = []
        engine.transitions = []
        journal.on_committed = self.accept
        events.add_listener(self._count_event, _COUNTED_EVENTS)

    # ------------------------------------------------------------------ intake (loop)
    def accept(self, stimuli: list[Stimulus]) -> None:
        """Committed stimuli, in journal order: queue them for the next iteration."""
        now = self.clock.now()
        submitted: dict[str, int] = {}  # by class letter: one counter update per class
        for st in stimuli:
            self._pending.append(st)
            if st.kind == "submit":
                spec = st.job_spec()
                rec = self.records[spec.id] = record_of_spec(spec, st.owner)
                self.owners[spec.id] = st.owner
                submitted[rec.job_class] = submitted.get(rec.job_class, 0) + 1
                self._accepted_at[st.seq] = now
            elif st.kind == "notice":
                self.metrics.notices.labels(st.body.get("source", "rpc")).inc()
                self._accepted_at[st.seq] = now
        for letter, n in submitted.items():
            self.metrics.submissions.labels(CLASS_NAMES[letter]).inc(n)
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def published_now(self) -> float:
        """The clock as the daemon may announce it: never past the journalled reading,
        so that no restart can show an earlier time than one a client saw."""
        return min(self.clock.now(), self.durable_clock)

    def has_pending(self) -> bool:
        return bool(self._pending)

    # ------------------------------------------------------------------ driving (loop)
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopping:
            self._wake.clear()
            batch, self._pending = self._pending, []
            stamps = {st.seq: self._accepted_at.pop(st.seq) for st in batch
                      if st.seq in self._accepted_at}
            idle_run = self._run_until_idle
            target = math.inf if idle_run else self.clock.now()
            try:
                out = await loop.run_in_executor(self._executor, self._iterate, batch,
                                                 target, idle_run, stamps)
            except Exception as err:  # a bug in the engine or the policy: fatal
                self._fail(err, batch)
                return
            # Durable first, then announced: an event a watcher sees is never undone by
            # a restart (docs/daemon.md, Guarantees).
            if not await self._mark(out):
                return  # stopping while the journal could not be written
            try:
                self._absorb(out)
            except Exception as err:  # a bug in the engine or the policy: fatal
                self._fail(err, batch)
                return
            self._recent.extend(batch)
            if out.applied:
                self.last_applied_seq = out.applied[-1][0]
                self._applied_since_snapshot += len(out.applied)
            self._work_since_snapshot += out.seconds
            if (self._applied_since_snapshot >= self._snapshot_due()
                    or self._work_since_snapshot >= self._work_due()):
                await self._snapshot()
            if idle_run and out.caught_up:
                self._run_until_idle = False
                if self.clock.lockstep:
                    self.clock.advance_to(max(self.clock.now(), out.engine_time))
            self._resolve_waiters(out)
            if self._pending or not out.caught_up or self._run_until_idle:
                continue
            delay = self._sleep_for(out.next_time)
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)

    def _snapshot_due(self) -> int:
        """Applied stimuli after which the next snapshot is taken."""
        if self.snapshot_every is None:
            return max(SNAPSHOT_EVERY, len(self.records))
        return self.snapshot_every

    def _work_due(self) -> float:
        """Engine seconds after which a snapshot is taken though no stimulus came: a
        lockstep or accelerated clock runs the engine through a month without one, and
        recovery ran that month again from the last snapshot (60 s to serving for a
        100,000-node pool, docs/benchmarks.md). At least SNAPSHOT_WORK_RATIO times the
        last snapshot's seconds, so snapshots take at most a fifth of the engine's time.
        Only with the default interval (SCHEDD_SNAPSHOT_EVERY fixes it);
        SCHEDD_SNAPSHOT_WORK_MS sets the seconds."""
        if self.snapshot_every is not None:
            return math.inf
        return max(self.snapshot_work_seconds,
                   SNAPSHOT_WORK_RATIO * self._snapshot_seconds)

    async def _snapshot(self) -> None:
        """Store the live state and compact the journal to it (between iterations)."""
        self._applied_since_snapshot = 0
        self._work_since_snapshot = 0.0
        start = time.perf_counter()
        seq, engine_time, clock = self.last_applied_seq, self.engine_time, self.durable_clock
        host = {"records": dict(self.records), "owners": dict(self.owners),
                "extra": self.snapshot_extra()}
        try:
            state = await self.in_engine(lambda: self._pickle_engine(host))
            await self.journal.snapshot_async(Snapshot(seq, engine_time, clock, state))
        except (JournalError, TypeError, AttributeError, pickle.PicklingError) as err:
            log.error("snapshot failed; the journal keeps every stimulus until one works",
                      error=f"{type(err).__name__}: {err}")
            return
        self._snapshot_seconds = time.perf_counter() - start
        log.info("snapshot stored, journal compacted", last_stimulus_id=seq,
                 bytes=len(state), live_jobs=len(self.records),
                 seconds=round(self._snapshot_seconds, 3))

    def _snapshot_objects(self) -> dict[str, Any]:
        return {"engine": self.engine, "primary": self.policy.primary,
                "fallback": self.policy.fallback}

    def _pickle_engine(self, host: dict[str, Any]) -> bytes:
        """Engine thread: the engine's and the policies' state, the live records."""
        return dumps(self._snapshot_objects(),
                     {**host, "results_base": self.results_base,
                      "last_results": self._last_results, "record_base": self.record_base,
                      "record_sent": self._record_sent}, owner=self.policy)

    def _restore(self, data: bytes) -> None:
        """Recovery: the snapshot's state into the objects the daemon built."""
        extra = restore(data, self._snapshot_objects(), owner=self.policy)
        self.engine.outbox, self.engine.transitions = [], []
        self.results_base, self._last_results = extra["results_base"], extra["last_results"]
        self.record_base = dict(extra.get("record_base", self.record_base))
        self._record_sent = dict(extra.get("record_sent", self._record_sent))
        self.records, self.owners = extra["records"], extra["owners"]
        self.restored_extra = extra["extra"]

    async def _mark(self, out: IterationOut) -> bool:
        """Journal the iteration's progress (applied marks, engine time, clock, finished
        jobs) and wait until it is on disk. A write failure holds the iteration's events
        back and retries; requests meanwhile fail with UNAVAILABLE at their own commit."""
        clock = self.clock.now()
        if not (self.clock.lockstep or self.clock.paused):
            # Journal a lease ahead of the reading, so that readings published until the
            # next mark stay behind what a restart resumes from.
            clock += self.clock.speedup * CLOCK_LEASE_TICKS * self.tick
        clock = max(clock, out.engine_time)
        progress = Progress(out.applied, out.overruns, out.engine_time, clock, out.finished,
                            out.results, out.record)
        while True:
            try:
                await self.journal.mark(progress)
            except JournalError as err:
                self.metrics.journal_write_errors.inc()
                if not self.journal_failing:
                    log.error("cannot write progress to the journal; events are held back "
                              "until it can", error=str(err))
                self.journal_failing = True
                if self._stopping:
                    return False
                await asyncio.sleep(MARK_RETRY_WALL)
                continue
            if self.journal_failing:
                log.info("the journal is writable again")
            self.journal_failing = False
            self.durable_clock = max(self.durable_clock, clock)
            return True

    def _fail(self, err: BaseException, batch: list[Stimulus]) -> None:
        """Stop driving a broken engine: log which requests were being applied (or, if
        none, the last ones applied), count it, fail every waiter with UNAVAILABLE."""
        self.failure = err
        self.metrics.engine_failures.inc()
        blamed = batch or list(self._recent)
        log.error("engine failed", error=f"{type(err).__name__}: {err}",
                  request_ids=[st.request_id for st in blamed if st.request_id],
                  stimulus_ids=[st.seq for st in blamed],
                  job_ids=sorted({st.job_id for st in blamed}),
                  in_batch=bool(batch), engine_time=self.engine_time,
                  engine_failures_total=int(self.metrics.registry.get_sample_value(
                      "schedd_engine_failures_total") or 0),
                  exc_info=err)
        for _, done in self._advance_waiters:
            if not done.done():
                done.set_exception(EngineFailed())
        for done in self._idle_waiters:
            if not done.done():
                done.set_exception(EngineFailed())
        self._advance_waiters, self._idle_waiters = [], []
        self.on_failure(err)

    def _sleep_for(self, next_time: float | None) -> float:
        if self.clock.lockstep:
            return math.inf if self.engine_time >= self.clock.now() else 0.0
        delay = self.clock.wall_delay(next_time) if next_time is not None else math.inf
        return min(delay, self.tick)

    async def advance(self, to: float | None, until_idle: bool = False,
                      by: float | None = None) -> None:
        """Move the clock (lockstep: the only way) to `to`, or forward `by` seconds from
        its reading now, and wait until the engine is there."""
        if self.failure is not None:
            raise EngineFailed()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        if until_idle:
            self._run_until_idle = True
            self._idle_waiters.append(done)
        else:
            if by is not None:
                to = self.clock.advance_by(by)
            else:
                assert to is not None
                self.clock.advance_to(to)
            self._advance_waiters.append((to, done))
        self._wake.set()
        await done

    def _resolve_waiters(self, out: IterationOut) -> None:
        if self._pending or not out.caught_up:
            return
        keep = []
        for target, done in self._advance_waiters:
            if out.engine_time >= target:
                if not done.done():
                    done.set_result(None)
            else:
                keep.append((target, done))
        self._advance_waiters = keep
        if not self._run_until_idle:
            for done in self._idle_waiters:
                if not done.done():
                    done.set_result(None)
            self._idle_waiters = []

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        with contextlib.suppress(JournalError):
            # Every reading given out is at most now: resume from now, not the lease.
            self.journal.mark_now(Progress([], [], self.engine_time, self.clock.now()))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.policy.close()

    async def in_engine(self, fn: Callable[[], Any]) -> Any:
        """Run `fn` in the engine thread, between iterations (consistent engine state)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    # ------------------------------------------------------------------ iteration (thread)
    def _iterate(self, stimuli: list[Stimulus], target: float, until_idle: bool,
                 stamps: dict[int, float] | None = None) -> IterationOut:
        start = time.perf_counter()
        engine = self.engine
        start_time = engine.now
        self._drop_stored_results()
        self._drop_stored_record()
        applied: list[tuple[int, float]] = []
        rejected: list[tuple[Stimulus, str]] = []
        intake: list[EventRow] = []
        for st in stimuli:
            applied.append((st.seq, engine.now))
            if st.kind in ("submit", "notice"):
                intake.append(_intake_event(st, engine.now, (stamps or {}).get(st.seq)))
            try:
                self._apply(st)
            except DecisionError as err:
                rejected.append((st, str(err)))
        if self.check_invariants:
            validate(engine)
        caught_up = True
        while True:
            t = engine.next_time()
            if t is None or t > target:
                break
            engine.step()
            if self.check_invariants:
                validate(engine)
            if time.perf_counter() - start > ITERATION_WALL_CAP:
                nt = engine.next_time()
                caught_up = nt is None or nt > target
                break
        if caught_up and math.isfinite(target) and target > engine.now:
            engine.run(until=target)  # no events left before target: just move time
        out = self._collect(applied, rejected, caught_up, start)
        out.intake, out.start_time = intake, start_time
        return out

    def _apply(self, st: Stimulus) -> None:
        engine, body = self.engine, st.body
        if st.kind == "submit":
            engine.submit(st.job_spec())
        elif st.kind == "cancel":
            engine.cancel(body["job_id"])
        elif st.kind == "notice":
            engine.notice(body["job_id"], notice_of_body(body))
        elif st.kind == "ecc":
            engine.elastic(ecc_of_body(body))
        elif st.kind == "checkpoint_done":
            engine.checkpoint_done(body["job_id"])
        else:
            raise DecisionError(f"unknown stimulus kind {st.kind!r}")

    def _collect(self, applied: list[tuple[int, float]], rejected: list[tuple[Stimulus, str]],
                 caught_up: bool, start: float, every_job: bool = False) -> IterationOut:
        engine = self.engine
        transitions, engine.transitions = engine.transitions or [], []
        commands, engine.outbox = engine.outbox or [], []
        eccs = engine.ecc_log[:]
        engine.ecc_log.clear()
        touched = {t[1] for t in transitions} | {c.job_id for c in commands}
        touched.update(ecc.job_id for ecc, _ in eccs)
        touched.update(st.job_id for st, _ in rejected)
        if every_job:  # recovery: the whole table is new
            touched.update(self.records, engine.jobs, engine.finished)
        records: dict[int, JobRecord] = {}
        for job_id in touched:
            rec = self._record(job_id)
            if rec is not None:
                records[job_id] = rec
        rows = self._add_results(records)
        record = self._add_record()
        finished = []
        for job_id, rec in records.items():  # out of memory, into the results store
            if rec.final and engine.finished.pop(job_id, None) is not None:
                rec.owner = self.owners.get(job_id, "")
                finished.append((job_id, rec.state, rec.job_class, rec.user, rec.owner,
                                 encode_record(rec)))
        overruns, self._overruns = self._overruns, []
        return IterationOut(applied, rejected, transitions, commands, eccs, records, finished,
                            rows, overruns,
                            engine.now, engine.next_time(), caught_up,
                            self._cluster_state(), time.perf_counter() - start, record)

    def _record(self, job_id: int) -> JobRecord | None:
        engine = self.engine
        job = engine.jobs.get(job_id) or engine.finished.get(job_id)
        if job is None:
            return None
        block = ""
        alloc = job.allocation
        if alloc is not None and alloc.block >= 0 and isinstance(engine.cluster, BlockCluster):
            block = engine.cluster.block_name(alloc.block)
        return record_of_job(job, block)

    def _add_results(self, records: dict[int, JobRecord]) -> list[tuple[int, int, bytes]]:
        """Executed time and checkpoints of jobs that finished since the last iteration;
        their result rows, numbered from the first row ever, for the results store."""
        results = self.engine.results
        n = len(results)
        lo = self._last_results
        if n == lo:
            return []
        arrays = results.arrays(copy=False)
        ids = arrays["id"][lo:n].tolist()
        executed = arrays["executed"][lo:n].tolist()
        ckpts = arrays["checkpoints"][lo:n].tolist()
        self._last_results = n
        for job_id, ex, ck in zip(ids, executed, ckpts, strict=True):
            rec = records.get(job_id)
            if rec is not None:
                rec.executed, rec.checkpoints = ex, ck
        first = self.results_base + lo
        return [(first + i, job_id, row) for i, (job_id, row) in
                enumerate(zip(ids, pack_rows(arrays, lo, n), strict=True))]

    def _add_record(self) -> list[tuple[str, int, bytes]]:
        """The run record's rows added since the last iteration, numbered per table from
        the first row ever, for the store (the recorder keeps a bounded tail)."""
        rec = self.engine.recorder
        if rec is None:
            return []
        out: list[tuple[str, int, bytes]] = []
        for table, cols in RECORD_TABLES.items():
            n, lo = len(getattr(rec, cols[0][1])), self._record_sent[table]
            if n == lo:
                continue
            arrays = {name: np.asarray(getattr(rec, attr)[lo:n]) for name, attr, _ in cols}
            first = self.record_base[table] + lo
            out += [(table, first + i, row) for i, row in
                    enumerate(pack_rows(arrays, 0, n - lo, RECORD_ROWS[table]))]
            self._record_sent[table] = n
        return out

    def _drop_stored_record(self) -> None:
        """Engine thread, between iterations: rows already in the store leave the
        recorder (open segments and waits stay), so its memory stays bounded."""
        rec = self.engine.recorder
        if rec is None:
            return
        for table, cols in RECORD_TABLES.items():
            if self._record_sent[table] >= self.record_in_memory:
                self.record_base[table] += self._record_sent[table]
                for _, attr, _ in cols:
                    del getattr(rec, attr)[:self._record_sent[table]]
                self._record_sent[table] = 0

    async def run_record(self, table: str, chunk: int = 50_000
                         ) -> AsyncIterator[dict[str, np.ndarray]]:
        """Every row of one run-record table, oldest first: the store's, then the
        recorder's (taken together in the engine thread, so none is missed or doubled)."""
        base, live = await self.in_engine(
            lambda: (self.record_base[table], record_tables(self.engine.recorder)[table]))
        async for part in _stored_then(stored_record(self.journal, table, base, chunk), live):
            yield part

    def _drop_stored_results(self) -> None:
        """Engine thread, between iterations: every row so far is in the results store
        (the last iteration's mark committed them), so the engine's table starts again."""
        if len(self.engine.results) >= self.results_in_memory:
            self.results_base += len(self.engine.results)
            self.engine.results = ResultTable.empty()
            self._last_results = 0

    def _cluster_state(self) -> ClusterSnapshot:
        engine = self.engine
        snap = ClusterSnapshot(free=engine.state.free_nodes, down=engine._down_nodes(),
                               reserved=engine._reserved_idle_nodes())
        cluster = engine.cluster
        if isinstance(cluster, BlockCluster):
            for job in engine.running.values():
                alloc = job.allocation
                if alloc is not None and alloc.block >= 0:
                    snap.partitions.append((cluster.block_name(alloc.block), alloc.nodes,
                                            job.id))
        return snap

    def on_overrun(self, policy: str, index: int, seconds: float) -> None:
        """Called in the engine thread by the budgeted policy."""
        self._overruns.append(index)
        self.metrics.budget_overruns.labels(policy).inc()
        log.warning("budget overrun: fallback policy decided", policy=policy,
                    pass_index=index, seconds=round(seconds, 4), budget=self.policy.budget_s)

    # ------------------------------------------------------------------ absorb (loop)
    def _absorb(self, out: IterationOut) -> None:
        self.metrics.iteration.observe(out.seconds)
        self.engine_time = out.engine_time
        self.next_time = out.next_time
        self.idle = out.next_time is None
        self.cluster_snapshot = out.cluster
        for job_id, rec in out.records.items():
            rec.owner = self.owners.get(job_id, "")
            self.records[job_id] = rec
        made: list[EventRow] = []  # the iteration's events after its intake
        for st, why in out.rejected:
            log.warning("stimulus refused by the engine", stimulus_id=st.seq, kind=st.kind,
                        job_id=st.job_id, reason=why)
            made.append((out.engine_time, "refused", st.job_id, "", why[:200], 0))
            refused = self.records.get(st.job_id)
            if st.kind == "submit" and refused is not None and refused.state == PENDING:
                refused.state = "cancelled"  # the job never entered the engine
        for t, job_id, state, cause, nodes in out.transitions:
            made.append((t, event_kind(state, cause), job_id, state.value, cause, nodes))
        for cmd in out.commands:
            if cmd.kind in ("checkpoint", "warning"):
                self.metrics.checkpoints.labels(cmd.kind).inc()
        for ecc, outcome in out.eccs:
            verdict = "applied" if outcome == "applied" else "rejected"
            self.metrics.eccs.labels(ecc.kind, verdict).inc()
            # The engine handles an ECC at its time, or at once if it is already past it
            # (handled in the iteration that took it in, which began at start_time).
            made.append((max(ecc.time, out.start_time), "ecc", ecc.job_id, "",
                         f"{ecc.kind}:{outcome}",
                         int(ecc.amount) if ecc.kind in ("EP", "RP") else 0))
        self._publish(out.intake, made, out.engine_time)
        for listener in self.command_listeners:
            for cmd in out.commands:
                listener(cmd)
        for row in out.finished:  # now read from the journal
            job_id, key = row[0], (row[1], row[2])
            self.finished_counts[key] = self.finished_counts.get(key, 0) + 1
            self.records.pop(job_id, None)
            self.owners.pop(job_id, None)
            self.on_stored(job_id)

    def _publish(self, intake: list[EventRow], made: list[EventRow], until: float) -> None:
        """Emit an iteration's events in time order (a job's `submitted` before its
        `queued` at the same instant), each at the time it happened. Those later than the
        engine's time (a job submitted for later, an intake the engine has not reached
        yet) wait for an iteration that gets there, so that no later event is earlier:
        every event of a later iteration is at or after this iteration's engine time."""
        held = self._held
        for row in intake:
            self._event_order += 1
            held.append((row[0], 0, self._event_order, row))
        for row in made:
            self._event_order += 1
            held.append((row[0], 1, self._event_order, row))
        if not held:
            return
        held.sort()
        due = bisect.bisect_right(held, (until, 2, 0))
        emit = self.events.emit
        for _, _, _, (t, kind, job_id, state, cause, nodes) in held[:due]:
            emit(t, kind, job_id, state, cause, nodes)
        del held[:due]

    def record(self, job_id: int) -> JobRecord | None:
        """A job's record: live ones from memory, finished ones from the results store."""
        rec = self.records.get(job_id)
        if rec is None:
            text = self.journal.finished_record(job_id)
            if text is not None:
                rec = decode_record(text)
        return rec

    def _count_event(self, event: dict[str, Any]) -> None:
        """Counters and histograms from the event stream (events of _COUNTED_EVENTS: the
        listener is registered for those only)."""
        kind = event["kind"]
        rec = self.records.get(event["job_id"])
        if rec is None:
            return
        cls = CLASS_NAMES.get(rec.job_class, "batch")
        m = self.metrics
        if kind == "started":
            m.starts.labels(cls).inc()
            if rec.first_start == event["time"]:
                m.wait.labels(cls).observe(rec.first_start - rec.submit)
        elif kind in _INTERRUPTIONS:
            cause = event["cause"]
            if kind == "checkpointing" or cause in ("preempt", "node-failure"):
                m.preemptions.labels(cls, cause).inc()
            if cause == "checkpoint-timeout":
                m.checkpoint_timeouts.inc()
        elif kind in FINAL_STATES:
            m.completions.labels(cls, kind).inc()
            if rec.first_start >= 0:  # response over runtime, runtime at least 10 s
                run = rec.executed or rec.end_time - rec.first_start
                m.bounded_slowdown.labels(cls).observe(
                    max(1.0, (rec.end_time - rec.submit) / max(run, 10.0)))

    # ------------------------------------------------------------------ queries (loop)
    def snapshot(self) -> StateSnapshot:
        jobs: dict[tuple[str, str], int] = {}
        queue: dict[str, int] = {}
        first_submit: dict[str, float] = {}
        busy = 0
        # Scrapes run in the metrics server's thread: take the values in one C call
        # (atomic under the GIL) rather than iterate a dict the loop may be growing.
        for rec in list(self.records.values()):
            cls = CLASS_NAMES.get(rec.job_class, "batch")
            jobs[(rec.state, cls)] = jobs.get((rec.state, cls), 0) + 1
            if rec.state in WAITING_STATES:
                queue[cls] = queue.get(cls, 0) + 1
                first_submit[cls] = min(first_submit.get(cls, rec.submit), rec.submit)
            elif rec.state in HOLDING_STATES:
                busy += rec.alloc_nodes
        for (state, letter), n in list(self.finished_counts.items()):
            cls = CLASS_NAMES.get(letter, "batch")
            jobs[(state, cls)] = jobs.get((state, cls), 0) + n
        total = self.engine.cluster.total_nodes
        c = self.cluster_snapshot
        up = max(total - c.down, 1)
        now = self.clock.now()
        return StateSnapshot(
            jobs=jobs, queue=queue,
            oldest_wait={c: max(0.0, self.engine_time - t) for c, t in first_submit.items()},
            nodes={"busy": busy, "free": c.free, "down": c.down, "reserved": c.reserved},
            utilisation=busy / up, virtual_time=now, engine_time=self.engine_time,
            clock_lag=max(0.0, now - self.engine_time),
            mqtt_connected=1.0 if self.bus_connected() else 0.0,
            watch_streams=self.events.watchers, event_seq=self.events.last_seq)

    async def results(self, chunk: int = 50_000) -> AsyncIterator[dict[str, np.ndarray]]:
        """Every result row, oldest first, in chunks: the results store's, then the
        engine's (taken together in the engine thread, so none is missed or doubled)."""
        base, live = await self.in_engine(
            lambda: (self.results_base, self.engine.results.arrays(copy=True)))
        async for part in _stored_then(stored_chunks(self.journal, base, chunk), live):
            yield part

    # ------------------------------------------------------------------ recovery
    def recover(self, rec: Recovered) -> int:
        """Rebuild the engine from the journal (before serving). Returns stimuli replayed."""
        engine = self.engine
        self.policy.enforce = False
        self.policy.forced_fallback = set(rec.overruns)
        late: list[Stimulus] = []
        for seq, why in rec.unreadable:
            self._quarantine(seq, why)
        if rec.snapshot is not None:
            self._restore(rec.snapshot)
            self.last_applied_seq = rec.snapshot_seq
        applied: list[Stimulus] = []
        for st, applied_at in rec.stimuli:
            if st.seq <= rec.snapshot_seq:
                continue  # in the snapshot
            if applied_at is None:
                late.append(st)
                continue
            self._replay_run(applied_at, applied)
            try:
                if st.kind == "submit":
                    spec = st.job_spec()
                self._apply(st)
            except DecisionError:
                pass  # refused before the crash as well
            except Exception as err:  # the engine rejects it: quarantine, go on
                self._quarantine(st.seq, f"{type(err).__name__}: {err}")
                continue
            if st.kind == "submit":
                self.records[spec.id] = record_of_spec(spec, st.owner)
                self.owners[spec.id] = st.owner
            applied.append(st)
        for st in late:
            if st.kind == "submit":
                spec = st.job_spec()
                self.records[spec.id] = record_of_spec(spec, st.owner)
                self.owners[spec.id] = st.owner
        self._replay_run(max(rec.engine_time, engine.now), applied)
        out = self._collect([], [], True, time.perf_counter(), every_job=True)
        out.transitions = []  # already published before the crash
        out.eccs = []
        out.commands = []
        if out.finished or out.results:  # normally stored already (then left as they are)
            self.journal.mark_now(Progress([], [], rec.engine_time, rec.clock, out.finished,
                                           out.results, out.record))
        if applied:
            self.last_applied_seq = applied[-1].seq
        self._absorb(out)
        self.finished_counts = {(s, c): n for (s, c), n in
                                self.journal.finished_count().items()}
        self._pending = late
        # Never below what was published: the journalled clock is at or past any reading.
        self.clock.restore(max(rec.clock, engine.now))
        self.durable_clock = self.clock.now()
        self.policy.enforce = True
        return len(rec.stimuli)

    def _replay_run(self, until: float, applied: list[Stimulus]) -> None:
        """engine.run during recovery; an exception names the stimulus to blame."""
        try:
            self.engine.run(until=until)
        except Exception as err:
            culprit = _blame(err, applied)
            raise ReplayFailed(culprit.seq if culprit else 0,
                               f"{type(err).__name__}: {err}") from err

    def _quarantine(self, seq: int, error: str) -> None:
        log.error("journal entry quarantined: the engine rejects it", stimulus_id=seq,
                  error=error)
        self.journal.quarantine(seq, error)


def _intake_event(st: Stimulus, applied_at: float, accepted_at: float | None) -> EventRow:
    """The event of a submission or a notice the engine takes in at `applied_at`: at the
    time it was accepted (a job's own submit time, or the clock when it was committed if
    the job was submitted for later), or at `applied_at` if the engine was already past
    that (it then queues the job at `applied_at` too)."""
    if st.kind == "submit":
        spec = st.job_spec()
        at = spec.submit if accepted_at is None else min(spec.submit, accepted_at)
        return (max(at, applied_at), "submitted", spec.id, PENDING, "rpc", spec.nodes)
    body = st.body
    when = float(body["time"])
    at = when if accepted_at is None else min(when, accepted_at)
    return (max(at, applied_at), "notice", st.job_id, "", "accepted", int(body["nodes"]))


async def _stored_then(chunks: Iterator[dict[str, np.ndarray]], live: dict[str, np.ndarray]
                       ) -> AsyncIterator[dict[str, np.ndarray]]:
    """The stored chunks, read off the event loop one at a time, then the live rows."""
    loop = asyncio.get_running_loop()
    while True:
        part = await loop.run_in_executor(None, next, chunks, None)
        if part is None:
            break
        yield part
    yield live
