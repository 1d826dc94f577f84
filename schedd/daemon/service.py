"""The gRPC servicer: validates every request, journals accepted ones, answers from records.

Every refusal is one sentence with the right status: INVALID_ARGUMENT for a malformed
request, NOT_FOUND for an unknown job, FAILED_PRECONDITION for a request the job's state
does not allow, ALREADY_EXISTS for a job id in use, PERMISSION_DENIED for another user's
job. A repeated `request_id` with the same request gets the first answer (idempotent); with
a different request it is ALREADY_EXISTS. MQTT advance notices share the checks and the
request ids (`mqtt_notice`). Protobuf stops here: the host and the engine see
plain Python values.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import math
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, NoReturn

import grpc
import numpy as np
import structlog

from .. import limits
from ..core.engine import Engine
from ..core.job import JobClass, JobSpec
from ..durations import is_duration_text, parse_duration
from ..run_files import RECORD_TABLES
from ..v1 import scheduler_pb2 as pb
from ..v1 import scheduler_pb2_grpc as pb_grpc
from .clock import ClockError
from .eventlog import (
    BATCH_EVENTS,
    BATCH_WAIT,
    Closed,
    EventLog,
    Lagged,
    Row,
    TooManyStreams,
    Watcher,
)
from .host import EngineFailed, EngineHost
from .interceptor import current_principal
from .journal import Journal, JournalError
from .records import FINAL_STATES, PENDING, JobRecord, Stimulus, decode_record, spec_body
from .stored import IdsInUse

log = structlog.get_logger("schedd.rpc")

CLASS_OF_PB = {pb.JOB_CLASS_UNSPECIFIED: JobClass.BATCH, pb.JOB_CLASS_BATCH: JobClass.BATCH,
               pb.JOB_CLASS_REALTIME: JobClass.REALTIME,
               pb.JOB_CLASS_ON_DEMAND: JobClass.ONDEMAND,
               pb.JOB_CLASS_MALLEABLE: JobClass.MALLEABLE,
               pb.JOB_CLASS_DEDICATED: JobClass.DEDICATED}
PB_OF_LETTER = {"B": pb.JOB_CLASS_BATCH, "R": pb.JOB_CLASS_REALTIME,
                "O": pb.JOB_CLASS_ON_DEMAND, "M": pb.JOB_CLASS_MALLEABLE,
                "D": pb.JOB_CLASS_DEDICATED}
PB_OF_STATE = {PENDING: pb.JOB_STATE_PENDING, "queued": pb.JOB_STATE_QUEUED,
               "running": pb.JOB_STATE_RUNNING, "checkpointing": pb.JOB_STATE_CHECKPOINTING,
               "preempted": pb.JOB_STATE_PREEMPTED, "completed": pb.JOB_STATE_COMPLETED,
               "killed": pb.JOB_STATE_KILLED, "cancelled": pb.JOB_STATE_CANCELLED,
               "failed": pb.JOB_STATE_FAILED}
STATE_OF_PB = {v: k for k, v in PB_OF_STATE.items()}
ECC_OF_PB = {pb.ECC_KIND_ET: "ET", pb.ECC_KIND_RT: "RT", pb.ECC_KIND_EP: "EP",
             pb.ECC_KIND_RP: "RP"}
MAX_PAGE = limits.MAX_PAGE
MAX_JOB_ID = limits.MAX_JOB_ID  # ids travel as exact doubles in GetResults
RESULT_CHUNK = 8192
PAGE_TOKEN = re.compile(r"[0-9]{1,20}", re.ASCII)  # str.isdigit() also takes "²"


MAX_WAITING = 1000  # requests waiting for the journal before RESOURCE_EXHAUSTED (_admit)
MIN_RETRY_MS = 10  # the smallest retry hint a refused request gets


class Refused(Exception):
    """A request we answer with a status other than OK (and, when the daemon is only busy,
    a hint of when to retry: trailing metadata `retry-after-ms`)."""

    def __init__(self, code: grpc.StatusCode, message: str, retry_after_ms: int = 0):
        super().__init__(message)
        self.code = code
        self.retry_after_ms = retry_after_ms


def _invalid(message: str) -> NoReturn:
    raise Refused(grpc.StatusCode.INVALID_ARGUMENT, message)


def _limit(name: str, value: Any, label: str | None = None) -> Any:
    """`value` if it is within the shared limits of field `name` (schedd/limits.py)."""
    why = limits.problem(name, value, label)
    if why is not None:
        _invalid(why)
    return value


# limits.quick_range of each field a submission checks on every job: protobuf gives the
# int fields ints and the double fields floats, as quick_range requires (the seven
# _limit calls per job were a fifth of a streamed job's handling; issue 21).
_NODES_LO, _NODES_HI = limits.quick_range("nodes")
_WALLTIME_LO, _WALLTIME_HI = limits.quick_range("walltime")
_RUNTIME_LO, _RUNTIME_HI = limits.quick_range("runtime")
_SETUP_LO, _SETUP_HI = limits.quick_range("setup")
_USER_LO, _USER_HI = limits.quick_range("user")
_PROJECT_LO, _PROJECT_HI = limits.quick_range("project")
_QUEUE_LO, _QUEUE_HI = limits.quick_range("queue")
_CHECKED_AFTER_NODES = ("walltime", "runtime", "setup", "user", "project", "queue")


class SchedulerService(pb_grpc.SchedulerServicer):
    def __init__(self, host: EngineHost, journal: Journal, *, cluster_name: str,
                 max_job_nodes: int, policy_options: dict[str, str], seed: int,
                 engine_options: str, agents: str, policy_spec: str = "{}"):
        self.host = host
        self.journal = journal
        # Bound once: the module's logger is a lazy proxy that builds a new bound logger
        # on every call, which for the per-submission debug line below (filtered out at
        # the default level) was about 2% of the event loop's GIL samples (issue 35).
        self._log = log.bind()
        self.engine: Engine = host.engine
        self.cluster_name = cluster_name
        self.max_job_nodes = max_job_nodes
        self.policy_options = policy_options
        self.seed = seed
        self.engine_options = engine_options
        self.agents = agents
        self.policy_spec = policy_spec
        self.known_ids: IdsInUse = IdsInUse(host.records)
        self.next_id = 1  # cursor of assigned ids (_new_spec)
        # request_id -> (fingerprint, stimulus seq, response fields)
        self.requests: dict[str, tuple[str, int, dict[str, Any]]] = {}
        self._inflight: dict[str, asyncio.Future[None]] = {}
        self.max_waiting = MAX_WAITING  # SCHEDD_MAX_WAITING (server.py)
        self.encoded_events = EncodedEvents(host.events)
        self._stall_checker: asyncio.Task[None] | None = None

    def restore_ids(self, stimuli: list[Stimulus]) -> None:
        """After recovery: ids in use, and the assigned-id cursor past the last id the
        daemon assigned (journalled as `assigned` in the submission's response)."""
        self.known_ids = IdsInUse(self.host.records)
        assigned = [st.job_id for st in stimuli
                    if st.kind == "submit" and st.response.get("assigned")]
        self.next_id = max(assigned, default=0) + 1

    def remember_requests(self, stimuli: list[Stimulus]) -> None:
        """After recovery: the journal's request ids answer retries again."""
        for st in stimuli:
            if st.request_id:
                self.requests[st.request_id] = (st.response.get("_fp", ""), st.seq,
                                                st.response)

    # ------------------------------------------------------------------ helpers
    def _now(self) -> float:
        return self.host.clock.now()

    def _now_accepting(self) -> float:
        """The clock's reading, for new work dated "now": jobs may run on past MAX_TIME,
        so a lockstep clock can stand there, but nothing is accepted with a time outside
        the limits every reader of the journal relies on."""
        now = self.host.clock.now()
        if now > limits.MAX_TIME:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                          f"the clock ({now:.0f} s) is past the latest time schedd accepts "
                          f"new work at ({limits.MAX_TIME:g} s, year 2286); nothing more "
                          "can be submitted, noticed or changed")
        return now

    def _record(self, job_id: int) -> JobRecord:
        rec = self.host.record(job_id)  # finished jobs come from the results store
        if rec is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"there is no job {job_id}")
        structlog.contextvars.bind_contextvars(job_id=job_id)
        return rec

    def _owned(self, job_id: int) -> JobRecord:
        rec = self._record(job_id)
        principal = current_principal()
        if not principal.may_act_on(rec.owner):
            raise Refused(grpc.StatusCode.PERMISSION_DENIED,
                          f"job {job_id} belongs to {rec.owner or 'nobody'}; {principal.user} "
                          "may act on its own jobs only")
        return rec

    def _live(self, job_id: int, action: str) -> JobRecord:
        rec = self._owned(job_id)
        if rec.final:
            raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                          f"cannot {action} job {job_id}: it is already {rec.state}")
        return rec

    def _admit(self) -> None:
        """Back-pressure: with `max_waiting` requests already waiting for the journal, a
        new one is refused at once (RESOURCE_EXHAUSTED, nothing journalled) with a retry
        hint, rather than queued behind them with its latency growing."""
        waiting = self.journal.waiting
        if waiting < self.max_waiting:
            return
        self.host.metrics.busy_refusals.inc()
        retry_ms = max(MIN_RETRY_MS, math.ceil(2000 * self.journal.commit_seconds))
        raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                      f"the daemon is busy: {waiting} requests are waiting for the journal "
                      f"(at most {self.max_waiting}); nothing was recorded, retry in "
                      f"{retry_ms} ms", retry_after_ms=retry_ms)

    async def _commit(self, stimuli: list[Stimulus]) -> None:
        self._admit()
        try:
            await self.journal.append(stimuli)
        except JournalError as err:
            self.host.metrics.journal_write_errors.inc()
            raise Refused(grpc.StatusCode.UNAVAILABLE, str(err)) from None
        if len(stimuli) == 1:
            structlog.contextvars.bind_contextvars(stimulus_id=stimuli[0].seq)
        self._log.debug("accepted", kind=stimuli[0].kind, stimuli=len(stimuli),
                  first_stimulus_id=stimuli[0].seq)

    async def _once(self, request: Any, context: grpc.aio.ServicerContext | None,
                    build: Any) -> dict[str, Any]:
        """Idempotency by request_id: run `build` (which journals) once per request id.
        Request ids are per user: one user's id never answers another's request. MQTT
        notices come through here too (`mqtt_notice`, without a context)."""
        if not request.request_id:
            return dict(await build())
        rid = request_key(request.request_id)
        fp = fingerprint(request)
        while rid in self._inflight:  # the same request racing with itself
            await asyncio.shield(self._inflight[rid])
        seen = self.requests.get(rid)
        if seen is not None:
            if seen[0] != fp:
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"request id "
                              f"{request.request_id!r} was already used for a different "
                              "request")
            return {**seen[2], "duplicate": True, "stimulus_id": seen[1]}
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._inflight[rid] = done
        try:
            response = dict(await build(fp))
            self.requests[rid] = (fp, response["stimulus_id"], response)
            return response
        finally:
            del self._inflight[rid]
            done.set_result(None)

    async def _guard(self, context: grpc.aio.ServicerContext, coro: Any) -> Any:
        try:
            if self.host.failure is not None:  # stopping: nothing is applied any more
                coro.close()
                raise EngineFailed()
            return await coro
        except Refused as err:
            if err.retry_after_ms:
                context.set_trailing_metadata((("retry-after-ms", str(err.retry_after_ms)),))
            await context.abort(err.code, str(err))
        except EngineFailed as err:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(err))
        except (grpc.aio.AbortError, asyncio.CancelledError):
            raise
        except Exception:  # the daemon never crashes on input: log it, answer INTERNAL
            log.exception("internal error")
            await context.abort(grpc.StatusCode.INTERNAL,
                                "the daemon failed on this request; see its log")

    # ------------------------------------------------------------------ submission
    def _spec(self, r: pb.SubmitJobRequest, index: str = "", assign: int = 0) -> JobSpec:
        """The request's JobSpec, checked; id `assign` when the request leaves the id to
        the daemon (0 then if none is given)."""
        try:
            return self._spec_checked(r, assign)
        except Refused as err:
            if index:
                raise Refused(err.code, f"job {index}: {err}") from None
            raise

    def _spec_checked(self, r: pb.SubmitJobRequest, assign: int) -> JobSpec:
        """Every field within its limits (schedd/limits.py) and the machine's, or
        INVALID_ARGUMENT naming the first one that is not."""
        # Each field is read once (a message field is read through a descriptor).
        cls = CLASS_OF_PB.get(r.job_class)
        if cls is None:
            _invalid(f"unknown job class {r.job_class}")
        job_id = r.job_id
        if job_id:  # 0: the daemon assigns one
            _limit("job_id", job_id)
        nodes, walltime, runtime, setup = r.nodes, r.walltime, r.runtime, r.setup
        user, project, queue = r.user, r.project, r.queue
        # Comparisons only (limits.quick_range); outside them, the fields are checked one
        # by one in the order and with the messages of the full check.
        if not (_NODES_LO < nodes <= _NODES_HI and _WALLTIME_LO < walltime <= _WALLTIME_HI
                and _RUNTIME_LO < runtime <= _RUNTIME_HI and _SETUP_LO < setup <= _SETUP_HI
                and _USER_LO < user <= _USER_HI and _PROJECT_LO < project <= _PROJECT_HI
                and _QUEUE_LO < queue <= _QUEUE_HI):
            _limit("nodes", nodes)
            self._fits(nodes)
            for name, value in zip(_CHECKED_AFTER_NODES,
                                   (walltime, runtime, setup, user, project, queue),
                                   strict=True):
                _limit(name, value)
        else:
            self._fits(nodes)
        min_nodes = -1
        if cls is JobClass.MALLEABLE:
            min_nodes = r.min_nodes or nodes
            if not 1 <= min_nodes <= nodes:
                _invalid(f"malleable min_nodes {r.min_nodes} must be between 1 and "
                         f"nodes ({nodes})")
        elif r.min_nodes:
            _invalid("min_nodes is for malleable jobs only")
        now = self._now_accepting()
        submit = now
        if r.HasField("submit_time"):
            submit = max(now, _limit("submit_time", r.submit_time))
        requested_start = -1.0
        if r.HasField("requested_start"):
            requested_start = _limit("requested_start", r.requested_start)
            if requested_start < now:
                _invalid(f"requested_start {requested_start:g} is in the past (now "
                         f"{now:g})")
        elif cls is JobClass.DEDICATED:
            _invalid("a dedicated job needs a requested_start")
        ckpt_interval = (_limit("ckpt_interval", r.ckpt_interval)
                         if r.HasField("ckpt_interval") else -1.0)
        ckpt_gb_per_node = (_limit("ckpt_gb_per_node", r.ckpt_gb_per_node)
                            if r.HasField("ckpt_gb_per_node") else -1.0)
        # Positional, in JobSpec's field order: the compiled constructor parses sixteen
        # keywords about five times slower than positions (1.6 against 0.3 us; issue 21).
        return JobSpec(job_id or assign, submit, runtime or walltime, nodes, walltime,
                       user, project, cls, min_nodes, not r.not_checkpointable,
                       ckpt_gb_per_node, setup, requested_start, None,
                       queue, ckpt_interval)

    def _fits(self, nodes: int) -> None:
        if self.engine.cluster.alloc_size(nodes) is None:
            _invalid(f"{nodes} nodes is more than {self.cluster_name} can give one "
                     f"job ({self.max_job_nodes})")

    def _new_spec(self, r: pb.SubmitJobRequest, index: str = "") -> JobSpec:
        """A valid request's JobSpec, its id claimed. Explicit ids are the client's
        (1..MAX_JOB_ID, ALREADY_EXISTS if taken). Assigned ids come from their own cursor,
        which only moves past ids it hands out or finds taken: a client's huge explicit id
        never uses up the assigned ones (docs/api.md). The id to assign is chosen before
        the checks, so the spec is built once, and claimed only after them, so a refused
        request uses none up."""
        assign = 0
        if not r.job_id:
            assign = self.next_id = self.known_ids.first_free(self.next_id)
        spec = self._spec(r, index, assign)
        if assign:
            if assign > MAX_JOB_ID:  # only after 2**53 jobs
                raise Refused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              "no job id is left to assign; give job_id explicitly")
            self.next_id += 1
        elif spec.id in self.known_ids:
            raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"job id {spec.id} is already in use")
        self.known_ids.add(spec.id)
        return spec

    async def SubmitJob(self, request: pb.SubmitJobRequest,
                        context: grpc.aio.ServicerContext) -> pb.SubmitJobResponse:
        async def build(fp: str = "") -> dict[str, Any]:
            self._admit()  # before an id is claimed: a refusal uses none up
            spec = self._new_spec(request)
            structlog.contextvars.bind_contextvars(job_id=spec.id)
            response = {"job_id": spec.id, "submit_time": spec.submit, "_fp": fp}
            if not request.job_id:
                response["assigned"] = True
            st = Stimulus("submit", spec_body(spec), current_principal().user,
                          request_key(request.request_id), response=response, spec=spec)
            try:
                await self._commit([st])
            except Refused:
                self.known_ids.discard(spec.id)
                raise
            return {**response, "stimulus_id": st.seq}

        async def run() -> pb.SubmitJobResponse:
            r = await self._once(request, context, build)
            return pb.SubmitJobResponse(job_id=r["job_id"], submit_time=r["submit_time"],
                                        duplicate=r.get("duplicate", False),
                                        stimulus_id=r["stimulus_id"])

        return await self._guard(context, run())

    async def SubmitJobs(self, request_iterator: AsyncIterator[pb.SubmitJobsRequest],
                         context: grpc.aio.ServicerContext) -> pb.SubmitJobsResponse:
        async def run() -> pb.SubmitJobsResponse:
            owner = current_principal().user
            stimuli: list[Stimulus] = []
            ids: list[int] = []
            duplicates = 0
            claimed: list[int] = []
            seen_rids: set[str] = set()
            try:
                index = 0
                async for batch in request_iterator:
                    for r in batch.jobs:
                        index += 1
                        job_id, duplicate = self._stream_job(r, index, owner, seen_rids,
                                                             stimuli, claimed)
                        ids.append(job_id)
                        duplicates += duplicate
                if stimuli:
                    await self._commit(stimuli)
            except BaseException:
                self.known_ids.difference_update(claimed)
                raise
            for st in stimuli:
                if st.request_id:
                    self.requests[st.request_id] = (st.response["_fp"], st.seq, st.response)
            return pb.SubmitJobsResponse(job_ids=ids, accepted=len(stimuli),
                                         duplicates=duplicates)

        return await self._guard(context, run())

    def _stream_job(self, r: pb.SubmitJobRequest, index: int, owner: str, seen: set[str],
                    stimuli: list[Stimulus], claimed: list[int]) -> tuple[int, bool]:
        """One job of a SubmitJobs stream: (its id, whether it is a retried duplicate)."""
        rid = request_key(r.request_id)
        fp = fingerprint(r) if rid else ""
        if rid and (rid in self.requests or rid in seen):
            prior = self.requests.get(rid)
            if prior is None:
                _invalid(f"job #{index}: request id {r.request_id!r} repeats within the "
                         "stream")
            if prior[0] != fp:
                raise Refused(grpc.StatusCode.ALREADY_EXISTS,
                              f"job #{index}: request id {r.request_id!r} was already used "
                              "for a different request")
            return prior[2]["job_id"], True
        spec = self._new_spec(r, f"#{index}")
        claimed.append(spec.id)
        seen.add(rid)
        response = {"job_id": spec.id, "submit_time": spec.submit, "_fp": fp}
        if not r.job_id:
            response["assigned"] = True
        # By position (kind, body, owner, request_id, seq, response, spec): per job.
        stimuli.append(Stimulus("submit", spec_body(spec), owner, rid, 0, response, spec))
        return spec.id, False

    # ------------------------------------------------------------------ job actions
    async def CancelJob(self, request: pb.CancelJobRequest,
                        context: grpc.aio.ServicerContext) -> pb.CancelJobResponse:
        async def build(fp: str = "") -> dict[str, Any]:
            self._live(request.job_id, "cancel")
            st = Stimulus("cancel", {"job_id": request.job_id}, current_principal().user,
                          request_key(request.request_id),
                          response={"job_id": request.job_id, "_fp": fp})
            await self._commit([st])
            return {**st.response, "stimulus_id": st.seq}

        async def run() -> pb.CancelJobResponse:
            r = await self._once(request, context, build)
            return pb.CancelJobResponse(job_id=r["job_id"], stimulus_id=r["stimulus_id"])

        return await self._guard(context, run())

    async def GetJob(self, request: pb.GetJobRequest,
                     context: grpc.aio.ServicerContext) -> pb.Job:
        async def run() -> pb.Job:
            return self._job_pb(self._record(request.job_id))

        return await self._guard(context, run())

    async def ListJobs(self, request: pb.ListJobsRequest,
                       context: grpc.aio.ServicerContext) -> pb.ListJobsResponse:
        async def run() -> pb.ListJobsResponse:
            size = request.page_size or 100
            if not 1 <= size <= MAX_PAGE:
                _invalid(f"page_size must be between 1 and {MAX_PAGE}, got {size}")
            after = 0
            if request.page_token:
                if not PAGE_TOKEN.fullmatch(request.page_token):
                    _invalid(f"page_token {request.page_token!r} is not one this daemon gave")
                after = int(request.page_token)
                if after > MAX_JOB_ID:  # a job id; SQLite's integers end at 2**63 - 1
                    _invalid(f"page_token {request.page_token!r} is not one this daemon "
                             f"gave (job ids end at {MAX_JOB_ID})")
            bad = [s for s in request.states if s not in STATE_OF_PB]
            if bad:
                _invalid(f"unknown job state {bad[0]}")
            states = {STATE_OF_PB[s] for s in request.states}
            classes = set()
            for c in request.classes:
                if c not in CLASS_OF_PB:
                    _invalid(f"unknown job class {c}")
                classes.add(CLASS_OF_PB[c].value)
            user = request.user if request.HasField("user") else None
            live = self.host.records
            matched = sorted(
                job_id for job_id, rec in live.items()
                if (not states or rec.state in states)
                and (not classes or rec.job_class in classes)
                and (user is None or rec.user == user)
                and (not request.owner or rec.owner == request.owner))
            start = _bisect_after(matched, after)
            # Finished jobs come from the results store, merged in id order.
            stored, stored_total = self._finished_page(states, classes, user,
                                                       request.owner, after, size + 1)
            stored = [r for r in stored if r.job_id not in live]
            merged = sorted([live[i] for i in matched[start:start + size + 1]] + stored,
                            key=lambda r: r.job_id)
            page = merged[:size]
            token = str(page[-1].job_id) if len(merged) > size else ""
            return pb.ListJobsResponse(jobs=[self._job_pb(r) for r in page],
                                       next_page_token=token,
                                       total=len(matched) + stored_total)

        return await self._guard(context, run())

    def _finished_page(self, states: set[str], classes: set[str], user: int | None,
                       owner: str, after: int, limit: int) -> tuple[list[JobRecord], int]:
        """Records of finished jobs in the results store matching the filters."""
        where: list[str] = ["1"]
        params: list[Any] = []
        wanted = [s for s in states if s in FINAL_STATES] if states else []
        if states and not wanted:
            return [], 0
        for column, values in (("state", wanted), ("job_class", sorted(classes))):
            if values:
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                params.extend(values)
        if user is not None:
            where.append("user = ?")
            params.append(user)
        if owner:
            where.append("owner = ?")
            params.append(owner)
        texts, total = self.journal.finished_page(" AND ".join(where), params, after, limit)
        return [decode_record(t) for t in texts], total

    async def AdvanceNotice(self, request: pb.AdvanceNoticeRequest,
                            context: grpc.aio.ServicerContext) -> pb.AdvanceNoticeResponse:
        async def build(fp: str = "") -> dict[str, Any]:
            body = self.notice_body(request.job_id, request.expected_arrival, request.nodes,
                                    request.walltime,
                                    request.notice_time if request.HasField("notice_time")
                                    else None)
            st = Stimulus("notice", body, current_principal().user,
                          request_key(request.request_id), response={"_fp": fp})
            await self._commit([st])
            return {**st.response, "stimulus_id": st.seq}

        async def run() -> pb.AdvanceNoticeResponse:
            r = await self._once(request, context, build)
            return pb.AdvanceNoticeResponse(stimulus_id=r["stimulus_id"])

        return await self._guard(context, run())

    def notice_of_payload(self, payload: dict[str, Any]) -> pb.AdvanceNoticeRequest:
        """The `AdvanceNotice` request an MQTT notice (decoded JSON) stands for: each field a
        JSON number within its limits (not a string, a boolean or a fraction where a whole
        number belongs; the walltime may also be a duration string, "1:30:00" or "1h30m"),
        `request_id` a string (absent, null or "": none). KeyError if a field is missing.
        Only the checks that do not depend on the daemon's state: those come after the
        request id (`mqtt_notice`), as over gRPC."""
        values = {}
        for name in ("job_id", "expected_arrival", "nodes", "walltime", "notice_time"):
            if name == "notice_time" and name not in payload:
                continue
            value = payload[name]
            if name == "walltime" and is_duration_text(value):
                value = parse_duration(value, "a walltime")
            values[name] = _limit(name, value)
        request_id = payload.get("request_id")
        if request_id is None:
            request_id = ""
        if not isinstance(request_id, str):
            _invalid(f"request_id must be a string, got {limits.shown(request_id)}")
        why = limits.text_problem("request_id", request_id)
        if why is not None:
            _invalid(why)
        request = pb.AdvanceNoticeRequest(
            request_id=request_id, job_id=int(values["job_id"]),
            expected_arrival=float(values["expected_arrival"]), nodes=int(values["nodes"]),
            walltime=float(values["walltime"]))
        if "notice_time" in values:
            request.notice_time = float(values["notice_time"])
        return request

    async def mqtt_notice(self, payload: dict[str, Any]) -> tuple[int, bool]:
        """An advance notice published on MQTT by the current principal: the checks,
        ownership rules and idempotency of the `AdvanceNotice` RPC, then the journal.
        Returns (stimulus id, duplicate): a `request_id` the principal already used for
        the same notice (over MQTT or gRPC; request ids are per user, `request_key`)
        answers with the first notice's stimulus and journals nothing. Raises Refused
        (ALREADY_EXISTS when the id was used for a different request), KeyError or
        TypeError for a missing field, JournalError when the journal cannot be written.

        The fingerprint is that of the equivalent `AdvanceNoticeRequest`, so a notice
        retried over the other transport is recognised as the same request. Not
        `_commit`: an MQTT notice has no retry hint to carry, so it is not refused as busy
        (as before)."""
        request = self.notice_of_payload(payload)

        async def build(fp: str = "") -> dict[str, Any]:
            body = self.notice_body(request.job_id, request.expected_arrival, request.nodes,
                                    request.walltime,
                                    request.notice_time if request.HasField("notice_time")
                                    else None, source="mqtt")
            st = Stimulus("notice", body, current_principal().user,
                          request_key(request.request_id), response={"_fp": fp})
            await self.journal.append([st])
            return {**st.response, "stimulus_id": st.seq}

        try:
            r = await self._once(request, None, build)
        except Refused as err:
            if err.code != grpc.StatusCode.ALREADY_EXISTS:
                raise
            raise Refused(err.code, f"request_id {request.request_id!r} was already used "
                          f"by {current_principal().user} for a different request; a "
                          "retried notice must repeat it unchanged, a new notice needs a "
                          "new request_id.") from None
        return int(r["stimulus_id"]), bool(r.get("duplicate", False))

    def notice_body(self, job_id: int, arrival: float, nodes: int, walltime: float,
                    notice_time: float | None, source: str = "rpc") -> dict[str, Any]:
        """Validate an advance notice (RPC and MQTT share this)."""
        _limit("job_id", job_id)
        now = self._now_accepting()
        when = now if notice_time is None else max(now, _limit("notice_time", notice_time))
        if job_id in self.host.records:
            rec = self._owned(job_id)
            # A pending record is a job the engine has not taken in yet; it has arrived
            # all the same once its submit time is reached (a job submitted just now, in
            # the moment before the engine's next iteration).
            if rec.state != PENDING or rec.submit <= when:
                state = rec.state if rec.state != PENDING else f"submitted for {rec.submit:g}"
                raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                              f"job {job_id} has already arrived ({state}); a notice "
                              "comes before the job")
        if _limit("expected_arrival", arrival) < when:
            _invalid(f"expected_arrival {arrival:g} is in the past (now {when:g})")
        _limit("nodes", nodes)
        if self.engine.cluster.alloc_size(nodes) is None:
            _invalid(f"nodes must be between 1 and {self.max_job_nodes}, got {nodes}")
        _limit("walltime", walltime)
        return {"job_id": job_id, "time": when, "est_arrival": arrival, "nodes": nodes,
                "walltime": walltime, "source": source}

    async def ElasticControl(self, request: pb.ElasticControlRequest,
                             context: grpc.aio.ServicerContext) -> pb.ElasticControlResponse:
        async def build(fp: str = "") -> dict[str, Any]:
            now = self._now_accepting()
            kind = ECC_OF_PB.get(request.kind)
            if kind is None:
                _invalid(f"unknown elastic control command type {request.kind}; expected "
                         "ET, RT, EP or RP")
            amount = _limit("amount_nodes" if kind in ("EP", "RP") else "amount_seconds",
                            request.amount, f"the amount of {kind}")
            self._live(request.job_id, "apply an elastic control command to")
            policy = self.host.policy
            if not policy.processes_eccs:
                raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                              f"policy {policy.name} has no ECC processor, so it does not "
                              "apply elastic control commands (run its -e variant)")
            when = max(now, _limit("time", request.time)) if request.HasField("time") else now
            st = Stimulus("ecc", {"job_id": request.job_id, "time": when, "kind": kind,
                                  "amount": amount},
                          current_principal().user, request_key(request.request_id),
                          response={"_fp": fp})
            await self._commit([st])
            return {**st.response, "stimulus_id": st.seq}

        async def run() -> pb.ElasticControlResponse:
            r = await self._once(request, context, build)
            return pb.ElasticControlResponse(stimulus_id=r["stimulus_id"])

        return await self._guard(context, run())

    async def CheckpointDone(self, request: pb.CheckpointDoneRequest,
                             context: grpc.aio.ServicerContext) -> pb.CheckpointDoneResponse:
        async def build(fp: str = "") -> dict[str, Any]:
            rec = self._owned(request.job_id)
            if rec.state != "checkpointing":
                raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                              f"job {request.job_id} was not asked to checkpoint (it is "
                              f"{rec.state})")
            st = Stimulus("checkpoint_done", {"job_id": request.job_id},
                          current_principal().user, request_key(request.request_id),
                          response={"_fp": fp})
            await self._commit([st])
            return {**st.response, "stimulus_id": st.seq}

        async def run() -> pb.CheckpointDoneResponse:
            r = await self._once(request, context, build)
            return pb.CheckpointDoneResponse(stimulus_id=r["stimulus_id"])

        return await self._guard(context, run())

    # ------------------------------------------------------------------ events
    async def WatchEvents(self, request: pb.WatchEventsRequest,
                          context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        """The stream reads the ring from its own cursor as fast as gRPC takes the events
        (a write waits while the client's flow-control window is full), so a stalled
        client holds nothing but its place and one message; it is ended when it falls
        more than the backlog bound behind (eventlog.py), while its write waits too
        (`_check_stalled`). It writes with context.write; the `yield` below only makes it the
        async generator the interceptor wraps. Events go out as their encoded bytes, encoded
        once for every stream (`EncodedEvents`; the method's serializer passes bytes on,
        server.py). With `batch`, one message carries up to BATCH_EVENTS events
        (`Event.more`), and a stream that sent a short batch gathers for BATCH_WAIT
        before it reads again: one gRPC write costs the loop about 40 us, which per event
        and per watcher was what a hundred watchers cost (docs/benchmarks.md)."""
        events = self.host.events
        kinds = frozenset(request.kinds)
        job_id = request.job_id
        batch = request.batch
        limit = BATCH_EVENTS if batch else 256
        encoded = self.encoded_events
        if request.from_seq and request.from_seq < events.oldest_seq:
            await context.abort(grpc.StatusCode.OUT_OF_RANGE,
                                f"events before {events.oldest_seq} are no longer kept; "
                                f"resume with from_seq={events.oldest_seq}")
        try:
            watcher = events.watch(current_principal().user, request.from_seq)
        except TooManyStreams as err:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err))
        except Closed:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the daemon is stopping; "
                                "resume once it serves again")
        watcher.task = asyncio.current_task()
        self._watch_stalls()
        try:
            while True:
                try:
                    span = events.claim(watcher, limit)
                except Closed:
                    resume = watcher.next_seq
                    await context.abort(grpc.StatusCode.UNAVAILABLE,
                                        f"the daemon is stopping; the event stream was cut "
                                        f"off after {resume - 1}: resume with "
                                        f"from_seq={resume}")
                if span is None:
                    await events.changed()
                    continue
                if kinds or job_id:
                    rows = [row for row in events.rows(*span)
                            if (not kinds or row[2] in kinds) and (not job_id
                                                                   or row[3] == job_id)]
                    if not rows:
                        continue
                    if batch:
                        await self._send(context, watcher, encoded.batch(rows), rows[0][0])
                    else:
                        for row in rows:
                            await self._send(context, watcher, encoded.one(row), row[0])
                elif batch:
                    await self._send(context, watcher, encoded.span(*span), span[0])
                else:
                    for row in events.rows(*span):
                        await self._send(context, watcher, encoded.one(row), row[0])
                if batch and span[1] - span[0] + 1 < limit:
                    await asyncio.sleep(BATCH_WAIT)  # let a batch gather
        except Lagged as err:
            events.unwatch(watcher)  # its place is free before the status goes out
            self.host.metrics.watch_cutoffs.inc()
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err))
        except asyncio.CancelledError:
            if watcher.cut is None:  # the client went away, or the daemon is stopping
                raise
            events.unwatch(watcher)  # ended by _check_stalled while its write waited
            self.host.metrics.watch_cutoffs.inc()
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(watcher.cut))
        finally:
            events.unwatch(watcher)
        if False:  # an async generator for the interceptor; it writes with context.write
            yield b""

    async def _send(self, context: grpc.aio.ServicerContext, watcher: Watcher, data: bytes,
                    first: int) -> None:
        """Write one message (its first event `first`). A client that stops reading fills
        its flow-control window and the write waits; `_check_stalled` looks at such
        writes every WRITE_CHECK seconds and ends a stream past the backlog bound
        without waiting for its client to read again: the stream holds its place and
        this one message until then, never more. (A task and a timed wait per write cost
        the loop about 100 us a message; the flag is free.)"""
        watcher.writing, watcher.since = first, time.monotonic()
        try:
            await context.write(data)
        finally:
            watcher.writing = 0

    def _watch_stalls(self) -> None:
        if self._stall_checker is None or self._stall_checker.done():
            self._stall_checker = asyncio.get_running_loop().create_task(
                self._check_stalled())

    async def _check_stalled(self) -> None:
        """While streams are open: every WRITE_CHECK seconds, a stream whose write has
        waited that long and which is past the bound is ended (its handler cancelled,
        which answers RESOURCE_EXHAUSTED with the reason, WatchEvents)."""
        events = self.host.events
        while events.watchers:
            await asyncio.sleep(WRITE_CHECK)
            now = time.monotonic()
            for w in events.streams():
                if (w.writing and w.cut is None and w.task is not None
                        and now - w.since >= WRITE_CHECK):
                    try:
                        events.check(w, w.writing, on_its_way=True)
                    except Lagged as err:
                        w.cut = err
                        w.task.cancel()

    # ------------------------------------------------------------------ cluster, results
    async def GetCluster(self, request: pb.GetClusterRequest,
                         context: grpc.aio.ServicerContext) -> pb.ClusterInfo:
        host = self.host
        snap = host.snapshot()
        queue: dict[str, list[int]] = {}  # class -> [jobs, nodes requested]
        running: dict[str, list[int]] = {}  # class -> [jobs, nodes held]
        pending = finished = 0
        for rec in host.records.values():
            if rec.state in ("queued", "preempted"):
                q = queue.setdefault(rec.job_class, [0, 0])
                q[0] += 1
                q[1] += rec.nodes
            elif rec.state in ("running", "checkpointing"):
                r = running.setdefault(rec.job_class, [0, 0])
                r[0] += 1
                r[1] += rec.alloc_nodes
            else:
                pending += rec.state == PENDING
                finished += rec.state in FINAL_STATES
        finished += sum(host.finished_counts.values())  # those in the results store
        c = host.cluster_snapshot
        counters = {k: float(v) for k, v in self.engine_stats().items()}
        return pb.ClusterInfo(
            name=self.cluster_name, total_nodes=self.engine.cluster.total_nodes,
            free_nodes=c.free, busy_nodes=snap.nodes["busy"], down_nodes=c.down,
            reserved_nodes=c.reserved, utilisation=snap.utilisation,
            partitions=[pb.Partition(block=b, nodes=n, job_id=j) for b, n, j in c.partitions],
            queue_by_class=[pb.ClassCount(job_class=PB_OF_LETTER[k], jobs=v[0], nodes=v[1])
                            for k, v in sorted(queue.items())],
            running_by_class=[pb.ClassCount(job_class=PB_OF_LETTER[k], jobs=v[0], nodes=v[1])
                              for k, v in sorted(running.items())],
            clock=self._clock_pb(), policy=host.policy.name,
            policy_options=self.policy_options, seed=self.seed, pending=pending,
            finished=finished, counters=counters, max_job_nodes=self.max_job_nodes,
            engine_options=self.engine_options, cluster=self.engine.cluster.name,
            policy_spec=self.policy_spec, next_job_id=self._next_free_id())

    def _next_free_id(self) -> int:
        """One more than the largest id the daemon ever held, finished jobs included (they
        keep their ids; counting only live ones gave 1 once every job had finished, and a
        replay collided with job 1), and above the assigned-id cursor: a client that
        numbers its jobs from here (schedd-replay) collides with no job. Not the id a
        `job_id = 0` submission gets: those come from the cursor (_new_spec)."""
        return max(self.known_ids.highest(), self.next_id - 1) + 1

    def engine_stats(self) -> dict[str, float]:
        return dict(self.engine.stats)  # plain ints, written by the engine thread only

    async def GetResults(self, request: pb.GetResultsRequest,
                         context: grpc.aio.ServicerContext) -> AsyncIterator[pb.ResultChunk]:
        table = request.table or "jobs"
        if table != "jobs":  # the run record behind segments.csv / timeseries.csv
            if table not in RECORD_TABLES:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                    f"table must be one of jobs, {', '.join(RECORD_TABLES)}; "
                                    f"got {table[:40]!r}")
            key = "job" if table != "levels" else "time"
            sent_first = False
            async for arrays in self.host.run_record(table):  # the store's, then memory's
                for chunk in _chunks(arrays, key, not sent_first):
                    yield chunk
                    sent_first = True
            return
        sent = 0
        async for arrays in self.host.results():  # the results store's, then the engine's
            for chunk in _chunks(arrays, "id", sent == 0):
                yield chunk
                sent += 1

    # ------------------------------------------------------------------ clock
    def _clock_pb(self) -> pb.Clock:
        clock, host = self.host.clock, self.host
        now = host.published_now()  # never a reading a restart could take back
        return pb.Clock(now=now, mode=clock.mode, speedup=clock.speedup, paused=clock.paused,
                        engine_time=host.engine_time, lag=max(0.0, now - host.engine_time),
                        idle=host.idle and not host.has_pending())

    async def GetClock(self, request: pb.GetClockRequest,
                       context: grpc.aio.ServicerContext) -> pb.Clock:
        return self._clock_pb()

    async def AdvanceClock(self, request: pb.AdvanceClockRequest,
                           context: grpc.aio.ServicerContext) -> pb.Clock:
        async def run() -> pb.Clock:
            which = request.WhichOneof("target")
            clock = self.host.clock
            if which is None:
                _invalid("give one of to, by or until_idle")
            if which == "until_idle":
                if not request.until_idle:
                    _invalid("until_idle must be true when given")
                if not clock.lockstep:
                    raise Refused(grpc.StatusCode.FAILED_PRECONDITION,
                                  "until_idle needs the lockstep clock (--clock lockstep)")
                await self.host.advance(None, until_idle=True)
                return self._clock_pb()
            by: float | None = None
            if which == "by":
                # Moved from the clock's reading when the jump is made, not from this
                # one: a running clock has moved on meanwhile (by=1e-6 was refused as
                # "cannot move back").
                by = _limit("by", request.by)
                target = clock.now() + by
            else:
                target = _limit("to", request.to)
            _limit("to", target, "the clock's target time")
            try:
                await self.host.advance(None if by is not None else target, by=by)
            except ClockError as err:
                _invalid(str(err))
            return self._clock_pb()

        return await self._guard(context, run())

    async def Pause(self, request: pb.PauseRequest,
                    context: grpc.aio.ServicerContext) -> pb.Clock:
        async def run() -> pb.Clock:
            try:
                self.host.clock.pause()
            except ClockError as err:
                raise Refused(grpc.StatusCode.FAILED_PRECONDITION, str(err)) from None
            self.host.wake()
            return self._clock_pb()

        return await self._guard(context, run())

    async def Resume(self, request: pb.ResumeRequest,
                     context: grpc.aio.ServicerContext) -> pb.Clock:
        async def run() -> pb.Clock:
            try:
                self.host.clock.resume()
            except ClockError as err:
                raise Refused(grpc.StatusCode.FAILED_PRECONDITION, str(err)) from None
            self.host.wake()
            return self._clock_pb()

        return await self._guard(context, run())

    # ------------------------------------------------------------------ conversion
    def _job_pb(self, rec: JobRecord) -> pb.Job:
        job = pb.Job(
            job_id=rec.job_id, state=PB_OF_STATE[rec.state],
            job_class=PB_OF_LETTER[rec.job_class], nodes=rec.nodes,
            alloc_nodes=rec.alloc_nodes, walltime=rec.walltime, submit_time=rec.submit,
            preemptions=rec.preemptions, user=rec.user, project=rec.project, queue=rec.queue,
            owner=rec.owner, block=rec.block,
            wait=rec.wait(self.host.engine_time), executed=rec.executed,
            checkpoints=rec.checkpoints)
        # Optional fields stay absent (not -1) when the record has no value yet.
        if rec.min_nodes > 0:
            job.min_nodes = rec.min_nodes
        for name, value in (("first_start", rec.first_start), ("last_start", rec.last_start),
                            ("predicted_end", rec.predicted_end), ("end_time", rec.end_time),
                            ("requested_start", rec.requested_start)):
            if value >= 0:
                setattr(job, name, value)
        return job


