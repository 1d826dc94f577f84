"""Where a job fits and when: Slurm 22.05's select/cons_tres node choice and will-run test.

`eval_nodes` follows cons_tres `_eval_nodes` (src/plugins/select/cons_tres/job_test.c) for
nodes of equal weight without topology: usable nodes form runs of consecutive indices; the
first run that holds the request with the fewest CPUs wins (else the largest); inside it a
request for one node takes the node with the fewest free CPUs that holds it, otherwise nodes
are taken in index order. An exclusive job sees only idle nodes and takes all their CPUs.

`will_run` follows cons_common `_will_run_test`: try now; otherwise release running jobs in
order of their expected end, in groups — every job ending within a window of 30 s (then
60, 120, ... s) past the first end rounded up to a multiple of 30 s — and test after each
group; the job's expected start is the end of the last job released.

Node sets are bitmasks (bit i: node i). `Nodes` keeps the free CPUs of every node with two
masks beside them, the idle nodes and the nodes with a free CPU, so that whether a request
can fit at all is answered from counts, and the node-by-node choice runs only when it can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

Place = tuple[tuple[int, int], ...]

# int.bit_count as a function: a method call on an int is slower in compiled code.
popcount: Final = int.bit_count


@dataclass(frozen=True, slots=True)
class Request:
    cpus: int  # CPUs the job needs (for an exclusive job: at least one per node)
    min_nodes: int
    max_nodes: int
    exclusive: bool

    # Compiled classes pickle through their constructor (the daemon's snapshots).
    def __reduce__(self) -> tuple[Any, ...]:
        return (Request, (self.cpus, self.min_nodes, self.max_nodes, self.exclusive))


class Placement:
    """Where a job runs: the nodes it takes whole (a mask) and the CPUs it takes on others
    ((node, CPUs) pairs). `place()` is the engine's form."""

    __slots__ = ("full", "partial", "mask")

    def __init__(self, full: int, partial: tuple[tuple[int, int], ...] = ()):
        self.full = full
        self.partial = partial
        mask = full
        for node, _ in partial:
            mask |= 1 << node
        self.mask = mask

    def __reduce__(self) -> tuple[Any, ...]:
        return (Placement, (self.full, self.partial))

    def place(self, total: Sequence[int]) -> Place:
        out = list(self.partial)
        mask = self.full
        while mask:
            low = mask & -mask
            i = low.bit_length() - 1
            out.append((i, total[i]))
            mask ^= low
        out.sort()
        return tuple(out)


def run_lists(mask: int) -> tuple[list[int], list[int]]:
    """The first node and the length of each run of consecutive nodes in `mask`, in
    order, as two lists."""
    firsts: list[int] = []
    lengths: list[int] = []
    if mask <= 0:
        return firsts, lengths
    # The mask's binary digits ("0b" then the highest node first; node i at index
    # top - i): the runs are found by str.rfind, in C, from the lowest node up, not by a
    # handful of operations on a many-digit int per run.
    bits = bin(mask)
    top = len(bits) - 1
    pos = bits.rfind("1")
    while pos >= 2:
        zero = bits.rfind("0", 2, pos)  # the digit just past this run, or none
        firsts.append(top - pos)
        if zero < 0:
            lengths.append(pos - 1)
            break
        lengths.append(pos - zero)
        pos = bits.rfind("1", 2, zero)
    return firsts, lengths


def runs_of(mask: int) -> list[tuple[int, int]]:
    """(first node, length) of each run of consecutive nodes in `mask`, in order."""
    firsts, lengths = run_lists(mask)
    return [(firsts[k], lengths[k]) for k in range(len(firsts))]


