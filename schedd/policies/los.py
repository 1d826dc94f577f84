"""The twelve schedulers of Table III of Kumar, Shae & Jamjoom ("Scheduling batch and
heterogeneous jobs with runtime elasticity"): EASY, LOS, Delayed-LOS (Algorithm 1) and
Hybrid-LOS (Algorithms 2-3), each for batch workloads, with a dedicated-job queue (-d) and
with the ECC processor (-e). Choices where the paper is silent: docs/los.md.

* Batch variants hold a dedicated job until its requested start and then treat it as an
  ordinary job (as `easy` does). Dedicated variants keep future dedicated jobs in their own
  queue, move a due one to the head of the batch queue with `scount = C_s` (Algorithm 3),
  and never start a batch job that would take nodes a future dedicated job needs
  (`DedicatedGuard`); a dedicated job is late only when running jobs hold its nodes.
* The ECC processor is the engine's (FCFS, `--ecc-max` per job): a policy without it
  (`processes_eccs = False`) has every command refused and logged.
* DPs run in allocation units (los_dp): sizes round up, capacities down, so every
  selection fits in nodes.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from typing import ClassVar, Literal

from ..core.cluster import Cluster, NodePool
from ..core.decisions import Decision, Start, WakeAt
from ..core.job import Job
from ..core.view import View
from .backfill import EasyE, eligible_queue, releases
from .base import NoOptions, Policy, PolicyError
from .los_dp import choose_unit, job_units, select

INF = float("inf")


def _field(default, text: str):
    return dataclasses.field(default=default, metadata={"help": text})


@dataclasses.dataclass(frozen=True)
class LosOptions:
    lookahead: int = _field(50, "jobs from the queue head the dynamic program considers")
    unit: int = _field(0, "allocation unit in nodes (the paper's Blue Gene/P: 32); 0 = the "
                          "smallest power of two that keeps the machine within 600 units")
    after_head: Literal["continue", "wait"] = _field(
        "continue", "after the head starts right away (LOS; Delayed-LOS once scount >= C_s): "
        "continue the pass with the next head, or wait for the next event (Algorithm 1 "
        "lines 3-5 read literally: the rest of the machine idles until then)")


@dataclasses.dataclass(frozen=True)
class DelayedLosOptions(LosOptions):
    cs: int = _field(7, "maximum skip count C_s: after this many passes in which it fitted "
                        "but was not chosen, the head job starts as soon as it fits")


def is_dedicated(job: Job) -> bool:
    return job.requested_start >= 0


class PassState:
    """The machine as one pass sees it: free nodes now and the predicted releases (end,
    nodes), ascending, including the jobs this pass has started."""

    def __init__(self, view: View, unit: int):
        self.now = view.now
        self.unit = unit
        self.free = view.free_nodes
        # by (end, nodes): `start` inserts into it
        self.ends = sorted((end, alloc.nodes) for end, _, alloc in releases(view, []))
        self.decisions: list[Decision] = []

    def start(self, job: Job) -> None:
        self.decisions.append(Start(job.id))
        self.free -= job.nodes
        bisect.insort(self.ends, (self.now + job.walltime, job.nodes))

    @property
    def free_units(self) -> int:
        return self.free // self.unit

    def units(self, nodes: int) -> int:
        """A job size in units, rounded up (as `job_units`)."""
        return -(-nodes // self.unit)

    def capacity_before(self, t: float) -> int:
        """Nodes free at `t`: free now plus every release strictly before `t` (a job ending
        exactly at `t` still counts as running, as Algorithm 2 line 11 has it)."""
        cap = self.free
        for end, nodes in self.ends:
            if end >= t:
                break
            cap += nodes
        return cap

    def fit_time(self, need: int, t: float) -> tuple[float, int]:
        """The earliest time from `t` on at which `need` nodes are free, and the nodes free
        then: `t` if they are, else the first release after `t` that frees enough (every
        release at one instant counts together: the engine schedules after all of them).
        If they never are (nodes down): `t` and the capacity then."""
        cap = self.capacity_before(t)
        if cap >= need:
            return t, cap
        ends = self.ends
        i = bisect.bisect_left(ends, (t, -1))
        more = cap
        while i < len(ends):
            end = ends[i][0]
            while i < len(ends) and ends[i][0] == end:
                more += ends[i][1]
                i += 1
            if more >= need:
                return end, more
        return t, cap

    def freeze_for(self, need: int) -> tuple[float, int] | None:
        """Algorithm 1 lines 13-15: the release `a_s` after which `need` nodes are free
        (the freeze time) and the nodes spare then; None if never (nodes down)."""
        fret, cap = self.fit_time(need, self.now)
        return (fret, cap - need) if cap >= need else None


class DedicatedGuard:
    """Every future dedicated start gets the nodes it needs. The jobs due at one requested
    start T form a group; the group starts at T, or, if jobs running now hold its nodes
    then, at the first release after which it fits (Algorithm 2 lines 24-26). A batch job
    started now that would still run at a group's start (`now + walltime >= start`) may
    only use what is spare then. Built once per pass; batch jobs started during the pass
    are charged with `take`."""

    def __init__(self, state: PassState, dedicated: Sequence[Job]):
        now = state.now
        self.starts: list[float] = []
        self.spare: list[int] = []
        for t in sorted({j.requested_start for j in dedicated if j.requested_start > now}):
            demand = sum(j.nodes for j in dedicated
                         if max(j.requested_start, now) <= t < max(j.requested_start, now)
                         + j.walltime)
            start, cap = state.fit_time(demand, t)
            self.starts.append(start)
            self.spare.append(cap - demand)
        self.refusals = 0

    def _crossed(self, now: float, job: Job) -> list[int]:
        end = now + job.walltime
        return [g for g, start in enumerate(self.starts) if start <= end]

    def admits(self, now: float, job: Job) -> bool:
        if is_dedicated(job):
            return True  # its own demand is already subtracted
        ok = all(self.spare[g] >= job.nodes for g in self._crossed(now, job))
        self.refusals += not ok
        return ok

    def take(self, now: float, job: Job) -> None:
        if not is_dedicated(job):
            for g in self._crossed(now, job):
                self.spare[g] -= job.nodes


class LosFamily(Policy):
    """Shared machinery: queues, units, skip counts; subclasses pick the batch algorithm."""

    dedicated: ClassVar[bool] = False
    Options: ClassVar[type] = LosOptions

    def __init__(self, options: LosOptions | NoOptions, cluster: Cluster):
        super().__init__(options, cluster)
        if not isinstance(cluster, NodePool):
            raise PolicyError(f"{self.name} packs node counts (the paper's processors): use a "
                              "node pool (nodes:N)")
        self.lookahead = getattr(options, "lookahead", 50)
        if self.lookahead < 1:
            raise PolicyError(f"{self.name}: lookahead must be at least 1 job")
        unit = getattr(options, "unit", 0)
        if unit < 0:
            raise PolicyError(f"{self.name}: unit must be 0 (automatic) or a node count")
        if unit > cluster.total_nodes:
            raise PolicyError(f"{self.name}: unit {unit} is larger than the machine "
                              f"({cluster.total_nodes} nodes)")
        self.unit = unit or choose_unit(cluster.total_nodes)
        self.wait_after_head = getattr(options, "after_head", "continue") == "wait"
        self.cs = getattr(options, "cs", 0)
        if self.cs < 0:
            raise PolicyError(f"{self.name}: cs must not be negative")
        self.scount: dict[int, int] = {}
        self.moved: list[int] = []  # dedicated jobs moved to the batch head, in order
        self.counters = {"basic_dp": 0, "reservation_dp": 0, "dedicated_dp": 0,
                         "head_skips": 0, "cs_starts": 0, "dedicated_moved": 0,
                         "guard_refusals": 0, "unit_starts": 0}

    def stats(self) -> dict[str, int]:
        return dict(self.counters)

    # ------------------------------------------------------------------ queues
    def _queues(self, view: View, decisions: list[Decision]
                ) -> tuple[Sequence[Job], list[Job]]:
        """(batch queue W^b, queued dedicated jobs, or none if no requested start is still
        ahead: then there is nothing to guard); asks to be woken at the next dedicated
        start."""
        if not self.dedicated:
            return eligible_queue(view, decisions), []  # no copy: _run does not change it
        now = view.now
        queue = view.queue
        dedicated = [j for j in queue if is_dedicated(j)] if view.has_requested_starts else []
        if not dedicated:
            self.moved.clear()
            return queue, []
        waiting = {j.id: j for j in dedicated}
        self.moved = [jid for jid in self.moved if jid in waiting]
        due = sorted((j for j in dedicated if j.requested_start <= now and j.id not in
                      self.moved), key=lambda j: (j.requested_start, j.submit, j.id))
        for job in due:  # Algorithm 3, once per due job
            self.moved.append(job.id)
            self.scount[job.id] = self.cs
            self.counters["dedicated_moved"] += 1
        future = [j.requested_start for j in dedicated if j.requested_start > now]
        if future:
            decisions.append(WakeAt(min(future)))
        batch = [waiting[jid] for jid in self.moved]
        batch += [j for j in queue if not is_dedicated(j)]
        return batch, (dedicated if future else [])

    def schedule(self, view: View) -> list[Decision]:
        decisions: list[Decision] = []
        batch, dedicated = self._queues(view, decisions)
        if len(self.scount) > 2 * len(view.queue) + 64:
            live = {j.id for j in view.queue}
            self.scount = {k: v for k, v in self.scount.items() if k in live}
        if not batch or view.free_nodes == 0:
            return decisions
        state = PassState(view, self.unit)
        guard = DedicatedGuard(state, dedicated) if dedicated else None
        self._run(state, batch, guard, dedicated)
        if guard is not None:
            self.counters["guard_refusals"] += guard.refusals
        return decisions + state.decisions

    def _run(self, state: PassState, batch: Sequence[Job], guard: DedicatedGuard | None,
             dedicated: list[Job]) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ building blocks
    def _may_start(self, state: PassState, job: Job, guard: DedicatedGuard | None) -> bool:
        if job.nodes > state.free:
            return False
        return guard is None or guard.admits(state.now, job)

    def _start(self, state: PassState, job: Job, guard: DedicatedGuard | None) -> None:
        state.start(job)
        if guard is not None:
            guard.take(state.now, job)

    def _start_selection(self, state: PassState, window: Sequence[Job], chosen: list[int],
                         guard: DedicatedGuard | None) -> set[int]:
        """Start the DP's choice in queue order; the guard may still refuse a job that
        would take a later dedicated job's nodes."""
        started = set()
        for i in chosen:
            job = window[i]
            if self._may_start(state, job, guard):
                self._start(state, job, guard)
                started.add(job.id)
        return started

    def _reservation_fill(self, state: PassState, window: Sequence[Job], fret: float,
                          spare_units: int, guard: DedicatedGuard | None) -> set[int]:
        """Reservation_DP over `window` with the freeze at `fret` and `spare_units` free
        then, and start the choice."""
        self.counters["reservation_dp"] += 1
        # Reservation_DP on lists (los_dp.reservation_dp's arithmetic: sizes rounded up to
        # units, a job still running at the freeze unless now + walltime < fret in floats)
        unit, now, freeze = self.unit, float(state.now), float(fret)
        sizes = [-(-j.nodes // unit) for j in window]
        frozen = [size if now + float(j.walltime) >= freeze else 0
                  for size, j in zip(sizes, window, strict=True)]
        chosen = select(sizes, frozen, state.free_units, max(spare_units, 0))
        return self._start_selection(state, window, chosen, guard)

    def _basic_fill(self, state: PassState, window: Sequence[Job],
                    guard: DedicatedGuard | None) -> set[int]:
        """Basic_DP over `window` with the free units now, and start the choice."""
        self.counters["basic_dp"] += 1
        unit = self.unit
        sizes = [-(-j.nodes // unit) for j in window]
        chosen = select(sizes, [0] * len(sizes), state.free_units, 0)
        return self._start_selection(state, window, chosen, guard)

    def _head_reservation(self, state: PassState, head: Job, window: Sequence[Job],
                          guard: DedicatedGuard | None) -> None:
        """The blocked head gets a reservation at its freeze time; the window fills around
        it (Algorithm 1 lines 12-20). A head that can never fit (nodes down): no freeze."""
        freeze = state.freeze_for(head.nodes)
        if freeze is None:
            self._basic_fill(state, window, guard)
            return
        fret, spare_nodes = freeze
        spare_units = (spare_nodes + head.nodes) // self.unit - state.units(head.nodes)
        self._reservation_fill(state, window, fret, spare_units, guard)

    def _dedicated_freeze(self, state: PassState, dedicated: list[Job]
                          ) -> tuple[float, int] | None:
        """Algorithm 2 lines 9-30: the freeze at the first dedicated start (or, when its
        jobs do not all fit then, at the release after which they do) and the units
        spare then; None without a future dedicated job."""
        now = state.now
        future = [j for j in dedicated if j.requested_start > now]
        if not future:
            return None
        first = min(j.requested_start for j in future)
        group = [j for j in future if j.requested_start == first]
        need_units = int(job_units([j.nodes for j in group], self.unit).sum())
        need_nodes = sum(j.nodes for j in group)
        fret, cap = state.fit_time(need_nodes, first)  # lines 10-18, else lines 24-26
        return fret, cap // self.unit - need_units


class EasyD(LosFamily):
    """EASY around dedicated jobs (the paper's EASY-D): due dedicated jobs lead the queue,
    and neither the head nor a backfilled job may take a future dedicated job's nodes."""

    name = "easy-d"
    summary = "EASY backfilling with a dedicated-job queue; no ECC processor (Table III)"
    dedicated = True
    processes_eccs = False
    Options = NoOptions

    def _run(self, state: PassState, batch: Sequence[Job], guard: DedicatedGuard | None,
             dedicated: list[Job]) -> None:
        now = state.now
        i = 0
        while i < len(batch) and self._may_start(state, batch[i], guard):
            self._start(state, batch[i], guard)
            i += 1
        if i == len(batch) or state.free == 0:
            return
        head = batch[i]
        shadow, extra = _easy_shadow(head.nodes, state.free, state.ends)
        for job in batch[i + 1:]:
            if state.free == 0:
                return
            if job.nodes > state.free:
                continue
            ends_before = now + job.walltime <= shadow
            if not ends_before and job.nodes > extra:
                continue
            if guard is not None and not guard.admits(now, job):
                continue
            if not ends_before:
                extra -= job.nodes
            self._start(state, job, guard)


def _easy_shadow(need: int, free: int, ends: Sequence[tuple[float, int]]) -> tuple[float, int]:
    """EASY's shadow time and extra nodes (every release at the shadow time counts, the
    convention of ../shared/traces/README.md)."""
    shadow = INF
    for end, nodes in ends:
        if end > shadow:
            break
        free += nodes
        if shadow == INF and free >= need:
            shadow = end
    return shadow, (free - need if shadow < INF else 0)


class Los(LosFamily):
    """LOS (Shmueli & Feitelson) as Kumar et al. describe it: the head starts right away
    whenever it fits; a blocked head gets a reservation and Reservation_DP fills the holes
    before it from the lookahead window."""

    name = "los"
    summary = "Lookahead Optimizing Scheduler: head first, Reservation_DP around it (Table III)"
    processes_eccs = False

    def _run(self, state: PassState, batch: Sequence[Job], guard: DedicatedGuard | None,
             dedicated: list[Job]) -> None:
        # batch[k] is the head: each job started from the head moves it on (the queue
        # itself is the engine's, not a copy, and is not changed)
        for k in range(len(batch)):
            if state.free <= 0:
                return
            head = batch[k]
            if self._may_start(state, head, guard):
                self._start(state, head, guard)
                if self.wait_after_head:
                    return
                continue
            self._fill_around(state, batch[k:k + self.lookahead], guard, dedicated)
            return

    def _fill_around(self, state: PassState, window: Sequence[Job],
                     guard: DedicatedGuard | None, dedicated: list[Job]) -> None:
        """The head (window[0]) stays waiting: fill the window behind it up to its
        reservation or, if it fits but the guard holds it back, up to the first dedicated
        freeze."""
        head, window = window[0], window[1:]
        if head.nodes <= state.free:
            self._dedicated_fill(state, window, guard, dedicated)
        else:
            self._head_reservation(state, head, window, guard)

    def _dedicated_fill(self, state: PassState, window: Sequence[Job],
                        guard: DedicatedGuard | None, dedicated: list[Job]) -> None:
        freeze = self._dedicated_freeze(state, dedicated)
        assert freeze is not None  # the guard only refuses before a future dedicated job
        self.counters["dedicated_dp"] += 1
        fret, spare = freeze
        self._reservation_fill(state, window, fret, spare, guard)


class DelayedLos(Los):
    """Algorithm 1, and with a dedicated queue Algorithm 2 (Hybrid-LOS)."""

    name = "delayed-los"
    summary = "Delayed-LOS: Basic_DP may skip the head up to C_s times (Algorithm 1)"
    Options = DelayedLosOptions

    def _run(self, state: PassState, batch: Sequence[Job], guard: DedicatedGuard | None,
             dedicated: list[Job]) -> None:
        lookahead = self.lookahead
        cs = self.cs
        for k in range(len(batch)):  # batch[k] is the head, as in Los._run
            if state.free <= 0:
                return
            head = batch[k]
            if (head.nodes <= state.free and state.units(head.nodes) > state.free_units
                    and self._may_start(state, head, guard)):
                # It fits the free nodes but not the rounded-down units, so no DP can pick
                # it: start it rather than let rounding keep it waiting (maybe for ever).
                self.counters["unit_starts"] += 1
                self._start(state, head, guard)
                continue
            skips = self.scount.get(head.id, 0)
            if guard is not None and skips < cs:  # Algorithm 2 lines 8-33
                self.counters["dedicated_dp"] += 1
                freeze = self._dedicated_freeze(state, dedicated)
                assert freeze is not None  # a guard exists only before a dedicated start
                started = self._reservation_fill(state, batch[k:k + lookahead], *freeze,
                                                 guard)
                self._count_skip(head, started)
                return
            if skips >= cs:  # Algorithm 1 lines 3-5, Algorithm 2 lines 35-37
                if self._may_start(state, head, guard):
                    self.counters["cs_starts"] += 1
                    self._start(state, head, guard)
                    if self.wait_after_head:
                        return
                    continue  # the activation is an event: schedule again
                self._fill_around(state, batch[k:k + lookahead], guard, dedicated)
                return
            if head.nodes <= state.free:  # Algorithm 1 lines 6-11
                started = self._basic_fill(state, batch[k:k + lookahead], guard)
                self._count_skip(head, started)
                return
            self._fill_around(state, batch[k:k + lookahead], guard, dedicated)  # lines 12-20
            return

    def _count_skip(self, head: Job, started: set[int]) -> None:
        if head.id not in started:
            self.scount[head.id] = self.scount.get(head.id, 0) + 1
            self.counters["head_skips"] += 1


def _variant(base: type[LosFamily], name: str, summary: str, **flags: bool
             ) -> type[LosFamily]:
    """A Table III name: `base` with the dedicated queue and/or the ECC processor."""
    return type(name.title().replace("-", ""), (base,),
                {"name": name, "summary": summary, "__module__": __name__, **flags})


EasyDE = _variant(EasyD, "easy-de", "EASY-D with the ECC processor (Table III)",
                  processes_eccs=True)
LosE = _variant(Los, "los-e", "LOS with the ECC processor (Table III)", processes_eccs=True)
LosD = _variant(Los, "los-d", "LOS with a dedicated-job queue; no ECC processor (Table III)",
                dedicated=True)
LosDE = _variant(Los, "los-de", "LOS-D with the ECC processor (Table III)", dedicated=True,
                 processes_eccs=True)
DelayedLosE = _variant(DelayedLos, "delayed-los-e",
                       "Delayed-LOS with the ECC processor (Table III)", processes_eccs=True)
HybridLos = _variant(DelayedLos, "hybrid-los", "Hybrid-LOS: Delayed-LOS around dedicated "
                     "jobs' reservations (Algorithm 2); no ECC processor", dedicated=True)
HybridLosE = _variant(DelayedLos, "hybrid-los-e", "Hybrid-LOS with the ECC processor "
                      "(Table III)", dedicated=True, processes_eccs=True)

TABLE_III = (EasyD, EasyE, EasyDE, Los, LosD, LosE, LosDE, DelayedLos, HybridLos,
             DelayedLosE, HybridLosE)
