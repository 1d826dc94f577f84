"""Backfilling baselines: EASY (first-fit, best-fit, shortest-job-first) and conservative.

EASY follows ../shared/traces/README.md exactly on a node pool: start from the head while it
fits; give the blocked head a reservation at the shadow time; backfill a job if it fits now
and either ends by the shadow time or fits in the nodes the head leaves spare ("extra").
On partition clusters the same test runs on partition states: a job that would still run
at the shadow time must also fit, together with the head's reserved partition, in the
state at the shadow time — on a node pool this is exactly `nodes <= extra`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

from ..core.cluster import Allocation, ClusterState, PoolState
from ..core.decisions import Decision, Start, WakeAt
from ..core.job import Job
from ..core.view import View
from .base import Policy

INF: Final = float("inf")


def _start(job: Job, alloc: Allocation) -> Start:
    return Start(job.id, block=alloc.block if alloc.block >= 0 else None)


def retake(state: ClusterState, alloc: Allocation) -> Allocation | None:
    """Take the same resources `alloc` names in another state (planning copies)."""
    return state.allocate_block(alloc.block) if alloc.block >= 0 else state.allocate(alloc.nodes)


def releases(view: View, started: list[tuple[Job, Allocation]]
             ) -> list[tuple[float, int, Allocation]]:
    """(predicted end, tie, allocation) of everything holding nodes, ascending."""
    now = view.now
    running = view.running
    out = [(end, jid, running[jid].allocation) for end, jid in view.running_by_end()]
    if view.checkpointing_count:
        out += [(end, jid, running[jid].allocation) for end, jid in view.checkpointing_until()]
    out += [(now + job.walltime, job.id, alloc) for job, alloc in started]
    out.sort(key=lambda r: (r[0], r[1]))
    return out  # type: ignore[return-value]


def shadow_of(head: Job, state: ClusterState, ends: list[tuple[float, int, Allocation]]
              ) -> tuple[float, ClusterState]:
    """Earliest predicted end at which the head fits, and the state at that time with every
    job ending by then released and the head's resources taken."""
    shadow_state = state.copy()
    shadow = INF
    for i, (end, _, alloc) in enumerate(ends):
        shadow_state.release(alloc)
        if shadow_state.fits(head.nodes):
            shadow = end
            for end2, _, alloc2 in ends[i + 1:]:
                if end2 > shadow:
                    break
                shadow_state.release(alloc2)
            break
    if shadow < INF:
        shadow_state.allocate(head.nodes)
    return shadow, shadow_state


def start_from_head(queue, state: ClusterState, decisions: list[Decision]
                    ) -> list[tuple[Job, Allocation]]:
    """Start queue-head jobs while they fit in `state` (taking their resources there)."""
    started = []
    for job in queue:
        alloc = state.allocate(job.nodes)
        if alloc is None:
            break
        decisions.append(_start(job, alloc))
        started.append((job, alloc))
    return started