class Nodes:
    """Free CPUs of every node: the idle ones as a mask, the partly used ones in a dict,
    and the mask of nodes with any CPU free."""

    __slots__ = ("total", "uniform", "idle", "some", "part")

    def __init__(self, total: Sequence[int], uniform: int = -1, idle: int = -1,
                 some: int = -1, part: dict[int, int] | None = None):
        self.total = total
        self.uniform = uniform if uniform >= 0 else (
            total[0] if len(set(total)) == 1 else 0)
        every = (1 << len(total)) - 1
        self.idle = every if idle < 0 else idle
        self.some = every if some < 0 else some
        self.part: dict[int, int] = {} if part is None else part

    def copy(self) -> Nodes:
        return Nodes(self.total, self.uniform, self.idle, self.some, dict(self.part))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Nodes, (list(self.total), self.uniform, self.idle, self.some,
                        dict(self.part)))

    def free_of(self, node: int) -> int:
        if self.idle >> node & 1:
            return self.total[node]
        return self.part.get(node, 0)

    def take(self, at: Placement) -> None:
        self.idle &= ~at.full
        self.some &= ~at.full
        for node, cpus in at.partial:
            f = self.free_of(node) - cpus
            bit = 1 << node
            self.idle &= ~bit
            if f > 0:
                self.part[node] = f
            else:
                self.part.pop(node, None)
                self.some &= ~bit

    def give(self, at: Placement) -> None:
        self.idle |= at.full
        self.some |= at.full
        for node, cpus in at.partial:
            f = self.free_of(node) + cpus
            bit = 1 << node
            self.some |= bit
            if f >= self.total[node]:
                self.idle |= bit
                self.part.pop(node, None)
            else:
                self.part[node] = f

    def cpus_in(self, mask: int) -> int:
        """Free CPUs of the nodes of `mask`."""
        idle = self.idle & mask
        if self.uniform:
            cpus = popcount(idle) * self.uniform
        else:
            cpus = 0
            while idle:
                low = idle & -idle
                cpus += self.total[low.bit_length() - 1]
                idle ^= low
        if self.part:
            for node, f in self.part.items():
                if mask >> node & 1:
                    cpus += f
        return cpus

    def could_fit(self, req: Request, usable: int) -> bool:
        """Whether the request's CPUs and nodes are there at all (a necessary condition
        for the placement, from the masks)."""
        if req.exclusive:
            return popcount(self.idle & usable) >= req.min_nodes
        having = self.some & usable
        count = popcount(having)
        if count < req.min_nodes:
            return False
        if self.uniform and not self.part and self.some == self.idle:
            return count * self.uniform >= req.cpus  # cpus_in(having): all of them idle
        return self.cpus_in(having) >= req.cpus

    def place(self, req: Request, usable: int) -> Placement | None:
        if not self.could_fit(req, usable):
            return None
        return eval_nodes(self, usable & (self.idle if req.exclusive else self.some), req)


