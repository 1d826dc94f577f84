"""The scheduling engine: a pure, synchronous, deterministic state machine.

Stimuli (submissions, elastic control commands, notices, checkpoint-done, cancellations)
enter as events; virtual time moves only from event to event. After all events of one
instant are handled, the policy runs once on a read-only view and returns decisions, which
the engine validates and applies. Drivers: `schedd.sim` (as fast as possible) and the daemon.

This module is the event loop and the decisions; the engine's state and execution model,
the job lifecycle, preemption and checkpoints, and elastic commands, resizing and failures
are the links of its class chain (engine_state.py, engine_jobs.py, engine_preempt.py,
engine_elastic.py; docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .cluster import ClusterError
from .decisions import (
    DecisionError,
    Preempt,
    PreemptMode,
    Release,
    Reserve,
    Resize,
    Start,
    WakeAt,
)
from .engine_elastic import ECC_KINDS, _Elastic
from .engine_state import (
    CHECKPOINTING,
    EV_CANCEL,
    EV_CKPT_DONE,
    EV_ECC,
    EV_FAILURE,
    EV_FINISH,
    EV_NOTICE,
    EV_REPAIR,
    EV_SUBMIT,
    EV_WAKE,
    PREEMPTED,
    QUEUED,
    RUNNING,
)
from .exec_state import EXEC_FIELDS, Command, Ecc, EngineOptions, Reservation, _Exec
from .job import JobClass, JobSpec, Notice
from .recorder import RESERVED

__all__ = ["ECC_KINDS", "EXEC_FIELDS", "Command", "Ecc", "Engine", "EngineOptions",
           "Reservation"]


class Engine(_Elastic):
    def feed(self, specs: Iterable[JobSpec]) -> None:
        """Submit jobs lazily from an iterator sorted by submit time (a trace)."""
        self._source = iter(specs)
        self._pull_source()

    def feed_eccs(self, eccs: Iterable[Ecc]) -> None:
        self._ecc_source = iter(eccs)
        self._pull_ecc()

    def submit(self, spec: JobSpec) -> None:
        """Submit one job at max(spec.submit, now)."""
        self._check_spec(spec)
        self.events.push(max(spec.submit, self.now), EV_SUBMIT, spec)

    def notice(self, job_id: int, notice: Notice) -> None:
        self.events.push(max(notice.time, self.now), EV_NOTICE, (job_id, notice))

    def elastic(self, ecc: Ecc) -> None:
        self.events.push(max(ecc.time, self.now), EV_ECC, ecc)

    def cancel(self, job_id: int, at: float | None = None) -> None:
        """Cancel a job now, or at time `at` (a trace's recorded cancellation): queued,
        running or not yet submitted, it ends CANCELLED then; a job already done stays."""
        self.events.push(self.now if at is None else max(at, self.now), EV_CANCEL, job_id)

    def checkpoint_done(self, job_id: int) -> None:
        """A job agent reports its preemption checkpoint finished (daemon path)."""
        job = self.jobs.get(job_id)
        if job is None or job.state is not CHECKPOINTING:
            raise DecisionError(f"job {job_id} was not asked to checkpoint")
        self.events.push(self.now, EV_CKPT_DONE, (job_id, self._x[job_id].seg, True))

    def wake_at(self, time: float) -> None:
        self.events.push(max(time, self.now), EV_WAKE, None)

    def adopt_clock(self, now: float, busy_integral: float) -> None:
        """Take the instant and busy-node integral a fast path reached while appending to
        this engine's results and recorder (schedd/policies/easy_plain.py), so that the
        engine reads as if it had stepped there itself."""
        self.now = self._last_t = now
        self._busy_integral = busy_integral

    def next_time(self) -> float | None:
        return self.events.peek_time()

    def step(self) -> bool:
        """Handle every event of the next instant, then one scheduling pass."""
        t = self.events.peek_time()
        if t is None:
            return False
        self._advance_to(t)
        heap = self.events._heap
        pop = self.events.pop
        handle = self._handle
        for _ in range(10_000):
            while heap and heap[0][0] == t:
                _, kind, _, payload = pop()
                handle(kind, payload)
            self._pass()
            if not heap or heap[0][0] != t:
                return True
        raise RuntimeError(f"more than 10,000 scheduling rounds at t={t:g}: a policy loops")

    def run_pass(self) -> None:
        """One scheduling pass now, then the rest of the instant as `step` would finish it
        (events pushed for now, and their passes). For a driver whose policy stopped a
        pass by raising before it returned any decision (schedd.gym's agent policy does,
        to hand the choice to a learner): the state is then as the events left it, and
        running the pass again continues the instant exactly."""
        self._pass()
        heap = self.events._heap
        if heap and heap[0][0] == self.now:
            self.step()

    def run(self, until: float | None = None) -> None:
        while True:
            t = self.events.peek_time()
            if t is None or (until is not None and t > until):
                break
            self.step()
        if until is not None and until > self.now:
            self._advance_to(until)

    def _handle(self, kind: int, payload: Any) -> None:
        if kind == EV_FINISH:
            job_id, seg = payload
            x = self._x.get(job_id)
            if x is not None and x.seg == seg and x.job.state is RUNNING:
                self._finish(x)
        elif kind == EV_SUBMIT:
            self._arrive(payload)
            if self._source is not None and payload is self._pending_source:
                self._pull_source()
        elif kind == EV_CKPT_DONE:
            job_id, seg, written = payload
            x = self._x.get(job_id)
            if x is not None and x.seg == seg and x.job.state is CHECKPOINTING:
                if written:
                    self._checkpoint_done(x)
                else:
                    self._checkpoint_timeout(x)
        elif kind == EV_ECC:
            self._apply_ecc(payload)
            if self._ecc_source is not None and payload is self._pending_ecc:
                self._pull_ecc()
        elif kind == EV_NOTICE:
            job_id, notice = payload
            self.notices[job_id] = notice
        elif kind == EV_CANCEL:
            self._cancel(payload)
        elif kind == EV_FAILURE:
            self._failure()
        elif kind == EV_REPAIR:
            self._repair(payload)

    def _pull_source(self) -> None:
        assert self._source is not None
        spec = next(self._source, None)
        self._pending_source = spec
        if spec is not None:
            self._check_spec(spec)
            self.events.push(spec.submit, EV_SUBMIT, spec)

    def _pull_ecc(self) -> None:
        assert self._ecc_source is not None
        ecc = next(self._ecc_source, None)
        self._pending_ecc = ecc
        if ecc is not None:
            self.events.push(max(ecc.time, self.now), EV_ECC, ecc)

    def _check_spec(self, spec: JobSpec) -> None:
        if self.cluster.alloc_size(spec.nodes) is None:
            raise DecisionError(
                f"job {spec.id} asks for {spec.nodes} nodes; {self.cluster.name} "
                f"has {self.cluster.total_nodes}"
            )
        if spec.runtime <= 0 or spec.walltime <= 0:
            raise DecisionError(f"job {spec.id} needs a positive runtime and walltime")
        if spec.malleable and not 1 <= spec.min_nodes <= spec.nodes:
            raise DecisionError(f"job {spec.id}: malleable min {spec.min_nodes} > max")

    def _pass(self) -> None:
        if self.policy is None:
            return
        self.stats["passes"] += 1
        # Typed `object`, not `Decision`: a policy is the user's code, and compiled code
        # would check each element against the union with a TypeError, not refuse it.
        decisions: Iterable[object] = self.policy.schedule(self._view)
        for decision in decisions:
            self.apply(decision)

    def apply(self, d: object) -> None:
        """Validate and apply one decision; refuse an invalid one, or anything that is not a
        decision, without changing state (DecisionError)."""
        self.stats["decisions"] += 1
        if isinstance(d, Start):
            self._apply_start(d)
        elif isinstance(d, Preempt):
            self._apply_preempt(d)
        elif isinstance(d, Resize):
            self._apply_resize(d)
        elif isinstance(d, Reserve):
            self._apply_reserve(d)
        elif isinstance(d, Release):
            self._apply_release(d)
        elif isinstance(d, WakeAt):
            if d.time < self.now:
                raise DecisionError(f"cannot wake at {d.time:g}, before now ({self.now:g})")
            self.events.push(d.time, EV_WAKE, None)
        else:
            raise DecisionError(f"unknown decision {d!r}")

    def _live(self, job_id: int) -> _Exec:
        x = self._x.get(job_id)
        if x is None:
            raise DecisionError(f"job {job_id} is not a live job")
        return x

    def _apply_start(self, d: Start) -> None:
        x = self._live(d.job_id)
        job = x.job
        state = job.state
        if state is not QUEUED and state is not PREEMPTED:
            raise DecisionError(f"job {job.id} cannot start: it is {state.value}")
        if 0 <= self.now < job.requested_start and job.job_class is JobClass.DEDICATED:
            raise DecisionError(
                f"dedicated job {job.id} may not start before {job.requested_start:g}"
            )
        nodes = job.nodes if d.nodes is None else d.nodes
        if nodes != job.nodes and not (job.malleable and job.min_nodes <= nodes <= job.nodes):
            raise DecisionError(
                f"job {job.id} must start on {job.nodes} nodes"
                + (f" (or {job.min_nodes}..{job.nodes}: malleable)" if job.malleable else "")
                + f", not {nodes}"
            )
        pool = self.state
        if d.reservation is not None:
            res = self.reservations.get(d.reservation)
            if res is None:
                raise DecisionError(f"no reservation named {d.reservation!r}")
            pool = res.sub
        try:
            if d.place is not None:
                alloc = self._allocate_place(pool, d.place, nodes, job.id)
            elif d.block is not None:
                alloc = pool.allocate_block(d.block)
            else:
                alloc = pool.allocate(nodes)
        except ClusterError as err:
            raise DecisionError(f"job {job.id} cannot start: {err}") from None
        if alloc is None:
            where = f"reservation {d.reservation!r}" if d.reservation else "the machine"
            what = (f"block {d.block}" if d.block is not None else
                    f"placement {d.place!r}" if d.place is not None else f"{nodes} nodes")
            raise DecisionError(
                f"job {job.id} cannot start: {what} not available in {where} "
                f"({pool.free_nodes} nodes free)"
            )
        if alloc.nodes < nodes:
            pool.release(alloc)
            raise DecisionError(f"block {d.block} has {alloc.nodes} nodes; job {job.id} "
                                f"needs {nodes}")
        self._start(x, alloc, nodes, d.reservation, "decision:start")

    def _allocate_place(self, pool: Any, place: tuple[tuple[int, int], ...], nodes: int,
                        job_id: int) -> Any:
        """A placement on a CPU-node machine: it must hold at least the job's size."""
        allocate_place = getattr(pool, "allocate_place", None)
        if allocate_place is None:
            raise ClusterError(f"{self.cluster.name} takes no placements")
        if sum(cpus for _, cpus in place) < nodes:
            raise ClusterError(f"placement {place!r} holds fewer than the {nodes} CPUs "
                               f"job {job_id} needs")
        return allocate_place(place)

    def _apply_preempt(self, d: Preempt) -> None:
        x = self._live(d.job_id)
        job = x.job
        if job.state is not RUNNING:
            raise DecisionError(f"job {job.id} cannot be preempted: it is {job.state.value}")
        mode = d.mode
        if mode is PreemptMode.JIT and not job.checkpointable:
            raise DecisionError(f"job {job.id} cannot checkpoint (not checkpointable)")
        if mode in (PreemptMode.JIT, PreemptMode.WARNING):
            self._begin_checkpoint(x, mode)
        else:
            self._interrupt(x, mode, "preempt")

    def _apply_resize(self, d: Resize) -> None:
        x = self._live(d.job_id)
        job = x.job
        if not job.malleable:
            raise DecisionError(f"job {job.id} is not malleable")
        if not job.min_nodes <= d.nodes <= job.nodes:
            raise DecisionError(
                f"job {job.id} can run on {job.min_nodes}..{job.nodes} nodes, not {d.nodes}"
            )
        if job.state is not RUNNING:
            raise DecisionError(f"job {job.id} is {job.state.value}; start it with Start(nodes=)")
        self._resize_running(x, d.nodes)

    def _apply_reserve(self, d: Reserve) -> None:
        if d.key in self.reservations:
            raise DecisionError(f"reservation {d.key!r} already exists")
        if d.block is not None:
            try:
                alloc = self.state.allocate_block(d.block)
            except ClusterError as err:
                raise DecisionError(f"cannot reserve: {err}") from None
        elif d.nodes is not None and d.nodes >= 1:
            alloc = self.state.allocate(d.nodes)
        else:
            raise DecisionError("a reservation needs nodes >= 1 or a block")
        if alloc is None:
            raise DecisionError(
                f"cannot reserve {d.nodes if d.block is None else f'block {d.block}'}: "
                f"{self.state.free_nodes} nodes free"
            )
        self.reservations[d.key] = Reservation(d.key, alloc, self.state.carve(alloc), self.now)
        if self.recorder is not None:
            self.recorder.level(self.now, RESERVED, alloc.nodes)

    def _apply_release(self, d: Release) -> None:
        res = self.reservations.pop(d.key, None)
        if res is None:
            raise DecisionError(f"no reservation named {d.key!r}")
        self.state.merge_back(res.sub, res.alloc)
        if self.recorder is not None:
            self.recorder.level(self.now, RESERVED, -res.alloc.nodes)
        for job in self.running.values():  # jobs inside now release to the machine
            x = self._x[job.id]
            if x.res_key == d.key:
                x.res_key = None
