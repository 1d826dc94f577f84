"""Brute force for tiny instances: the reference the MILP is tested against (docs/milp.md).

Every discrete choice of the model is enumerated: the block of every job (and, under
`resume="any"`, the block of piece 2 of every preempted BJ, independently of piece 1's),
the preempted flag of every preemptable BJ, and the order of the pieces — every
interleaving of the jobs' pieces that keeps the two pieces of one job in order, reduced to
the orientations it gives the pairs of pieces whose blocks share a midplane (two
interleavings with the same orientations are the same constraints). For each distinct
choice the continuous rest (start times and, for preempted BJs, the split of the work) is
solved exactly:

* no preemption: the earliest schedule in that order (a longest-path pass) — every end time
  is then as small as possible at once, so it is optimal for any objective and threshold;
* with preemption: a small LP (HiGHS), after a lower bound (earliest schedule with every
  piece at its minimum length) has not already ruled the choice out.

Nothing here is shared with schedd/milp/model.py except the Instance (jobs, candidate
blocks, eq. 34 overheads, minimum piece fraction, resume mode).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from schedd.milp.model import Instance

_INF = highspy.kHighsInf
Piece = tuple[int, int]  # (job index, 0 or 1)
Edges = frozenset[tuple[Piece, Piece]]
Blocks = dict[Piece, int]  # block of each piece
# (objective or its lower bound, mean RTJ SD, mean BJ SD, flags, edges, blocks, order)
_Candidate = tuple[float, float | None, float | None, tuple[bool, ...], Edges,
                   Blocks, tuple[Piece, ...]]


@dataclass
class BruteResult:
    objective: float | None  # best mean BJ SD ("bj") or mean RTJ SD ("rtj"); None: infeasible
    mean_bj_sd: float | None
    mean_rtj_sd: float | None
    blocks: tuple[int, ...] | None  # block index of each job (its piece 1) in a best schedule
    preempted: tuple[bool, ...] | None
    order: tuple[Piece, ...] | None  # an interleaving of the pieces giving that schedule
    choices: int  # (blocks, flags, order) combinations enumerated
    distinct: int  # distinct (flags, oriented conflicts) after reduction
    lps: int  # LPs solved
    resume_blocks: tuple[int | None, ...] | None = None  # piece 2's block (None: 1 piece)


def interleavings(counts: Sequence[int]) -> Iterator[tuple[Piece, ...]]:
    """Every sequence of the pieces (job, k), k < counts[job], with each job's in order."""
    total = sum(counts)
    nxt = [0] * len(counts)
    seq: list[Piece] = []

    def rec() -> Iterator[tuple[Piece, ...]]:
        if len(seq) == total:
            yield tuple(seq)
            return
        for j, c in enumerate(counts):
            if nxt[j] < c:
                seq.append((j, nxt[j]))
                nxt[j] += 1
                yield from rec()
                nxt[j] -= 1
                seq.pop()

    return rec()