def easy_pass(view: View, order: str = "first", generic: bool = False,
              queue: Sequence[Job] | None = None,
              state: ClusterState | None = None) -> list[Decision]:
    """One EASY pass. `generic` forces the partition-state code path on a node pool (tests
    check both paths agree). A wrapping policy may pass its own `queue` (in its priority
    order) and planning `state` (free resources with what it holds back already taken)."""
    decisions: list[Decision] = []
    now = view.now
    queue = eligible_queue(view, decisions, queue)
    if state is None:
        if view.free_nodes == 0 or not queue:
            return decisions  # nothing can start: skip the shadow computation
        if view.on_node_pool and not generic:
            return _easy_counts(view, queue, order, decisions)
        state = view.free_state()
    elif state.free_nodes == 0 or not queue:
        return decisions
    started = start_from_head(queue, state, decisions)
    if len(started) == len(queue):
        return decisions
    head = queue[len(started)]
    pool = isinstance(state, PoolState) and not generic
    if pool:
        shadow, extra = _shadow_counts(view, head.nodes, state.free_nodes,
                                       [job for job, _ in started])
    else:
        shadow, shadow_state = shadow_of(head, state, releases(view, started))
    candidates = _in_order(queue[len(started) + 1:], order)
    if pool:
        _backfill_counts(now, candidates, state.free_nodes, shadow, extra, decisions)
        return decisions
    # Allocation is a function of the state, and a start only takes resources: a size that
    # did not fit will not fit in this pass, and until a start changes the states, a size
    # whose job, running past the shadow time, would delay the head gets the same partition
    # and the same answer for the next such job. Remembering both spares a long queue an
    # allocate/release per job (issue 21).
    unfit: set[int] = set()
    delaying: set[int] = set()
    free = state.free_nodes
    for job in candidates:
        if free == 0:
            break
        nodes = job.nodes
        late = now + job.walltime > shadow
        if nodes in unfit or (late and nodes in delaying):
            continue
        if not state.fits(nodes):
            unfit.add(nodes)
            continue
        alloc = state.allocate(nodes)
        assert alloc is not None
        if late and retake(shadow_state, alloc) is None:
            state.release(alloc)  # would delay the head's reservation
            delaying.add(nodes)
            continue
        decisions.append(_start(job, alloc))
        delaying.clear()
        free = state.free_nodes
    return decisions


def _in_order(candidates: Sequence[Job], order: str) -> Sequence[Job]:
    """The backfill candidates in the order `order` tries them."""
    if order == "best":
        return sorted(candidates, key=lambda j: -j.nodes)  # stable: queue order ties
    if order == "sjf":
        return sorted(candidates, key=lambda j: j.walltime)
    return candidates


def _easy_counts(view: View, queue: Sequence[Job], order: str, decisions: list[Decision]
                 ) -> list[Decision]:
    """`easy_pass` on the node pool itself, on integers: a pool's allocation of n nodes is
    n nodes, so neither a copy of its state nor an allocation per start is needed (every
    pass of an EASY run on a pool; issue 21). `generic=True` runs the state-based path,
    and the tests check the two agree."""
    free = view.free_nodes
    started: list[Job] = []
    for job in queue:  # start_from_head
        n = job.nodes
        if n > free or n < 1:
            break
        free -= n
        decisions.append(Start(job.id))
        started.append(job)
    if len(started) == len(queue):
        return decisions
    shadow, extra = _shadow_counts(view, queue[len(started)].nodes, free, started)
    _backfill_counts(view.now, _in_order(queue[len(started) + 1:], order), free, shadow,
                     extra, decisions)
    return decisions


def _shadow_counts(view: View, need: int, free: int, started: list[Job]
                   ) -> tuple[float, int]:
    """`shadow_of` on a node pool, on integers: (shadow time, extra nodes). A job started
    in this pass holds its requested nodes."""
    more = [(view.now + job.walltime, job.id) for job in started]
    if view.checkpointing_count:
        more += list(view.checkpointing_until())
    more.sort()
    fresh = {job.id: job.nodes for job in started}
    return shadow_and_extra(_release_counts(view.running_by_end(), more, fresh, view.running),
                            need, free)


def _release_counts(ends: Sequence[tuple[float, int]], more: list[tuple[float, int]],
                    fresh: dict[int, int], running: Mapping[int, Job]
                    ) -> Iterator[tuple[float, int]]:
    """(end, nodes) of the running jobs' predicted ends (`ends`) and of `more` (sorted:
    jobs started in this pass, whose nodes `fresh` gives, and checkpointing jobs) in one
    ascending order, lazily: the shadow is usually found after a few. Compiled, this
    merge replaces heapq.merge's interpreted one and a generator expression per pass."""
    k, m = 0, len(more)
    for end, jid in ends:
        while k < m:
            m_end, m_jid = more[k]
            if m_end > end or (m_end == end and m_jid > jid):
                break
            k += 1
            yield m_end, fresh[m_jid] if m_jid in fresh else running[m_jid].alloc_nodes
        yield end, running[jid].alloc_nodes
    for m_end, m_jid in more[k:]:
        yield m_end, fresh[m_jid] if m_jid in fresh else running[m_jid].alloc_nodes


