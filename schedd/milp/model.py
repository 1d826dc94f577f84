"""The offline MILP of the real-time paper (§5), as a correct linear model (docs/milp.md).

Jobs are known in advance (offline), rigid, with exact runtimes. A job runs on one block
(partition) of its allocation size; a batch job (BJ) may be preempted at most once and
then resumes on the *same* block (`resume="same"`, the paper's model) or on any block of
its size (`resume="any"`: piece 2 has its own block variables); each of its two pieces
does at least `min_fraction` of its work (eq. 51) and pays the JIT checkpoint time ovhd_j
of eq. 34 — piece 1 writes the checkpoint at its end, piece 2 reads it at its start.
Real-time jobs (RTJs) are never preempted. Objective eq. 36 (mean BJ slowdown), RTJ
constraint eq. 37 (mean RTJ slowdown <= threshold), with the §5.1 upward search for the
smallest feasible threshold.

Variables (docs/milp.md, "The model"):
  x[j,b]  binary   job j runs on block b (b among the blocks of j's partition size)
  x2[j,b] binary   piece 2 of BJ j runs on block b (resume="any" only; = x when p = 0)
  p[j]    binary   BJ j is preempted (only for preemptable BJs)
  w[j]    real     work done by piece 1 of BJ j (= runtime when not preempted)
  s, e    real     start / end of every piece, in [submit, H]
  o[i,j]  binary   jobs i and j share a resource (forced to 1 when their blocks overlap);
                   under resume="any" one per pair of block choices (piece 1 / piece 2)
  y[a,c]  binary   piece a runs before piece c (for pieces of jobs that may overlap)
H is the horizon max(submit) + sum(runtimes) + 2 x sum(overheads of preemptable BJs): any
schedule can be left-shifted (same order, same blocks) below H without worsening anything,
so H is both a safe bound on every time and a valid big-M. Valid cuts (piece order, and
single-machine inequalities for jobs that always conflict) only tighten the relaxation.
After HiGHS, the binaries are fixed and the LP re-solved exactly ("polish").
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np

from schedd.core.bgq import BlockCluster
from schedd.milp.common import (  # noqa: F401 - re-exported: the model's public names
    DEFAULT_MIN_FRACTION,
    DEFAULT_RESUME,
    DEFAULT_THRESHOLD,
    DEFAULT_TOLERANCE,
    RESUME_MODES,
    MilpError,
)

LEXICOGRAPHIC_SLACK = 1e-6  # stage 2 keeps the mean RTJ slowdown within this of stage 1
_INF = highspy.kHighsInf


@dataclass(frozen=True)
class MilpJob:
    """One job of an offline instance. `runtime` is exact; `walltime` is only carried."""

    id: int
    submit: float
    runtime: float
    nodes: int
    realtime: bool = False
    walltime: float = 0.0
    preemptable: bool = True  # BJs only; RTJs are never preempted
    ckpt_gb: float = -1.0  # checkpoint GB per node; < 0: the cluster's default (16)


@dataclass(frozen=True)
class Instance:
    """Jobs on a block cluster, with everything the model derives from them."""

    jobs: tuple[MilpJob, ...]
    cluster: BlockCluster
    blocks: tuple[tuple[int, ...], ...]  # candidate block indices of each job
    overhead: tuple[float, ...]  # eq. 34 seconds (0 for RTJs), CheckpointModel.seconds
    horizon: float
    min_fraction: float
    preemptable: tuple[bool, ...]  # the model has p[j] for these jobs
    resume: str = DEFAULT_RESUME  # "same": piece 2 on piece 1's block; "any": any block

    @property
    def batch(self) -> list[int]:
        return [i for i, j in enumerate(self.jobs) if not j.realtime]

    @property
    def realtime(self) -> list[int]:
        return [i for i, j in enumerate(self.jobs) if j.realtime]

    def may_conflict(self, i: int, k: int) -> tuple[bool, bool]:
        """(some block pair of i and k overlaps, every block pair overlaps)."""
        masks = self.cluster.masks
        hits = [bool(masks[a] & masks[b]) for a in self.blocks[i] for b in self.blocks[k]]
        return any(hits), all(hits)

    def max_threshold(self) -> float:
        """A mean RTJ slowdown that every schedule inside the horizon meets."""
        rt = [self.jobs[i] for i in self.realtime]
        return max(((self.horizon - j.submit) / j.runtime for j in rt), default=1.0)


def make_instance(
    jobs: Iterable[MilpJob],
    cluster: BlockCluster,
    *,
    min_fraction: float = DEFAULT_MIN_FRACTION,
    preemption: bool = True,
    resume: str = DEFAULT_RESUME,
) -> Instance:
    """Check the jobs against the cluster and derive blocks, overheads and the horizon.
    `resume`: "same" (a preempted BJ resumes on its block, the paper's model) or "any"
    (on any block of its size)."""
    jobs = tuple(jobs)
    if resume not in RESUME_MODES:
        raise MilpError(f"resume must be one of {', '.join(RESUME_MODES)}, not {resume!r}")
    if not isinstance(cluster, BlockCluster):
        raise MilpError(f"the MILP needs a partitioned machine (bgq:M, mira, mira-blocks), "
                        f"not {getattr(cluster, 'name', cluster)}")
    if not jobs:
        raise MilpError("the instance has no jobs")
    if not 0.0 <= min_fraction <= 0.5:
        raise MilpError(f"the minimum piece fraction must be in [0, 0.5], got {min_fraction:g}")
    if len({j.id for j in jobs}) != len(jobs):
        raise MilpError("job ids must be unique")
    blocks, overhead, preemptable = [], [], []
    for j in jobs:
        if not (j.runtime > 0 and math.isfinite(j.runtime)):
            raise MilpError(f"job {j.id} has runtime {j.runtime:g}; it must be > 0")
        if not (j.submit >= 0 and math.isfinite(j.submit)):
            raise MilpError(f"job {j.id} has submit time {j.submit:g}; it must be >= 0")
        size = cluster.alloc_size(j.nodes)
        if size is None:
            raise MilpError(f"job {j.id} asks for {j.nodes} nodes, more than {cluster.name} "
                            f"has in one partition")
        blocks.append(tuple(i for i, b in enumerate(cluster.blocks) if b.nodes == size))
        can = preemption and j.preemptable and not j.realtime
        preemptable.append(can)
        overhead.append(cluster.checkpoint_model.seconds(size, j.ckpt_gb) if can else 0.0)
    horizon = (max(j.submit for j in jobs) + sum(j.runtime for j in jobs)
               + 2.0 * sum(overhead))
    return Instance(jobs, cluster, tuple(blocks), tuple(overhead), float(horizon),
                    float(min_fraction), tuple(preemptable), resume)


# ----------------------------------------------------------------------------- results


@dataclass
class JobSchedule:
    id: int
    realtime: bool
    nodes: int
    submit: float
    runtime: float
    block: str  # the block of piece 1
    pieces: list[tuple[float, float]]  # (start, end) of each piece, overheads included
    work: list[float]  # compute seconds done by each piece
    preempted: bool
    slowdown: float  # (end of the last piece - submit) / runtime
    blocks: list[str] = field(default_factory=list)  # the block of each piece


@dataclass
class MilpResult:
    status: str  # "optimal", "time limit", "time limit (no solution)", "infeasible", ...
    feasible: bool
    objective: float | None  # the solved objective (mean BJ SD, or mean RTJ SD in stage 1)
    mean_bj_sd: float | None
    mean_rtj_sd: float | None
    threshold: float | None  # the RTJ threshold of the reported schedule (None: no RTJs)
    threshold_requested: float | None
    threshold_lower: float | None  # largest threshold found infeasible by the search
    threshold_proven: bool  # every "infeasible" verdict of the search was proven by HiGHS
    gap: float | None  # HiGHS MIP relative gap of the reported solve
    solve_seconds: float  # all solves, search included
    solves: int
    binaries: int  # binary variables (fixed ones excluded)
    columns: int
    rows: int
    mode: str = "threshold"  # or "lexicographic"
    jobs: list[JobSchedule] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)  # one entry per solve
    values: list[float] | None = field(default=None, repr=False)  # column values (a start)

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in (
            "status", "feasible", "objective", "mean_bj_sd", "mean_rtj_sd", "threshold",
            "threshold_requested", "threshold_lower", "threshold_proven", "gap",
            "solve_seconds", "solves", "binaries", "columns", "rows", "mode")}
        out["jobs"] = [vars(j).copy() for j in self.jobs]
        for j in out["jobs"]:
            j["pieces"] = [list(p) for p in j["pieces"]]
        out["log"] = self.log
        return out


@dataclass
class SolveOptions:
    time_limit: float = 60.0  # seconds per HiGHS solve
    seed: int = 0  # HiGHS random_seed
    threads: int = 1
    mip_rel_gap: float = 1e-7
    mip_abs_gap: float = 1e-7
    verbose: bool = False


# ----------------------------------------------------------------------------- the model


class _Lp:
    """Columns and rows collected in Python, passed to HiGHS in one call."""

    def __init__(self) -> None:
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.names: list[str] = []
        self.row_lb: list[float] = []
        self.row_ub: list[float] = []
        self.row_start: list[int] = [0]
        self.row_index: list[int] = []
        self.row_value: list[float] = []
        self.offset = 0.0

    def col(self, name: str, lb: float, ub: float, integer: bool = False) -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.cost.append(0.0)
        self.integer.append(integer)
        self.names.append(name)
        return len(self.lb) - 1

    def row(self, terms: dict[int, float], lb: float = -_INF, ub: float = _INF) -> int:
        for k, v in terms.items():
            if v != 0.0:
                self.row_index.append(k)
                self.row_value.append(v)
        self.row_start.append(len(self.row_index))
        self.row_lb.append(lb)
        self.row_ub.append(ub)
        return len(self.row_lb) - 1

    def highs_lp(self, lb: Sequence[float], ub: Sequence[float], integer: bool) -> Any:
        lp = highspy.HighsLp()
        lp.num_col_ = len(self.lb)
        lp.num_row_ = len(self.row_lb)
        lp.col_cost_ = np.array(self.cost, dtype=np.float64)
        lp.col_lower_ = np.array(lb, dtype=np.float64)
        lp.col_upper_ = np.array(ub, dtype=np.float64)
        lp.row_lower_ = np.array(self.row_lb, dtype=np.float64)
        lp.row_upper_ = np.array(self.row_ub, dtype=np.float64)
        lp.offset_ = self.offset
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_ = lp.num_col_
        lp.a_matrix_.num_row_ = lp.num_row_
        lp.a_matrix_.start_ = np.array(self.row_start, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(self.row_index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(self.row_value, dtype=np.float64)
        if integer and any(self.integer):
            kind = highspy.HighsVarType
            lp.integrality_ = [kind.kInteger if i else kind.kContinuous for i in self.integer]
        return lp


@dataclass
class _Built:
    """The model and where each variable lives."""

    lp: _Lp
    unit: float  # seconds per model time unit
    x: list[dict[int, int]]  # job -> {block index: column}
    x2: dict[int, dict[int, int]]  # BJ -> {block: column} of piece 2 (resume="any")
    p: dict[int, int]  # preemptable BJ -> column
    w: dict[int, int]
    s: dict[tuple[int, int], int]  # (job, piece) -> column
    e: dict[tuple[int, int], int]
    threshold_row: int | None
    bj_terms: dict[int, float]  # column -> coefficient of the mean BJ slowdown
    bj_offset: float
    rtj_terms: dict[int, float]
    rtj_offset: float

    @property
    def binaries(self) -> int:
        return sum(1 for k, i in enumerate(self.lp.integer) if i and self.lp.lb[k] < self.lp.ub[k])


def build(instance: Instance, threshold: float | None) -> _Built:
    """The MILP of docs/milp.md; objective mean BJ SD; threshold None = no eq. 37 row.

    Times inside the model are in units of the longest runtime (`_Built.unit` seconds), so
    the coefficients stay near 1 whatever the trace's scale."""
    lp = _Lp()
    jobs = instance.jobs
    unit = max(j.runtime for j in jobs)
    H = instance.horizon / unit
    n = len(jobs)
    x: list[dict[int, int]] = []
    x2: dict[int, dict[int, int]] = {}
    p: dict[int, int] = {}
    w: dict[int, int] = {}
    s: dict[tuple[int, int], int] = {}
    e: dict[tuple[int, int], int] = {}
    pieces: list[list[int]] = []
    for i, job in enumerate(jobs):
        submit, rt = job.submit / unit, job.runtime / unit
        # assignment (eqs. 45-48, 55): exactly one block of the job's partition size
        cols = {b: lp.col(f"x[{job.id},{instance.cluster.block_name(b)}]", 0.0, 1.0, True)
                for b in instance.blocks[i]}
        if len(cols) == 1:
            only = next(iter(cols.values()))
            lp.lb[only] = 1.0
        x.append(cols)
        lp.row(dict.fromkeys(cols.values(), 1.0), 1.0, 1.0)
        s[i, 0] = lp.col(f"s[{job.id},1]", submit, H)  # eq. 27 as a bound
        e[i, 0] = lp.col(f"e[{job.id},1]", submit, H)
        if not instance.preemptable[i]:
            lp.row({e[i, 0]: 1.0, s[i, 0]: -1.0}, rt, rt)  # eqs. 40-41
            pieces.append([0])
            continue
        c, f = instance.overhead[i] / unit, instance.min_fraction
        p[i] = lp.col(f"p[{job.id}]", 0.0, 1.0, True)
        w[i] = lp.col(f"w[{job.id}]", 0.0, rt)
        s[i, 1] = lp.col(f"s[{job.id},2]", submit, H)
        e[i, 1] = lp.col(f"e[{job.id},2]", submit, H)
        # eq. 51 linearised: p = 0 -> w = rt; p = 1 -> f rt <= w <= (1 - f) rt
        lp.row({w[i]: 1.0, p[i]: f * rt}, -_INF, rt)
        lp.row({w[i]: 1.0, p[i]: (1.0 - f) * rt}, rt, _INF)
        # piece lengths with the JIT overhead on both pieces (eqs. 32-33, 42-44, 34)
        lp.row({e[i, 0]: 1.0, s[i, 0]: -1.0, w[i]: -1.0, p[i]: -c}, 0.0, 0.0)
        lp.row({e[i, 1]: 1.0, s[i, 1]: -1.0, w[i]: 1.0, p[i]: -c}, rt, rt)
        # piece 2 after piece 1; glued to it (zero length) when there is no preemption
        lp.row({s[i, 1]: 1.0, e[i, 0]: -1.0}, 0.0, _INF)
        lp.row({s[i, 1]: 1.0, e[i, 0]: -1.0, p[i]: -H}, -_INF, 0.0)
        pieces.append([0, 1])
        if instance.resume == "any" and len(cols) > 1:
            # piece 2 chooses its own block of the job's size ...
            x2[i] = {b: lp.col(f"x2[{job.id},{instance.cluster.block_name(b)}]", 0.0, 1.0,
                               True) for b in instance.blocks[i]}
            lp.row(dict.fromkeys(x2[i].values(), 1.0), 1.0, 1.0)
            # ... and, when there is no preemption (piece 2 empty, every disjunction of it
            # relaxed), takes piece 1's: x2 >= x - p (both sum to 1, so x2 = x if p = 0)
            for b in instance.blocks[i]:
                lp.row({x2[i][b]: 1.0, x[i][b]: -1.0, p[i]: 1.0}, 0.0, _INF)

    def block_vars(i: int, a: int) -> int:
        """Which block choice piece a of job i uses: 0 = x, 1 = x2 (its own)."""
        return 1 if a == 1 and i in x2 else 0

    def block_cols(i: int, v: int) -> dict[int, int]:
        return x2[i] if v == 1 else x[i]

    # non-overlap of pieces whose blocks share a resource (eqs. 38-44, 49, 50)
    masks = instance.cluster.masks
    for i in range(n):
        for k in range(i + 1, n):
            some, every = instance.may_conflict(i, k)
            if not some:
                continue
            # one overlap indicator per pair of block choices the pieces use (one pair
            # under resume="same"; piece 2's own x2 adds pairs under "any")
            o: dict[tuple[int, int], int] = {}
            if not every:
                for vi in sorted({block_vars(i, a) for a in pieces[i]}):
                    for vk in sorted({block_vars(k, c) for c in pieces[k]}):
                        tag = "" if vi == vk == 0 else f"{vi + 1}{vk + 1}"
                        col_o = lp.col(f"o{tag}[{jobs[i].id},{jobs[k].id}]", 0.0, 1.0, True)
                        for bit in _shared_bits(instance, i, k):
                            row = {col_o: 1.0}
                            for b, col in block_cols(i, vi).items():
                                if masks[b] >> bit & 1:
                                    row[col] = -1.0
                            for b, col in block_cols(k, vk).items():
                                if masks[b] >> bit & 1:
                                    row[col] = -1.0
                            lp.row(row, -1.0, _INF)
                        o[vi, vk] = col_o
            y: dict[tuple[int, int], int] = {}
            for a in pieces[i]:
                for c in pieces[k]:
                    y[a, c] = lp.col(f"y[{jobs[i].id}.{a + 1},{jobs[k].id}.{c + 1}]",
                                     0.0, 1.0, True)
                    # the H (1 - o) of the right-hand side, moved left
                    terms = {} if every else {o[block_vars(i, a), block_vars(k, c)]: H}
                    slack = 0.0 if every else H
                    if a == 1:
                        terms[p[i]] = H  # H (1 - p_i): only a real piece 2 counts
                        slack += H
                    if c == 1:
                        terms[p[k]] = H
                        slack += H
                    # y = 1: piece a of i ends before piece c of k starts; y = 0: after
                    r1 = {e[i, a]: 1.0, s[k, c]: -1.0, y[a, c]: H}
                    r2 = {e[k, c]: 1.0, s[i, a]: -1.0, y[a, c]: -H}
                    for col, v in terms.items():
                        r1[col] = r1.get(col, 0.0) + v
                        r2[col] = r2.get(col, 0.0) + v
                    lp.row(r1, -_INF, H + slack)
                    lp.row(r2, -_INF, slack)
            # valid cuts: the pieces of one job keep their order relative to the other's
            # (y read as "starts earlier" satisfies them for any blocks: docs/milp.md)
            if (1, 0) in y:
                lp.row({y[1, 0]: 1.0, y[0, 0]: -1.0}, -_INF, 0.0)
            if (0, 1) in y:
                lp.row({y[0, 1]: 1.0, y[0, 0]: -1.0}, 0.0, _INF)
            if (1, 1) in y:
                lp.row({y[1, 1]: 1.0, y[0, 1]: -1.0}, -_INF, 0.0)
                lp.row({y[1, 1]: 1.0, y[1, 0]: -1.0}, 0.0, _INF)

    _single_machine_cuts(instance, lp, [e[i, pieces[i][-1]] for i in range(n)], unit)
    _area_cuts(instance, lp, [e[i, pieces[i][-1]] for i in range(n)], unit)

    # eq. 36: mean BJ slowdown; eq. 37 / Definition 3: mean RTJ slowdown
    batch, rtj = instance.batch, instance.realtime
    bj_terms: dict[int, float] = {}
    bj_offset = 0.0
    for i in batch:
        rt, submit = jobs[i].runtime / unit, jobs[i].submit / unit
        bj_terms[e[i, pieces[i][-1]]] = 1.0 / (rt * len(batch))
        bj_offset -= submit / (rt * len(batch))
    rtj_terms: dict[int, float] = {}
    rtj_offset = 0.0
    for i in rtj:
        rt, submit = jobs[i].runtime / unit, jobs[i].submit / unit
        rtj_terms[s[i, 0]] = 1.0 / (rt * len(rtj))
        rtj_offset += (rt - submit) / (rt * len(rtj))
    threshold_row = None
    if threshold is not None and rtj:
        threshold_row = lp.row(rtj_terms, -_INF, threshold - rtj_offset)
    built = _Built(lp, unit, x, x2, p, w, s, e, threshold_row, bj_terms, bj_offset,
                   rtj_terms, rtj_offset)
    set_objective(built, "bj")
    return built


MAX_CUT_CLIQUE = 10  # all subsets of a clique up to this size; beyond, nested prefixes


def _single_machine_cuts(instance: Instance, lp: _Lp, completion: list[int],
                         unit: float) -> None:
    """Valid cuts for jobs that pairwise conflict whatever their blocks, so that they run
    one at a time as on a single machine: for such a set S (Goemans' strengthening of
    Queyranne's parallel inequalities, valid for preemptive schedules with release dates),
        sum_{j in S} rt_j C_j >= sum_{j in S} rt_j (b_j + rt_j / 2) + sum_{j in S} rt_j^2 / 2
    with C_j the job's end and b_j its start when S alone runs in release order without
    preemption. Overheads only lengthen pieces, so they keep the cut valid (docs/milp.md).
    """
    n = len(instance.jobs)
    sure = [[k != i and instance.may_conflict(i, k)[1] for k in range(n)] for i in range(n)]
    subsets: set[tuple[int, ...]] = set()
    for clique in _maximal_cliques(sure):
        if len(clique) < 2:
            continue
        if len(clique) <= MAX_CUT_CLIQUE:
            for size in range(2, len(clique) + 1):
                subsets.update(itertools.combinations(clique, size))
        else:
            for key in (lambda j: instance.jobs[j].submit, lambda j: instance.jobs[j].runtime):
                order = sorted(clique, key=key)
                subsets.update(tuple(sorted(order[:k])) for k in range(2, len(order) + 1))
    for subset in sorted(subsets):
        members = sorted(subset, key=lambda j: (instance.jobs[j].submit, j))
        rhs, clock = 0.0, -math.inf
        for j in members:
            rt = instance.jobs[j].runtime / unit
            begin = max(clock, instance.jobs[j].submit / unit)
            clock = begin + rt
            rhs += rt * (begin + rt / 2.0) + rt * rt / 2.0
        lp.row({completion[j]: instance.jobs[j].runtime / unit for j in subset}, rhs, _INF)


MAX_AREA_SUBSETS_JOBS = 10  # all subsets up to this many jobs; beyond, nested prefixes


def _area_cuts(instance: Instance, lp: _Lp, completion: list[int], unit: float) -> None:
    """Valid cuts from the machine's capacity: at any time the jobs running hold at most
    all of its resources. With q_j the resources (midplanes) of job j's partition, a_j =
    q_j rt_j its area and Q the machine's resources, for every set S:
        sum_{j in S} a_j C_j >= g(S) + sum_{j in S} a_j rt_j / 2,
    g(S) = the least integral of t over the area of S processed at rate Q from the release
    dates (fluid, in release order). Valid for preemptive schedules; overheads only
    lengthen pieces."""
    jobs = instance.jobs
    n = len(jobs)
    cluster = instance.cluster
    capacity = float(cluster.full_mask.bit_count())
    q = [float(cluster.masks[instance.blocks[i][0]].bit_count()) for i in range(n)]
    if n <= MAX_AREA_SUBSETS_JOBS:
        subsets = [s for size in range(2, n + 1) for s in itertools.combinations(range(n), size)]
    else:
        subsets = []
        for key in (lambda j: jobs[j].submit, lambda j: jobs[j].runtime):
            order = sorted(range(n), key=key)
            subsets.extend(tuple(sorted(order[:k])) for k in range(2, n + 1))
    for subset in subsets:
        members = sorted(subset, key=lambda j: (jobs[j].submit, j))
        g, clock = 0.0, -math.inf
        for j in members:
            area = q[j] * jobs[j].runtime / unit
            begin = max(clock, jobs[j].submit / unit)
            clock = begin + area / capacity
            g += area * (begin + clock) / 2.0  # integral of t over [begin, clock] at rate Q
        rhs = g + sum(q[j] * (jobs[j].runtime / unit) ** 2 for j in subset) / 2.0
        lp.row({completion[j]: q[j] * jobs[j].runtime / unit for j in subset}, rhs, _INF)


def _maximal_cliques(adj: list[list[bool]]) -> list[list[int]]:
    """Bron-Kerbosch with pivoting, deterministic order."""
    out: list[list[int]] = []

    def rec(r: list[int], p: list[int], x: list[int]) -> None:
        if not p and not x:
            out.append(sorted(r))
            return
        pivot = max(p + x, key=lambda u: sum(adj[u][v] for v in p))
        for v in [v for v in p if not adj[pivot][v]]:
            rec(r + [v], [u for u in p if adj[v][u]], [u for u in x if adj[v][u]])
            p = [u for u in p if u != v]
            x = x + [v]

    rec([], list(range(len(adj))), [])
    return out


def _shared_bits(instance: Instance, i: int, k: int) -> list[int]:
    masks = instance.cluster.masks
    mi = 0
    for b in instance.blocks[i]:
        mi |= masks[b]
    mk = 0
    for b in instance.blocks[k]:
        mk |= masks[b]
    both, bits = mi & mk, []
    while both:
        low = both & -both
        bits.append(low.bit_length() - 1)
        both ^= low
    return bits


def set_objective(built: _Built, which: str) -> None:
    """"bj": mean BJ SD (eq. 36); "rtj": mean RTJ SD; "none": feasibility only."""
    lp = built.lp
    lp.cost = [0.0] * len(lp.lb)
    lp.offset = 0.0
    if which == "none":
        return
    terms, offset = ((built.bj_terms, built.bj_offset) if which == "bj"
                     else (built.rtj_terms, built.rtj_offset))
    for col, v in terms.items():
        lp.cost[col] = v
    lp.offset = offset


# ----------------------------------------------------------------------------- solving


_STATUS = {
    "kOptimal": "optimal",
    "kInfeasible": "infeasible",
    "kTimeLimit": "time limit",
    "kUnboundedOrInfeasible": "infeasible",
    "kInterrupt": "interrupted",
    "kMemoryLimit": "memory limit",
}


def _highs(options: SolveOptions, time_limit: float | None = None) -> Any:
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(options.verbose))
    h.setOptionValue("threads", int(options.threads))
    h.setOptionValue("random_seed", int(options.seed))
    h.setOptionValue("mip_rel_gap", float(options.mip_rel_gap))
    h.setOptionValue("mip_abs_gap", float(options.mip_abs_gap))
    limit = options.time_limit if time_limit is None else time_limit
    if limit > 0 and math.isfinite(limit):
        h.setOptionValue("time_limit", float(limit))
    return h