def brute_force(instance: Instance, threshold: float | None = None,
                objective: str = "bj", max_pieces: int = 8) -> BruteResult:
    """The optimum over every discrete choice; `objective` "bj" (mean BJ SD under the RTJ
    threshold, eqs. 36-37) or "rtj" (the smallest mean RTJ SD: the least feasible
    threshold)."""
    if objective not in ("bj", "rtj"):
        raise ValueError(f"objective must be 'bj' or 'rtj', not {objective!r}")
    jobs = instance.jobs
    n = len(jobs)
    flag_jobs = [i for i in range(n) if instance.preemptable[i]]
    if n + len(flag_jobs) > max_pieces:
        raise ValueError(f"{n + len(flag_jobs)} pieces is too many for the brute force "
                         f"(at most {max_pieces})")
    masks = instance.cluster.masks
    best = BruteResult(None, None, None, None, None, None, 0, 0, 0)
    candidates: dict[tuple, tuple[Blocks, tuple[bool, ...], tuple[Piece, ...]]] = {}
    for flags_on in itertools.product((False, True), repeat=len(flag_jobs)):
        chosen = [False] * n
        for i, on in zip(flag_jobs, flags_on, strict=True):
            chosen[i] = on
        counts = [2 if f else 1 for f in chosen]
        pieces = [(j, k) for j in range(n) for k in range(counts[j])]
        # the pieces that choose a block: piece 1 of every job, and piece 2 of a preempted
        # BJ under "any" (under "same" it sits on piece 1's block)
        own = [pc for pc in pieces if pc[1] == 0 or instance.resume == "any"]
        # block choices grouped by the set of piece pairs (of two jobs) whose blocks overlap
        patterns: dict[frozenset[tuple[Piece, Piece]], Blocks] = {}
        combos = 0
        for choice in itertools.product(*(instance.blocks[j] for j, _ in own)):
            combos += 1
            chose = dict(zip(own, choice, strict=True))
            where = {pc: chose.get(pc, chose[pc[0], 0]) for pc in pieces}
            pat = frozenset((a, b) for a, b in itertools.combinations(pieces, 2)
                            if a[0] != b[0] and masks[where[a]] & masks[where[b]])
            patterns.setdefault(pat, where)
        seqs = list(interleavings(counts))
        best.choices += combos * len(seqs)
        for pat, where in patterns.items():
            for seq in seqs:
                edges = frozenset(
                    (a, b) for x, a in enumerate(seq) for b in seq[x + 1:]
                    if (min(a, b), max(a, b)) in pat)
                candidates.setdefault((tuple(chosen), edges), (where, tuple(chosen), seq))
    best.distinct = len(candidates)
    exact: list[_Candidate] = []
    bounded: list[_Candidate] = []
    for (flags, edges), (blocks, _, seq) in candidates.items():
        sched = _earliest(instance, flags, edges, seq)
        bj, rt = _means(instance, sched, flags)
        value = bj if objective == "bj" else rt
        item = (0.0 if value is None else value, rt, bj, flags, edges, blocks, seq)
        (exact if not any(flags) else bounded).append(item)
    for value, rt, bj, flags, _edges, blocks, seq in exact:
        if objective == "bj" and threshold is not None and rt is not None \
                and rt > threshold + 1e-9:
            continue
        if best.objective is None or value < best.objective - 1e-12:
            _record(best, value, bj, rt, blocks, flags, seq)
    bounded.sort(key=lambda item: item[0])
    for lb, rt_lb, _bj, flags, edges, blocks, seq in bounded:
        if objective == "bj" and threshold is not None and rt_lb is not None \
                and rt_lb > threshold + 1e-9:
            continue
        if best.objective is not None and lb >= best.objective:
            continue
        best.lps += 1
        got = _lp(instance, flags, edges, threshold if objective == "bj" else None, objective)
        if got is not None and (best.objective is None or got[0] < best.objective - 1e-12):
            _record(best, got[0], got[1], got[2], blocks, flags, seq)
    return best


def _record(best: BruteResult, value: float, bj: float | None, rt: float | None,
            where: Blocks, flags: tuple[bool, ...], seq: tuple[Piece, ...]) -> None:
    best.objective = value
    best.mean_bj_sd, best.mean_rtj_sd = bj, rt
    best.blocks = tuple(where[j, 0] for j in range(len(flags)))
    best.resume_blocks = tuple(where[j, 1] if f else None for j, f in enumerate(flags))
    best.preempted, best.order = flags, seq


def _earliest(instance: Instance, flags: Sequence[bool], edges: Edges,
              seq: Sequence[Piece]) -> dict[int, tuple[float, float]]:
    """Earliest (start of the first piece, end of the last) per job in this order. With a
    preempted job, pieces take their minimum length and the end is bounded below by the
    start plus all the work and both overheads: a lower bound on every time."""
    preds: dict[Piece, list[Piece]] = {}
    for a, b in edges:
        preds.setdefault(b, []).append(a)
    end: dict[Piece, float] = {}
    first: dict[int, float] = {}
    for piece in seq:
        j, k = piece
        job = instance.jobs[j]
        start = job.submit if k == 0 else end[(j, 0)]
        for a in preds.get(piece, ()):
            start = max(start, end[a])
        if flags[j]:
            length = instance.min_fraction * job.runtime + instance.overhead[j]
        else:
            length = job.runtime
        end[piece] = start + length
        if k == 0:
            first[j] = start
    out = {}
    for j, job in enumerate(instance.jobs):
        last = end[(j, 1)] if flags[j] else end[(j, 0)]
        if flags[j]:
            last = max(last, first[j] + job.runtime + 2.0 * instance.overhead[j])
        out[j] = (first[j], last)
    return out