def request_key(request_id: str) -> str:
    """The journal key of a client request id: scoped to the calling user ("" for none)."""
    return f"{current_principal().user}/{request_id}" if request_id else ""


def fingerprint(request: Any) -> str:
    """What a request asked for, to tell a retry from a reuse of its request id."""
    data = type(request).__name__.encode() + request.SerializeToString(deterministic=True)
    return hashlib.sha256(data).hexdigest()[:32]


ENCODED_EVENTS = 16384  # recent events kept encoded for the streams (about 1.5 MB)
WRITE_CHECK = 0.25  # seconds between backlog checks while a stream's write waits

_MORE_TAG = b"\x4a"  # Event.more: field 9, length-delimited


class EncodedEvents:
    """Events as WatchEvents sends them, encoded once for every stream that reads them:
    the last ENCODED_EVENTS by sequence number, and the last whole batch (streams woken
    by the same events read the same span). A batch is the first event's bytes followed
    by each next event as an `Event.more` entry (a repeated message field on the wire is
    its entries one after another)."""

    def __init__(self, events: EventLog, size: int = ENCODED_EVENTS):
        self.events = events
        self.size = size
        self._at = [0] * size  # the sequence number whose bytes are in each slot
        self._bytes = [b""] * size
        self._entry = [b""] * size  # the same event as an `Event.more` entry
        self._span: tuple[int, int] = (0, 0)
        self._span_bytes = b""

    def one(self, row: Row) -> bytes:
        seq = row[0]
        i = seq % self.size
        if self._at[i] == seq and seq:
            return self._bytes[i]
        data = _row_pb(row, self.events.epoch).SerializeToString()
        self._at[i], self._bytes[i] = seq, data
        self._entry[i] = _MORE_TAG + _varint(len(data)) + data
        return data

    def batch(self, rows: list[Row]) -> bytes:
        one, entry, size = self.one, self._entry, self.size
        parts = [one(rows[0])]
        for row in rows[1:]:
            one(row)
            parts.append(entry[row[0] % size])
        return b"".join(parts)

    def span(self, first: int, last: int) -> bytes:
        """Every event first..last (at most `size`) as one batch: the cached entries
        joined, rows built only for events not encoded yet (streams at different
        cursors miss the one-span cache; this was half of WatchEvents' time)."""
        if (first, last) == self._span:
            return self._span_bytes
        at, size = self._at, self.size
        slots = [seq % size for seq in range(first, last + 1)]
        for seq, i in zip(range(first, last + 1), slots, strict=True):
            if at[i] != seq:  # the first not encoded yet: encode from there on
                for row in self.events.rows(seq, last):
                    self.one(row)
                break
        entry = self._entry
        data = self._bytes[slots[0]] + b"".join([entry[i] for i in slots[1:]])
        self._span, self._span_bytes = (first, last), data
        return data


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def event_bytes_or_message(message: Any) -> bytes:
    """WatchEvents' response serializer: events come encoded already (EncodedEvents)."""
    return message if type(message) is bytes else message.SerializeToString()


def _row_pb(row: Row, epoch: str) -> pb.Event:
    seq, time, kind, job_id, state, cause, nodes, _ = row
    return pb.Event(seq=seq, time=time, kind=kind, job_id=job_id,
                    state=PB_OF_STATE.get(state, pb.JOB_STATE_UNSPECIFIED),
                    cause=cause, nodes=nodes, epoch=epoch)


def _bisect_after(ids: list[int], after: int) -> int:
    return bisect.bisect_right(ids, after)


def _chunks(arrays: dict[str, np.ndarray], key: str, first: bool) -> Iterator[pb.ResultChunk]:
    """Columns in chunks of RESULT_CHUNK rows; an empty first table still sends one chunk
    (so a client learns the column names)."""
    n = len(arrays[key])
    for lo in range(0, n if n or not first else 1, RESULT_CHUNK):
        yield pb.ResultChunk(columns=[
            pb.ResultColumn(name=name, values=col[lo:lo + RESULT_CHUNK].tolist())
            for name, col in arrays.items()])