@dataclass
class _Run:
    status: str
    feasible: bool
    proven_infeasible: bool
    objective: float | None
    gap: float | None
    values: list[float] | None
    seconds: float


def _run_mip(built: _Built, options: SolveOptions, start: list[float] | None = None) -> _Run:
    started = time.perf_counter()
    h = _highs(options)
    lp = built.lp
    h.passModel(lp.highs_lp(lp.lb, lp.ub, integer=True))
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(start)
        h.setSolution(sol)
    h.run()
    status_name = h.getModelStatus().name
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    status = _STATUS.get(status_name, status_name.removeprefix("k").lower())
    if status == "time limit" and not has_solution:
        status = "time limit (no solution)"
    values = list(h.getSolution().col_value) if has_solution else None
    objective = info.objective_function_value if has_solution else None
    gap = float(info.mip_gap) if has_solution else None
    if values is not None:
        values, objective = _polish(built, values, options, objective)
    return _Run(status, values is not None, status == "infeasible", objective, gap, values,
                time.perf_counter() - started)


def _polish(built: _Built, values: list[float], options: SolveOptions,
            objective: float | None) -> tuple[list[float], float | None]:
    """Fix the binaries at their rounded values and re-solve the LP exactly: removes the
    big-M leakage of integrality tolerances. Then, with the objective held, start the RTJs
    as early as possible. Keeps the MIP values if the fixed LP is not solved (rare)."""
    lp = built.lp
    lb, ub = list(lp.lb), list(lp.ub)
    for k, is_int in enumerate(lp.integer):
        if is_int:
            lb[k] = ub[k] = float(round(values[k]))
    h = _highs(options)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.passModel(lp.highs_lp(lb, ub, integer=False))
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return values, objective
    best = list(h.getSolution().col_value)
    value = float(h.getInfo().objective_function_value)
    rtj_cols = list(built.rtj_terms)
    if not rtj_cols or any(lp.cost[k] != 0.0 for k in rtj_cols):
        return best, value
    # second LP: objective <= value (+ a hair), minimise the RTJ starts
    idx = [k for k, c in enumerate(lp.cost) if c != 0.0]
    if idx:
        h.addRow(-_INF, value - lp.offset + 1e-9 * max(1.0, abs(value)), len(idx),
                 np.array(idx, dtype=np.int32), np.array([lp.cost[k] for k in idx]))
    cost = np.zeros(len(lp.lb))
    for col, v in built.rtj_terms.items():
        cost[col] = v
    h.changeColsCost(len(lp.lb), np.arange(len(lp.lb), dtype=np.int32), cost)
    h.run()
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        best = list(h.getSolution().col_value)
    return best, value