def _means(instance: Instance, sched: dict[int, tuple[float, float]],
           flags: Sequence[bool]) -> tuple[float | None, float | None]:
    bj = [(sched[j][1] - job.submit) / job.runtime
          for j, job in enumerate(instance.jobs) if not job.realtime]
    rt = [(sched[j][1] - job.submit) / job.runtime
          for j, job in enumerate(instance.jobs) if job.realtime]
    return (sum(bj) / len(bj) if bj else None, sum(rt) / len(rt) if rt else None)


def _lp(instance: Instance, flags: Sequence[bool], edges: Edges, threshold: float | None,
        objective: str) -> tuple[float, float | None, float | None] | None:
    """Exact start times and work split for one discrete choice; None if infeasible."""
    jobs = instance.jobs
    col: dict[tuple[str, int, int], int] = {}
    lb: list[float] = []
    ub: list[float] = []
    rows: list[tuple[dict[int, float], float, float]] = []

    def var(key: tuple[str, int, int], lo: float, hi: float) -> int:
        col[key] = len(lb)
        lb.append(lo)
        ub.append(hi)
        return col[key]

    for j, job in enumerate(jobs):
        s0 = var(("s", j, 0), job.submit, _INF)
        e0 = var(("e", j, 0), -_INF, _INF)
        if not flags[j]:
            rows.append(({e0: 1.0, s0: -1.0}, job.runtime, job.runtime))
            continue
        c, f, rt = instance.overhead[j], instance.min_fraction, job.runtime
        w = var(("w", j, 0), f * rt, (1.0 - f) * rt)
        s1 = var(("s", j, 1), -_INF, _INF)
        e1 = var(("e", j, 1), -_INF, _INF)
        rows.append(({e0: 1.0, s0: -1.0, w: -1.0}, c, c))
        rows.append(({e1: 1.0, s1: -1.0, w: 1.0}, rt + c, rt + c))
        rows.append(({s1: 1.0, e0: -1.0}, 0.0, _INF))
    for a, b in edges:
        rows.append(({col[("e", *a)]: 1.0, col[("s", *b)]: -1.0}, -_INF, 0.0))
    nb = sum(1 for j in jobs if not j.realtime)
    nr = len(jobs) - nb
    cost = [0.0] * len(lb)
    rtj_row: dict[int, float] = {}
    rtj_const = 0.0
    bj_const = 0.0
    for j, job in enumerate(jobs):
        last = col[("e", j, 1)] if flags[j] else col[("e", j, 0)]
        if job.realtime:
            rtj_row[last] = 1.0 / (job.runtime * nr)
            rtj_const -= job.submit / (job.runtime * nr)
        else:
            bj_const -= job.submit / (job.runtime * nb)
            if objective == "bj":
                cost[last] = 1.0 / (job.runtime * nb)
    if objective == "rtj":
        for k, v in rtj_row.items():
            cost[k] = v
    if threshold is not None and rtj_row:
        rows.append((rtj_row, -_INF, threshold - rtj_const))
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(lb), len(rows)
    lp.col_cost_ = np.array(cost)
    lp.col_lower_, lp.col_upper_ = np.array(lb), np.array(ub)
    lp.row_lower_ = np.array([r[1] for r in rows])
    lp.row_upper_ = np.array([r[2] for r in rows])
    start: list[int] = [0]
    index: list[int] = []
    nonzero: list[float] = []
    for terms, _, _ in rows:
        index.extend(terms)
        nonzero.extend(terms.values())
        start.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = lp.num_col_, lp.num_row_
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(nonzero, dtype=np.float64)
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = h.getSolution().col_value
    ends = {j: x[col[("e", j, 1)] if flags[j] else col[("e", j, 0)]] for j in range(len(jobs))}
    bj_sds = [(ends[j] - job.submit) / job.runtime
              for j, job in enumerate(jobs) if not job.realtime]
    rt_sds = [(ends[j] - job.submit) / job.runtime for j, job in enumerate(jobs) if job.realtime]
    bj_mean = sum(bj_sds) / len(bj_sds) if bj_sds else None
    rt_mean = sum(rt_sds) / len(rt_sds) if rt_sds else None
    best = bj_mean if objective == "bj" else rt_mean
    return (best if best is not None else 0.0, bj_mean, rt_mean)
