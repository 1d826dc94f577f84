"""One cycle of Slurm 22.05's backfill scheduler (plugins/sched/backfill/backfill.c,
`_attempt_backfill`), over a node-space map; compiled by mypyc (setup.py).

The map (`NodeSpace`, Slurm's `node_space`) is a run of contiguous records [begin, end)
with the nodes still available in each. For each candidate, in priority order:

1. its nodes are those of its partition that every record overlapping
   [start, start + time limit] leaves available; if too few, or if the will-run test then
   fails, a later start is tried where the next record frees more (`later_start`);
2. the will-run test (select.py) gives its expected start and placement;
3. a job that can start now is started by the caller (a whole-node job then also takes
   its nodes off the map until its expected end: `_bf_reserve_running`); otherwise, within
   the window and without overlapping a record's taken nodes (`_test_resv_overlap`), its
   nodes are taken off the map from its start to its end, both rounded down to the
   resolution (`_add_reservation`).

Times are seconds after the trace's time 0; `epoch` is its Unix time, because Slurm rounds
to multiples of Unix time.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable
from typing import Any, Final

from .select import (
    Nodes,
    Placement,
    Releases,
    Request,
    Running,
    by_end_then_submission,
    popcount,
    will_run,
)

INF: Final = float("inf")


class Candidate:
    """A pending job as one backfill cycle sees it."""

    __slots__ = ("id", "usable", "limit", "req", "no_reserve")

    def __init__(self, id: int, usable: int, limit: float, req: Request,
                 no_reserve: bool) -> None:
        self.id = id
        self.usable = usable  # its partition's nodes
        self.limit = limit  # its time limit (s), its partition's MaxTime at most
        self.req = req
        self.no_reserve = no_reserve  # bf_min_age/prio_reserve: start now or not at all

    # Compiled classes pickle through their constructor (the daemon's snapshots).
    def __reduce__(self) -> tuple[Any, ...]:
        return (Candidate, (self.id, self.usable, self.limit, self.req, self.no_reserve))


def last_fit(candidates: list[Candidate], nodes: Nodes) -> int:
    """Index of the last candidate whose request fits its nodes' free CPUs now
    (`Nodes.could_fit`), or -1: the counts of one set of usable nodes are computed once
    for the run of candidates that share it."""
    usable = -1
    some = idle = cpus = -1
    i = len(candidates) - 1
    while i >= 0:
        job = candidates[i]
        req = job.req
        if job.usable != usable:
            usable = job.usable
            some = idle = cpus = -1
        if req.exclusive:
            if idle < 0:
                idle = popcount(nodes.idle & usable)
            if idle >= req.min_nodes:
                return i
        else:
            if some < 0:
                having = nodes.some & usable
                some = popcount(having)
                cpus = nodes.cpus_in(having)
            if some >= req.min_nodes and cpus >= req.cpus:
                return i
        i -= 1
    return -1


def floor_to(t: float, res: int, epoch: float) -> float:
    """t rounded down to a multiple of `res` seconds of Unix time."""
    return ((t + epoch) // res) * res - epoch


class NodeSpace:
    """Contiguous records [begin[i], end[i]) with the nodes available in each."""

    __slots__ = ("begin", "end", "mask", "res", "full")

    def __init__(self, begin: float, end: float, mask: int, res: int) -> None:
        self.begin: list[float] = [begin]
        self.end: list[float] = [end]
        self.mask: list[int] = [mask]
        self.res = res
        self.full = mask  # every record's nodes are some of these

    def available(self, base: int, start: float, end_time: float, need: int = 0,
                  want_later: bool = True) -> tuple[int, float]:
        """(nodes of `base` free over every record overlapping [start, end_time], the end
        of the first record after which more of `base` would be free, or 0). With `need`:
        once fewer than `need` nodes are left (and the later start is known, or not
        wanted), the rest of the records are not read — only that count matters then.
        Without `want_later` the later start is not looked for (0 is returned)."""
        avail = base
        later = 0.0
        ends, begins, masks = self.end, self.begin, self.mask
        n = len(ends)
        # The first record ending after `start` (the records are contiguous, in order):
        # those before it neither hold `start` nor free anything after it.
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            if ends[mid] <= start:
                lo = mid + 1
            else:
                hi = mid
        # base & next & ~cut, "more of base free in the next record than in this one's
        # cut", is (base & next) | cut != cut, one operation fewer on many-digit ints; and
        # with every node as base, base & next is next.
        whole = base == self.full
        find_later = want_later
        for j in range(lo, n):
            past = begins[j] > end_time  # the first record after the job's end: the last
            if past and not find_later:
                break
            cut = avail & masks[j]
            if find_later and j + 1 < n:
                nxt = masks[j + 1] if whole else base & masks[j + 1]
                if (nxt | cut) != cut:
                    later = ends[j]
                    find_later = later == 0.0
            if past:
                break
            avail = cut
            if need > 0 and not find_later and popcount(avail) < need:
                break
        return avail, later

    def overlaps(self, mask: int, start: float, end: float) -> bool:
        """Whether `mask` takes a node that a record overlapping [start, end) has taken."""
        ends, begins, masks = self.end, self.begin, self.mask
        for j in range(len(begins)):
            if ends[j] > start and begins[j] < end and (mask | masks[j]) != masks[j]:
                return True
        return False

    def reserve(self, start: float, end: float, mask: int) -> None:
        """Take `mask` off the map over [start, end) (at least one resolution long), then
        merge the first two neighbouring records left with the same nodes, from the
        record before the reservation's to the one after it — once, as Slurm's
        `_add_reservation` does ("up to one record"). Which records are merged matters:
        a job's later start is the end of a record whose next frees more nodes, and a
        merged run of fully taken records reaches past the job's end to the record that
        frees them (a 6-node job in basic-bf2/r9's cycle at 237 s, which Slurm planned at
        503 s where separate records left it no start)."""
        begins, ends, masks = self.begin, self.end, self.mask
        start = max(start, begins[0])
        if end < start + self.res:
            end = start + self.res
        n = len(begins)
        i = 0
        before = 0  # Slurm's one_before: the last record passed before `start`'s
        while i < n and ends[i] < start:
            before = i
            i += 1
        if i == n:
            return
        head_old = -1  # the head record's nodes where the reservation begins with it
        if ends[i] == start:
            i += 1  # a record ends at `start`: the reservation begins with the next
        elif begins[i] < start:  # split the record holding `start`
            begins.insert(i + 1, start)
            ends.insert(i + 1, ends[i])
            masks.insert(i + 1, masks[i])
            ends[i] = start
            i += 1
        else:
            # `start` is the map's own beginning: Slurm leaves an empty record there with
            # the old nodes, the first of the neighbours it compares.
            head_old = masks[i]
        after = -1  # Slurm's one_after: the record after the reservation's last
        while i < len(begins) and begins[i] < end:
            if end < ends[i]:
                begins.insert(i + 1, end)
                ends.insert(i + 1, ends[i])
                masks.insert(i + 1, masks[i])
                ends[i] = end
            masks[i] &= ~mask
            if ends[i] == end:
                if i + 1 < len(begins):
                    after = i + 1
                break
            i += 1
        if head_old >= 0 and head_old == masks[0]:
            return  # the empty record and the head merge: the one merge is spent
        k = before
        while k != after and k + 1 < len(begins):
            if masks[k] == masks[k + 1]:
                ends[k] = ends[k + 1]
                del begins[k + 1]
                del ends[k + 1]
                del masks[k + 1]
                return
            k += 1

def guesses_at(running: list[Running], now: float) -> list[Running]:
    """The running jobs as the will-run test sees them at `now`: a guessed end that has
    passed moved to the next second."""
    return [r if r.guess > now else Running(r.end, r.at, now + 1, r.seq) for r in running]


def backfill_cycle(now: float, candidates: list[Candidate], nodes: Nodes,
                   running: list[Running], all_nodes: int, res: int, window: float,
                   max_test: int, max_start: int, window_scale: int, epoch: float,
                   start: Callable[[Candidate, Placement], Running],
                   more: bool = False, exhaustive: bool = False,
                   plans: list[tuple[float, int, float, int]] | None = None
                   ) -> tuple[bool, int, int, float]:
    """Run one cycle; `start(candidate, placement)` starts a job now and returns it as a
    running job. `running` is sorted by expected end, then submission. `more`: jobs
    that cannot start now wait after the candidates (the caller left them out).
    `exhaustive` tests every job up to the last that could start when the cycle began,
    in full (the tests' reference for the shortcuts). `plans`, if given, gets (now,
    job, expected start, nodes) of every reservation made, as Slurm logs them
    (`_dump_job_sched`). Returns (whether any job got an expected start, jobs started,
    the nodes the reservations were made on: Slurm's `planned_bitmap`, and the earliest
    time from which the same cycle with nothing changed but `now` could decide otherwise,
    as far as its reservations and node-space map say: its first reservation's start, the
    first expected start past the window less the window, the first time a job's test
    from `now` over its limit would reach a record it did not, the map's first record
    boundary after its start (a later cycle's map begins there, without the record
    that split it off, and `_add_reservation` merges by records), and, where a
    reservation reached the window's end, the next move of that end)."""
    # Only a job that fits the free CPUs of its partition now can start in this cycle:
    # starts take CPUs and reservations take nodes, nothing gives any back. Jobs after the
    # last such job only get expected starts, which nothing keeps past the cycle: a cycle
    # stops there, and a cycle with no such job starts nothing. The first job's own
    # expected start exists whenever it fits its partition at all (the import drops jobs
    # that never do), so the agent's "update" is whether any job waits.
    last = last_fit(candidates, nodes)
    if last < 0:
        return bool(candidates) or more, 0, 0, INF
    more = more or len(candidates) > last + 1
    space = NodeSpace(floor_to(now, res, epoch), floor_to(now + window, res, epoch),
                      all_nodes, res)
    estimates = False
    planned = 0
    recheck = INF
    reaches_end = False
    tried = 0
    started = 0
    tested: dict[tuple[int, int, int, int, bool, bool], tuple[float, Placement] | None] = {}
    steps: dict[int, Releases] = {}  # the will-run test's release steps, per usable nodes
    i = -1
    while i < last:
        i += 1
        job = candidates[i]
        if tried >= max_test:
            break
        limit = job.limit
        req = job.req
        start_res = now
        counted = False
        # The last job that could start now, once the cycle's answer is known (some job
        # got an expected start or started): only whether it starts now matters, as for
        # a job that may not reserve; its expected start and reservation change nothing.
        now_only = job.no_reserve or (not exhaustive and i == last
                                      and (estimates or started > 0 or more))
        while True:
            end_time = max(start_res, now) + limit
            if start_res <= now:
                # A later `now` reaches more records over [now, now + limit]: from the
                # first record beginning after this end on.
                b = bisect_right(space.begin, end_time)
                if b < len(space.begin) and space.begin[b] - limit < recheck:
                    recheck = space.begin[b] - limit
            avail, later = space.available(job.usable, start_res, end_time, req.min_nodes,
                                           not now_only)
            if popcount(avail) < req.min_nodes:
                if later and not now_only:
                    start_res = later
                    continue
                break
            if not counted:
                counted = True
                tried += 1
            key = (avail, req.cpus, req.min_nodes, req.max_nodes, req.exclusive, now_only)
            if key in tested:
                found = tested[key]
            else:  # same nodes, same request, nothing started since: same answer
                found = will_run(nodes, avail, req, running, now, window_scale, now_only,
                                 epoch, steps)
                tested[key] = found
            if found is None:
                if later and not now_only:
                    start_res = later
                    continue
                break
            when, place = found
            when = max(when, start_res)
            if when <= now:
                tested.clear()
                steps.clear()
                run = start(job, place)
                insort(running, run, key=by_end_then_submission)
                started += 1
                # Fewer CPUs are free: the last job that could start now may come sooner.
                while not exhaustive and last > i and not nodes.could_fit(candidates[last].req,
                                                       candidates[last].usable):
                    last -= 1
                if req.exclusive:  # _bf_reserve_running: whole nodes until its end
                    space.reserve(space.begin[0], floor_to(run.end, res, epoch),
                                  place.mask)
                break
            estimates = True
            if job.no_reserve:
                break
            if later and when > later:
                start_res = later
                continue
            if when > now + window:
                recheck = min(recheck, when - window)
                break
            s0 = floor_to(when, res, epoch)
            e0 = floor_to(when + limit, res, epoch)
            if when > now and space.overlaps(place.mask, s0, e0):
                if when <= start_res:
                    break  # no later start to try (Slurm would spin to bf_max_time)
                start_res = when
                continue
            if plans is not None:
                plans.append((now, job.id, when, place.mask))
            planned |= place.mask
            recheck = min(recheck, when)
            if e0 > space.end[-1]:
                reaches_end = True  # cut at the map's end, which a later `now` moves
            space.reserve(s0, e0, place.mask)
            break
        if max_start and started >= max_start:
            break
    if len(space.begin) > 1:
        recheck = min(recheck, space.begin[1])
    if reaches_end or space.mask[-1] != space.full:
        recheck = min(recheck, floor_to(now + window, res, epoch) + res - window)
    return estimates or started > 0 or more, started, planned, recheck