def _rtj_mean(built: _Built, values: list[float]) -> float:
    return sum(v * values[k] for k, v in built.rtj_terms.items()) + built.rtj_offset


def _schedules(instance: Instance, built: _Built, values: list[float]) -> list[JobSchedule]:
    out = []
    for i, job in enumerate(instance.jobs):
        block = max(built.x[i], key=lambda b: values[built.x[i][b]])
        preempted = i in built.p and values[built.p[i]] > 0.5
        block2 = block
        if preempted and i in built.x2:
            block2 = max(built.x2[i], key=lambda b: values[built.x2[i][b]])
        u = built.unit
        s0, e0 = values[built.s[i, 0]] * u, values[built.e[i, 0]] * u
        if preempted:
            s1, e1 = values[built.s[i, 1]] * u, values[built.e[i, 1]] * u
            w = values[built.w[i]] * u
            pieces = [(s0, e0), (s1, e1)]
            work = [w, job.runtime - w]
            names = [block, block2]
        else:
            pieces, work, names = [(s0, e0)], [job.runtime], [block]
        end = pieces[-1][1]
        out.append(JobSchedule(job.id, job.realtime, job.nodes, job.submit, job.runtime,
                               instance.cluster.block_name(block), pieces, work, preempted,
                               (end - job.submit) / job.runtime,
                               [instance.cluster.block_name(b) for b in names]))
    return out