def shadow_and_extra(releases: Iterable[tuple[float, int]], need: int, free: int
                     ) -> tuple[float, int]:
    """On a node pool, from (predicted end, nodes) releases in ascending end order and
    `free` nodes now: the shadow time (the earliest end at which `need` nodes are free)
    and `extra`, the nodes spare then. Every release at or before the shadow time counts,
    ties with it included (the paper's Algorithm 1 stops at the first job that makes the
    head fit, so its extra depends on how equal ends happen to be sorted)."""
    shadow = INF
    for end, nodes in releases:
        if end > shadow:
            break
        free += nodes
        if shadow == INF and free >= need:
            shadow = end
    return shadow, (free - need if shadow < INF else 0)


# How a candidate may be backfilled on a node pool (`backfill_way`). Final: compiled
# code uses the values, not a lookup of the module's globals per candidate.
NOT_NOW: Final = 0
BY_SHADOW: Final = 1
IN_EXTRA: Final = 2


def backfill_way(nodes: int, free: int, end: float, shadow: float, extra: int) -> int:
    """EASY's test for a candidate of `nodes` nodes that would end at `end` if started
    now: NOT_NOW unless it fits in the `free` nodes; BY_SHADOW if it ends by the shadow
    time; IN_EXTRA if it runs past it within the `extra` nodes the head leaves spare
    (which it then uses up)."""
    if nodes > free:
        return NOT_NOW
    if end <= shadow:
        return BY_SHADOW
    return IN_EXTRA if nodes <= extra else NOT_NOW


def _backfill_counts(now: float, candidates: Sequence[Job], free: int, shadow: float,
                     extra: int, decisions: list[Decision]) -> None:
    """The backfill loop of `easy_pass` on a node pool, on plain integers (the hot loop)."""
    for job in candidates:
        if free == 0:
            return
        n = job.nodes
        way = backfill_way(n, free, now + job.walltime, shadow, extra)
        if way == NOT_NOW:
            continue
        free -= n
        if way == IN_EXTRA:
            extra -= n
        decisions.append(Start(job.id))


def eligible_queue(view: View, decisions: list[Decision],
                   queue: Sequence[Job] | None = None) -> Sequence[Job]:
    """The queue (`view.queue` unless given) without dedicated jobs whose requested start
    is still ahead; asks to be woken at the earliest such start. Baselines treat a
    dedicated job as an ordinary job from its requested start on (the dedicated-aware
    policies live with LOS)."""
    if queue is None:
        queue = view.queue
    now = view.now
    if not view.has_requested_starts or not any(j.requested_start > now for j in queue):
        return queue
    decisions.append(WakeAt(min(j.requested_start for j in queue if j.requested_start > now)))
    return [j for j in queue if j.requested_start <= now]


class Easy(Policy):
    name = "easy"
    summary = "FCFS with EASY backfilling, first fit in queue order (Qsim first-fit)"
    order = "first"

    def schedule(self, view: View) -> list[Decision]:
        return easy_pass(view, self.order)


class EasyBestFit(Easy):
    name = "easy-bestfit"
    summary = "EASY backfilling trying the widest candidates first (Qsim best-fit)"
    order = "best"


class EasySjf(Easy):
    name = "easy-sjf"
    summary = "EASY backfilling trying the shortest requested time first (Qsim SJF)"
    order = "sjf"




class EasyE(Easy):
    """The LOS paper's EASY-E (Table III): EASY with the ECC processor, which `easy` has
    too; a name of its own so that all twelve schedulers can be named (docs/los.md)."""

    name = "easy-e"
    summary = "EASY backfilling with the ECC processor (Table III; the same code as easy)"