def eval_nodes(nodes: Nodes, usable: int, req: Request) -> Placement | None:
    """The placement cons_tres picks among the nodes of bitmask `usable` (each with a free
    CPU; idle ones for an exclusive job), or None."""
    if popcount(usable) < req.min_nodes:
        return None
    firsts, lengths = run_lists(usable)
    nruns = len(firsts)
    # Free CPUs of each run; nodes of equal size (the common case) need no lookup.
    uniform = nodes.uniform if (req.exclusive or not (usable & ~nodes.idle)) else 0
    run_cpus: list[int] = []
    for k in range(nruns):
        if uniform:
            run_cpus.append(lengths[k] * uniform)
        else:
            cpus = 0
            for i in range(firsts[k], firsts[k] + lengths[k]):
                cpus += nodes.free_of(i)
            run_cpus.append(cpus)
    rem_cpus = req.cpus
    rem_nodes = req.min_nodes
    max_nodes = req.max_nodes
    exclusive = req.exclusive
    full = 0
    partial: list[tuple[int, int]] = []
    alive = [True] * nruns
    total = nodes.total
    while max_nodes > 0:
        best = -1
        best_cpus = 0
        best_suff = False
        for k in range(nruns):
            if not alive[k]:
                continue
            cpus = run_cpus[k]
            suff = cpus >= rem_cpus and lengths[k] >= rem_nodes
            if best < 0:
                new = True
            else:
                new = ((suff and not best_suff) or (suff and cpus < best_cpus)
                       or (not suff and not best_suff and cpus > best_cpus))
            if new:
                best, best_cpus, best_suff = k, cpus, suff
        if best < 0:
            break
        # The nodes to take from: consecutive, [take_lo, take_lo + take_len).
        take_lo = firsts[best]
        take_len = lengths[best]
        if rem_nodes <= 1:
            if uniform:
                if uniform >= rem_cpus:
                    take_len = 1
            else:
                single, size = -1, 0
                for i in range(take_lo, take_lo + take_len):
                    a = nodes.free_of(i)
                    if a >= rem_cpus and (single < 0 or a < size):
                        single, size = i, a
                        if size == rem_cpus:
                            break
                if single >= 0:
                    take_lo, take_len = single, 1
        if uniform and (exclusive or (rem_nodes <= 1 and max_nodes * uniform >= rem_cpus)):
            # Nodes of one size taken in index order, whole but for the last: a mask, not
            # a loop (a per-core request fills each node while more than a node is left).
            if not exclusive and take_len * uniform >= rem_cpus:
                want = max(rem_cpus, 0)
                whole = want // uniform
                rest = want % uniform
                if whole == 0 and rest == 0:
                    whole = 1  # a node at least
                if rest and whole < take_len:
                    partial.append((take_lo + whole, rest))
                    rem_cpus -= rest
                    rem_nodes -= 1
                    max_nodes -= 1
                count = whole
            else:
                needed = max(rem_nodes, -(-max(rem_cpus, 0) // uniform))
                count = min(take_len, max_nodes, needed)
            if count:
                full |= ((1 << count) - 1) << take_lo
                rem_cpus -= count * uniform
                rem_nodes -= count
                max_nodes -= count
        else:
            for i in range(take_lo, take_lo + take_len):
                if max_nodes == 0 or (rem_nodes <= 0 and rem_cpus <= 0):
                    break
                a = uniform or nodes.free_of(i)
                if max_nodes == 1 and a < rem_cpus:
                    continue
                use = a if exclusive else min(a, max(rem_cpus - max(rem_nodes - 1, 0), 1))
                if use == total[i]:
                    full |= 1 << i
                else:
                    partial.append((i, use))
                rem_cpus -= use
                rem_nodes -= 1
                max_nodes -= 1
        if rem_nodes <= 0 and rem_cpus <= 0:
            return Placement(full, tuple(partial))
        alive[best] = False
    if rem_cpus <= 0 and rem_nodes <= 0:
        return Placement(full, tuple(partial))
    return None


@dataclass(slots=True)
class Running:
    """A running job as the will-run test sees it."""

    end: float  # expected end: start + time limit
    at: Placement
    guess: float  # when it is thought to end once past `end` (_guess_job_end)
    # Its place in slurmctld's job list, which is in order of submission: the will-run
    # test sorts that list by end_time with glibc's stable qsort, so jobs ending in the
    # same second keep this order (by_end_then_submission).
    seq: int = 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (Running, (self.end, self.at, self.guess, self.seq))


def by_end_then_submission(run: Running) -> tuple[float, int]:
    """The will-run test's order of running jobs: expected end, then submission."""
    return (run.end, run.seq)


class Releases:
    """The will-run test's steps on one set of usable nodes (`_will_run_test`): running
    jobs released in order of expected end, in groups — every job ending within a window
    of 30 s (then 60, 120, ... s, or + `window_scale`) past the first end rounded up to a
    multiple of 30 s of Unix time — and after each group the free CPUs and the start that
    group gives (the end of its last job, or its guessed end once that has passed). Steps
    are made as a test needs them and kept, so every job a backfill cycle tests on the
    same nodes, while nothing starts, shares them.

    Slurm walks every running job in end order, usable nodes or not: after each release
    it peeks at the next job in that list, and a job on none of the usable nodes is
    skipped without that check. So a group that reaches such a job within its window
    also takes the next job that has usable nodes, however late it ends (in the
    partitions reference runs, a long job reserved at 150 s where the window ended at
    127 s); and the window grows until it holds the job last peeked at.

    Each step keeps the machine's masks (idle nodes, nodes with a free CPU, the partly
    used nodes' free CPUs where there are any) and, on the usable nodes, the counts
    `Nodes.could_fit` reads, so that a request is tested against a step by comparing
    numbers; a `Nodes` of the step is made only to place a request that passes."""

    __slots__ = ("starts", "idles", "somes", "parts", "nodes_free", "cpus_free",
                 "nodes_idle", "usable", "ordered", "k", "window", "base", "scale", "now",
                 "future")

    def __init__(self, nodes: Nodes, usable: int, running: list[Running], now: float,
                 window_scale: int = 0, epoch: float = 0.0) -> None:
        self.starts: list[float] = []
        self.idles: list[int] = []
        self.somes: list[int] = []
        self.parts: list[dict[int, int] | None] = []
        self.nodes_free: list[int] = []  # nodes of `usable` with a free CPU
        self.cpus_free: list[int] = []  # their free CPUs
        self.nodes_idle: list[int] = []  # idle nodes of `usable`
        self.usable = usable
        # `running` is in end order (stable: ties keep their order).
        self.ordered = list(running)
        self.k = 0
        self.window = 30
        self.scale = window_scale
        self.now = now
        self.future = nodes
        self.base = 0.0
        for run in self.ordered:
            if run.at.mask & usable:
                self.future = nodes.copy()
                first = run.end
                self.base = first + (30 - (first + epoch) % 30)
                break

    def step(self) -> bool:
        """Release the next group; False when every job has been released."""
        ordered = self.ordered
        n = len(ordered)
        k = self.k
        usable = self.usable
        future = self.future
        base = self.base
        window = self.window
        last: Running | None = None
        peeked: Running | None = None  # Slurm's next_job_ptr
        while k < n:
            run = ordered[k]
            k += 1
            if not run.at.mask & usable:
                continue  # skipped: no window check
            last = run
            future.give(run.at)
            if k >= n:
                peeked = None
                break
            peeked = ordered[k]
            if peeked.end > base + window:
                break
        if last is None:
            self.k = n
            return False
        # A do-while in Slurm: the window grows at least once after every group.
        scale = self.scale
        window = window + scale if scale else window * 2
        while peeked is not None and peeked.end > base + window:
            window = window + scale if scale else window * 2
        self.k = k
        self.window = window
        self.starts.append(last.end if last.end > self.now else last.guess)
        having = future.some & usable
        count = popcount(having)
        self.idles.append(future.idle)
        self.somes.append(future.some)
        self.nodes_free.append(count)
        if future.part:
            self.parts.append(dict(future.part))
        else:
            self.parts.append(None)
            if future.uniform and future.some == future.idle:
                # Every node with a free CPU is idle: the counts are the one count.
                self.cpus_free.append(count * future.uniform)
                self.nodes_idle.append(count)
                return True
        self.cpus_free.append(future.cpus_in(having))
        self.nodes_idle.append(popcount(future.idle & usable))
        return True

    def fits(self, i: int, req: Request) -> bool:
        """`Nodes.could_fit(req, usable)` on step i's machine."""
        if req.exclusive:
            return self.nodes_idle[i] >= req.min_nodes
        return self.nodes_free[i] >= req.min_nodes and self.cpus_free[i] >= req.cpus

    def state(self, i: int) -> Nodes:
        """The machine after step i."""
        future = self.future
        return Nodes(future.total, future.uniform, self.idles[i], self.somes[i],
                     self.parts[i])


def will_run(nodes: Nodes, usable: int, req: Request, running: list[Running],
             now: float, window_scale: int = 0, now_only: bool = False,
             epoch: float = 0.0,
             steps: dict[int, Releases] | None = None) -> tuple[float, Placement] | None:
    """(expected start, placement) of the job among the nodes of bitmask `usable`, or None
    if it never fits there (or, with `now_only`, does not fit now). `running` is sorted by
    expected end (stable: ties keep their order). Times are seconds after Unix time
    `epoch`: the windows start at multiples of 30 s of Unix time. `steps`, kept by a
    caller while `nodes` and `running` stay as they are, shares the release steps of
    each set of usable nodes between tests."""
    place = nodes.place(req, usable)
    if place is not None:
        return now, place
    if now_only:
        return None
    releases = steps.get(usable) if steps is not None else None
    if releases is None:
        releases = Releases(nodes, usable, running, now, window_scale, epoch)
        if steps is not None:
            steps[usable] = releases
    starts = releases.starts
    i = 0
    while True:
        if i == len(starts) and not releases.step():
            return None
        if releases.fits(i, req):  # Nodes.place: could_fit, then the node choice
            state = releases.state(i)
            place = eval_nodes(state, usable & (state.idle if req.exclusive else state.some),
                               req)
            if place is not None:
                return starts[i], place
        i += 1