def _means(jobs: list[JobSchedule]) -> tuple[float | None, float | None]:
    bj = [j.slowdown for j in jobs if not j.realtime]
    rt = [j.slowdown for j in jobs if j.realtime]
    return (sum(bj) / len(bj) if bj else None, sum(rt) / len(rt) if rt else None)


def _result(instance: Instance, built: _Built, run: _Run, threshold: float | None,
            mode: str = "threshold") -> MilpResult:
    jobs = _schedules(instance, built, run.values) if run.values is not None else []
    bj, rt = _means(jobs) if jobs else (None, None)
    lp = built.lp
    return MilpResult(
        status=run.status, feasible=run.feasible, objective=run.objective, mean_bj_sd=bj,
        mean_rtj_sd=rt, threshold=threshold if instance.realtime else None,
        threshold_requested=threshold if instance.realtime else None, threshold_lower=None,
        threshold_proven=True, gap=run.gap, solve_seconds=run.seconds, solves=1,
        binaries=built.binaries, columns=len(lp.lb), rows=len(lp.row_lb), mode=mode,
        jobs=jobs, log=[_log_entry(run, threshold, mode)], values=run.values)


def _log_entry(run: _Run, threshold: float | None, stage: str) -> dict[str, Any]:
    return {"stage": stage, "threshold": threshold, "status": run.status,
            "objective": run.objective, "gap": run.gap, "seconds": round(run.seconds, 3)}


def solve_at(instance: Instance, threshold: float | None,
             options: SolveOptions | None = None, *,
             start: list[float] | None = None) -> MilpResult:
    """One solve at a fixed RTJ threshold (None: no RTJ constraint); `start` is a known
    solution (column values of the same model) handed to HiGHS."""
    options = options or SolveOptions()
    built = build(instance, threshold)
    return _result(instance, built, _run_mip(built, options, start), threshold)


def solve(
    instance: Instance,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    options: SolveOptions | None = None,
    lexicographic: bool = False,
) -> MilpResult:
    """Solve at `threshold`; if infeasible, search upward (§5.1) for the smallest feasible
    threshold to `tolerance`, then solve there. With `lexicographic`, minimise the mean
    RTJ SD first, then the mean BJ SD subject to it.

    The search keeps lo (infeasible) < hi (feasible): an upper bound by doubling, then
    bisection until hi - lo <= tolerance. Each probe is a feasibility solve (no objective,
    so HiGHS stops at the first schedule); a feasible probe moves hi down to the mean RTJ
    slowdown its schedule achieves (at most the probed threshold). A probe that ends at the
    time limit without a schedule counts as infeasible but leaves `threshold_proven` false.
    """
    options = options or SolveOptions()
    if lexicographic:
        return _lexicographic(instance, options)
    if not instance.realtime:
        return solve_at(instance, None, options)
    if tolerance <= 0:
        raise MilpError(f"the threshold tolerance must be > 0, got {tolerance:g}")
    first = solve_at(instance, threshold, options)
    if first.feasible:
        return first
    seconds, log = first.solve_seconds, list(first.log)
    lo, proven = threshold, first.status == "infeasible"
    cap = instance.max_threshold()
    built = build(instance, None)
    set_objective(built, "none")
    start: list[float] | None = None
    hi = max(2.0 * threshold, 1.0)
    while True:  # doubling
        hi = min(hi, cap)
        found = _probe(built, hi, options, log)
        seconds += found[1]
        if found[0] is not None:
            hi, start = min(hi, _rtj_mean(built, found[0]) + 1e-9), found[0]
            break
        if hi >= cap:
            break  # a time limit without any schedule even where every schedule fits
        lo, proven = hi, proven and log[-1]["status"] == "infeasible"
        hi *= 2.0
    if start is None:
        first.status, first.threshold_proven = "time limit (no solution)", False
        first.solve_seconds, first.solves, first.log = seconds, len(log), log
        return first
    while hi - lo > tolerance:  # bisection
        mid = 0.5 * (lo + hi)
        found = _probe(built, mid, options, log)
        seconds += found[1]
        if found[0] is not None:
            hi, start = min(mid, _rtj_mean(built, found[0]) + 1e-9), found[0]
        else:
            lo, proven = mid, proven and log[-1]["status"] == "infeasible"
    out = solve_at(instance, hi, options, start=start)
    out.threshold_requested = threshold
    out.threshold_lower = lo
    out.threshold_proven = proven
    out.solve_seconds = seconds + out.solve_seconds
    out.log = log + out.log
    out.solves = len(out.log)
    return out


def _probe(built: _Built, threshold: float, options: SolveOptions,
           log: list[dict[str, Any]]) -> tuple[list[float] | None, float]:
    """Is there a schedule with mean RTJ SD <= threshold? Its column values, or None."""
    assert built.threshold_row is None
    lp = built.lp
    row = lp.row(built.rtj_terms, -_INF, threshold - built.rtj_offset)
    try:
        run = _run_mip(built, options)
    finally:  # drop the row again: the model is reused for the next probe
        del lp.row_lb[row], lp.row_ub[row]
        lp.row_start.pop()
        del lp.row_index[lp.row_start[-1]:], lp.row_value[lp.row_start[-1]:]
    entry = _log_entry(run, threshold, "probe")
    if run.values is not None:
        entry["objective"] = _rtj_mean(built, run.values)  # the probe's mean RTJ SD
    log.append(entry)
    return run.values, run.seconds


def _lexicographic(instance: Instance, options: SolveOptions) -> MilpResult:
    if not instance.realtime:
        out = solve_at(instance, None, options)
        out.mode = "lexicographic"
        return out
    built = build(instance, None)
    set_objective(built, "rtj")
    first = _run_mip(built, options)
    if first.values is None or not instance.batch:
        out = _result(instance, built, first, None, "lexicographic")
        out.log = [_log_entry(first, None, "lexicographic: min RTJ SD")]
        if first.values is not None:
            out.threshold = _rtj_mean(built, first.values)
        return out
    assert first.objective is not None
    cap = _rtj_mean(built, first.values) + LEXICOGRAPHIC_SLACK
    built2 = build(instance, cap)
    second = _run_mip(built2, options, first.values)
    out = _result(instance, built2, second, cap, "lexicographic")
    if first.status != "optimal" and out.feasible:
        out.status = f"stage 1 {first.status}, stage 2 {out.status}"
        out.gap = first.gap
    out.solve_seconds = first.seconds + second.seconds
    out.solves = 2
    out.log = [_log_entry(first, None, "lexicographic: min RTJ SD"),
               _log_entry(second, cap, "lexicographic: min BJ SD")]
    return out


# ----------------------------------------------------------------------------- checking


def check_schedule(instance: Instance, jobs: Sequence[JobSchedule], *,
                   threshold: float | None = None, eps: float = 1e-6) -> list[str]:
    """Every rule of the model, checked on a reported schedule independently of the MILP;
    returns the violations (empty when the schedule is valid). Times are compared to
    `eps` x the longest runtime (the model's time unit), slowdowns to `eps`."""
    problems: list[str] = []
    sd_eps = eps
    eps = eps * max(1.0, max(j.runtime for j in instance.jobs))
    cluster = instance.cluster
    by_id = {j.id: j for j in jobs}
    if sorted(by_id) != sorted(j.id for j in instance.jobs):
        return ["the schedule does not list every job exactly once"]
    placed = []
    for i, job in enumerate(instance.jobs):
        sch = by_id[job.id]
        names = sch.blocks or [sch.block] * len(sch.pieces)
        if len(sch.pieces) != (2 if sch.preempted else 1) or len(sch.work) != len(sch.pieces) \
                or len(names) != len(sch.pieces):
            problems.append(f"job {job.id} has {len(sch.pieces)} piece(s)")
            continue
        piece_blocks = [cluster.block_index(name) for name in names]
        if names[0] != sch.block:
            problems.append(f"job {job.id} reports block {sch.block}, piece 1 on {names[0]}")
        for name, b in zip(names, piece_blocks, strict=True):
            if b not in instance.blocks[i]:
                problems.append(f"job {job.id} on {name}, not a block of its size")
        if instance.resume == "same" and len(set(piece_blocks)) > 1:
            problems.append(f"job {job.id} resumes on {names[-1]}, not on {names[0]}")
        if sch.preempted and not instance.preemptable[i]:
            problems.append(f"job {job.id} is preempted but may not be")
        if abs(sum(sch.work) - job.runtime) > eps:
            problems.append(f"job {job.id} does {sum(sch.work)} s of work, not {job.runtime}")
        c = instance.overhead[i] if sch.preempted else 0.0
        for k, ((start, end), work, b) in enumerate(zip(sch.pieces, sch.work, piece_blocks,
                                                         strict=True)):
            if sch.preempted and work < instance.min_fraction * job.runtime - eps:
                problems.append(f"job {job.id} piece {k + 1} does less than the minimum work")
            if abs(end - start - work - c) > eps:
                problems.append(f"job {job.id} piece {k + 1} lasts {end - start}, "
                                f"not work {work} + overhead {c}")
            placed.append((start, end, cluster.masks[b], job.id))
        if sch.pieces[0][0] < job.submit - eps:
            problems.append(f"job {job.id} starts before its submission")
        if sch.preempted and sch.pieces[1][0] < sch.pieces[0][1] - eps:
            problems.append(f"job {job.id} resumes before its first piece ends")
        sd = (sch.pieces[-1][1] - job.submit) / job.runtime
        if abs(sd - sch.slowdown) > sd_eps:
            problems.append(f"job {job.id} reports slowdown {sch.slowdown}, not {sd}")
    for a in range(len(placed)):
        for c in range(a + 1, len(placed)):
            s1, e1, m1, j1 = placed[a]
            s2, e2, m2, j2 = placed[c]
            if j1 != j2 and m1 & m2 and min(e1, e2) - max(s1, s2) > eps:
                problems.append(f"jobs {j1} and {j2} overlap on shared midplanes")
    if threshold is not None:
        rt = [by_id[j.id].slowdown for j in instance.jobs if j.realtime]
        if rt and sum(rt) / len(rt) > threshold + sd_eps:
            problems.append(f"mean RTJ slowdown {sum(rt) / len(rt)} exceeds {threshold}")
    return problems
