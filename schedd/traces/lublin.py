"""The Lublin–Feitelson workload model as the LOS paper parameterises it, written as CWF.

Kumar, Shae and Jamjoom, "Scheduling Batch and Heterogeneous Jobs with Runtime Elasticity
in a Parallel Processing Environment", §IV-D: sizes from a two-stage uniform in units of 32
processors, hyper-Gamma log-runtimes correlated with size (Table I), the Lublin arrival
process (Table II) with beta_arr tuned to a target load, dedicated jobs with requested start
times (P_D) and elastic control commands (P_E extensions, P_R reductions). The model's
mechanics follow Lublin and Feitelson's reference implementation (m_lublin99). Every choice
the paper leaves open is listed in docs/workloads.md.

Each part of a job is drawn from its own random stream, so changing one parameter (say
P_D, or beta_arr while searching for a load) leaves everything else about the jobs alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .swf import COLUMN_NAMES, EccCommand, Trace, TraceHeader, absent_column

# Table I: runtimes. log(runtime) ~ hyper-Gamma(A1, B1, A2, B2, p), p = PA * size + PB.
A1, B1, A2, B2 = 4.2, 0.94, 312.0, 0.03
PA, PB = -0.0054, 0.78
# Table II: arrivals. log(inter-arrival) ~ Gamma(ALPHA_ARR * ARAR, beta_arr); the share of
# arrivals in each half hour of the day follows Gamma(ALPHA_NUM, BETA_NUM).
ALPHA_ARR, ALPHA_NUM, BETA_NUM, ARAR = 13.2303, 15.1737, 0.9631, 1.0225
BETA_ARR_RANGE = (0.4101, 0.6101)  # the range the paper sweeps
# §IV-D's elastic control commands, for the elastic experiments (Fig. 11) only: a batch
# workload carries none unless asked (`--ecc`), so that policies with and without an ECC
# processor see the same jobs.
PAPER_P_EXTEND, PAPER_P_REDUCE = 0.2, 0.1
# Truncations of m_lublin99: log-runtimes above 12 (~45 h) and log inter-arrival times
# above 13 (~5 days) are drawn again.
MAX_LOG_RUNTIME = 12.0
MAX_LOG_INTERARRIVAL = 13.0
# The daily cycle of m_lublin99: 48 half-hour buckets, the fitted day starting at bucket 11.
BUCKETS = 48
BUCKET_SECONDS = 86400 // BUCKETS
CYCLIC_DAY_START = 11
# Where the beta_arr search looks, and how close it tries to get.
BETA_SEARCH = (0.01, 2.0)
LOAD_RTOL = 1e-4
SEARCH_STEPS = 60

SIZE_RULES = ("round", "floor-large")
_STREAMS = ("sizes", "runtimes", "arrivals", "estimates", "dedicated", "eccs")


@dataclass(frozen=True)
class LublinParams:
    """Generator parameters; the defaults are the paper's batch workload (no elastic control
    commands: P_E = P_R = 0, see docs/workloads.md)."""

    jobs: int = 500
    procs: int = 320  # M, processors of the machine
    unit: int = 32  # sizes are multiples of this (a Blue Gene/P node card)
    p_small: float = 0.5  # P_S
    p_dedicated: float = 0.0  # P_D
    p_extend: float = 0.0  # P_E (the paper's elastic runs: PAPER_P_EXTEND)
    p_reduce: float = 0.0  # P_R (the paper's elastic runs: PAPER_P_REDUCE)
    load: float | None = 0.9  # target load; ignored when beta_arr is given
    beta_arr: float | None = None
    lead: float = 3600.0  # mean seconds from a dedicated job's submission to its start
    ecc_mean: float = 0.25  # mean ECC amount as a fraction of the job's requested time
    overestimate: float = 1.0  # requested time = runtime x U(1, overestimate)
    # "round": round(U[1, 3]) and round(U[4, M/K]) units, the text's reading; "floor-large":
    # large jobs floor(U[4, M/K]) (never the full machine), which fits the paper's reported
    # mean sizes better (docs/workloads.md, choice 4)
    size_rule: str = "round"

    def check(self) -> None:
        """Raise ValueError (one sentence) for parameters the model cannot use."""
        if self.jobs < 1:
            raise ValueError(f"the number of jobs must be at least 1, got {self.jobs}")
        if self.unit < 1 or self.procs < 1 or self.procs % self.unit:
            raise ValueError(
                f"the machine size ({self.procs}) must be a positive multiple of the unit "
                f"({self.unit})")
        if self.procs // self.unit < 4:
            raise ValueError(
                f"large jobs need at least 4 units of {self.unit} processors, but the machine "
                f"has only {self.procs // self.unit}")
        for name, p in (("P_S", self.p_small), ("P_D", self.p_dedicated),
                        ("P_E", self.p_extend), ("P_R", self.p_reduce)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p:g}")
        if self.p_extend + self.p_reduce > 1.0:
            raise ValueError(
                f"P_E + P_R must be at most 1 (a job gets at most one command), got "
                f"{self.p_extend + self.p_reduce:g}")
        if self.size_rule not in SIZE_RULES:
            raise ValueError(f"the size rule must be one of {', '.join(SIZE_RULES)}, got "
                             f"{self.size_rule!r}")
        if self.beta_arr is None and (self.load is None or not self.load > 0):
            raise ValueError(f"the target load must be positive, got {self.load}")
        if self.beta_arr is not None and not self.beta_arr > 0:
            raise ValueError(f"beta_arr must be positive, got {self.beta_arr:g}")
        for name, value, low in (("the mean lead time", self.lead, 0.0),
                                 ("the mean ECC amount", self.ecc_mean, 0.0),
                                 ("the overestimate factor", self.overestimate, 1.0)):
            if not low <= value < math.inf:
                raise ValueError(f"{name} must be a finite number >= {low:g}, got {value:g}")


@dataclass(frozen=True)
class LublinWorkload:
    trace: Trace
    beta_arr: float
    load: float  # achieved, by offered_load
    target: float | None  # the requested load, None when beta_arr was given


def generate(params: LublinParams, seed: int = 0) -> LublinWorkload:
    """A seeded, reproducible Lublin–Feitelson CWF workload."""
    params.check()
    rngs = dict(zip(_STREAMS, (np.random.default_rng(s)
                               for s in np.random.SeedSequence(seed).spawn(len(_STREAMS))),
                    strict=True))
    n = params.jobs
    sizes = job_sizes(rngs["sizes"], n, params.p_small, params.procs // params.unit,
                      params.size_rule) * params.unit
    runtimes = job_runtimes(rngs["runtimes"], sizes)
    arrivals = Arrivals(rngs["arrivals"], n)
    if params.beta_arr is not None:
        beta = params.beta_arr
    else:
        assert params.load is not None
        beta = solve_beta_arr(arrivals, sizes, runtimes, params.procs, params.load)
    submits = arrivals.times(beta)
    req_times = requested_times(rngs["estimates"], runtimes, params.overestimate)
    req_starts = dedicated_starts(rngs["dedicated"], submits, params.p_dedicated, params.lead)
    eccs = elastic_commands(rngs["eccs"], submits, req_starts, req_times,
                            params.p_extend, params.p_reduce, params.ecc_mean)
    load = offered_load(sizes, runtimes, submits, params.procs)
    target = None if params.beta_arr is not None else params.load
    header = _header(params, seed, beta, load, target, len(eccs))
    trace = _trace(header, submits, sizes, runtimes, req_times, req_starts, eccs)
    return LublinWorkload(trace=trace, beta_arr=beta, load=load, target=target)


# ----------------------------------------------------------------------------- jobs


def job_sizes(rng: np.random.Generator, n: int, p_small: float, units: int,
              rule: str = "round") -> np.ndarray:
    """Sizes in units: small round(U[1, 3]) with probability P_S, else round(U[4, units])
    (rule "floor-large": floor(U[4, units]) for the large ones)."""
    small = rng.random(n) < p_small
    u = rng.random(n)
    low = np.where(small, 1.0, 4.0)
    high = np.where(small, 3.0, float(units))
    # round half up like m_lublin99's (int)(x + 0.5); the end points get half weight
    half = np.where(small | (rule == "round"), 0.5, 0.0)
    return np.floor(low + u * (high - low) + half).astype(np.int64)


def job_runtimes(rng: np.random.Generator, sizes: np.ndarray) -> np.ndarray:
    """Whole seconds exp(hyper-Gamma); p, the weight of the short Gamma, falls with size."""
    p = np.clip(PA * sizes + PB, 0.0, 1.0)
    log_rt = np.empty(len(sizes))
    todo = np.arange(len(sizes))
    while len(todo):  # m_lublin99 draws both the branch and the value again when too long
        short = rng.random(len(todo)) < p[todo]
        draw = np.where(short, rng.gamma(A1, B1, len(todo)), rng.gamma(A2, B2, len(todo)))
        ok = draw <= MAX_LOG_RUNTIME
        log_rt[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return np.maximum(np.floor(np.exp(log_rt)), 1.0)


def requested_times(rng: np.random.Generator, runtimes: np.ndarray, factor: float
                    ) -> np.ndarray:
    """The user's estimate: the runtime (factor 1), else runtime x U[1, factor] rounded up."""
    u = rng.random(len(runtimes))
    if factor == 1.0:
        return runtimes.copy()
    return np.ceil(runtimes * (1.0 + u * (factor - 1.0)))


def dedicated_starts(rng: np.random.Generator, submits: np.ndarray, p_dedicated: float,
                     lead: float) -> np.ndarray:
    """Requested start times: submit + max(1, round(Exp(lead))) with probability P_D, else -1."""
    dedicated = rng.random(len(submits)) < p_dedicated
    ahead = np.maximum(np.round(rng.exponential(1.0, len(submits)) * lead), 1.0)
    return np.where(dedicated, submits + ahead, -1.0)


def elastic_commands(rng: np.random.Generator, submits: np.ndarray, req_starts: np.ndarray,
                     req_times: np.ndarray, p_extend: float, p_reduce: float,
                     ecc_mean: float) -> list[EccCommand]:
    """At most one ET (probability P_E) or RT (P_R) per job, sorted by (time, job id).

    The amount is Exp(ecc_mean x requested time) rounded up to whole seconds; a reduction
    leaves at least one second. The command comes uniformly between one second after the
    submission and the earliest time the job could end, so it may find the job queued or
    running, as the paper allows.
    """
    n = len(submits)
    u = rng.random(n)
    amount = np.ceil(rng.exponential(1.0, n) * ecc_mean * req_times)
    when = rng.random(n)
    kind = np.where(u < p_extend, 1, np.where(u < p_extend + p_reduce, 2, 0))
    amount = np.where(kind == 2, np.minimum(amount, req_times - 1.0), amount)
    amount = np.maximum(amount, 1.0)
    kind[(kind == 2) & (req_times < 2.0)] = 0  # nothing left to take from a 1-second job
    earliest_end = np.maximum(submits, req_starts) + req_times
    times = submits + 1.0 + np.floor(when * np.maximum(earliest_end - submits - 1.0, 0.0))
    chosen = np.flatnonzero(kind)
    order = chosen[np.lexsort((chosen, times[chosen]))]
    return [EccCommand(job_id=int(i) + 1, time=float(times[i]),
                       kind="ET" if kind[i] == 1 else "RT", amount=float(amount[i]), line=0)
            for i in order]


# ----------------------------------------------------------------------------- arrivals


class Arrivals:
    """Lublin's arrival process with its random numbers fixed, so that arrival times are a
    continuous, non-decreasing function of beta_arr (what the load search needs).

    log(inter-arrival) ~ Gamma(ALPHA_ARR * ARAR, beta_arr) truncated at 13, drawn by
    inverting the CDF at fixed uniforms. exp(log) / 1800 are "points"; each half-hour bucket
    of the day costs its weight in points (the weights have mean 1), so busy buckets take
    many arrivals and quiet ones few, as in m_lublin99. The first bucket is midnight.
    """

    def __init__(self, rng: np.random.Generator, n: int):
        self.u = rng.random(n)
        self.x, self.cdf = _gamma_cdf_table(ALPHA_ARR * ARAR)
        self.weights = daily_weights(ALPHA_NUM, BETA_NUM)
        self.cum = np.cumsum(self.weights)

    def times(self, beta: float) -> np.ndarray:
        """Whole-second arrival times from midnight of day 0."""
        cap = np.interp(MAX_LOG_INTERARRIVAL / beta, self.x, self.cdf)
        log_gap = beta * np.interp(self.u * cap, self.cdf, self.x)
        points = np.cumsum(np.exp(log_gap) / BUCKET_SECONDS)
        day_points = self.cum[-1]
        days = np.floor(points / day_points)
        rest = points - days * day_points
        bucket = np.minimum(np.searchsorted(self.cum, rest, side="left"), BUCKETS - 1)
        before = self.cum[bucket] - self.weights[bucket]
        frac = np.clip((rest - before) / np.maximum(self.weights[bucket], 1e-300), 0.0, 1.0)
        return np.floor(days * 86400.0 + (bucket + frac) * BUCKET_SECONDS)


def daily_weights(alpha_num: float, beta_num: float) -> np.ndarray:
    """Arrival weight of each half hour (mean 1): the Gamma(alpha_num, beta_num) mass of
    [i - 0.5, i + 0.5] for i = 11..58, bucket (i - 1) mod 48, as in m_lublin99."""
    weights = np.empty(BUCKETS)
    for i in range(CYCLIC_DAY_START, CYCLIC_DAY_START + BUCKETS):
        x = np.linspace(i - 0.5, i + 0.5, 257)
        weights[(i - 1) % BUCKETS] = np.trapezoid(_gamma_pdf(x / beta_num, alpha_num),
                                                  x / beta_num)
    return weights / weights.mean()


def _gamma_pdf(x: np.ndarray, shape: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.exp((shape - 1.0) * np.log(x) - x - math.lgamma(shape))


def _gamma_cdf_table(shape: float, points: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """(x, CDF(x)) of Gamma(shape, 1) on a fine grid, CDF strictly increasing (for inversion).

    NumPy has no Gamma quantile function and the project does not depend on SciPy."""
    x = np.linspace(0.0, shape + 40.0 * math.sqrt(shape), points)
    pdf = _gamma_pdf(x, shape)
    cdf = np.concatenate(([0.0], np.cumsum((pdf[1:] + pdf[:-1]) * 0.5 * np.diff(x))))
    cdf /= cdf[-1]
    keep = np.concatenate(([True], np.diff(cdf) > 0))
    return x[keep], cdf[keep]


# ----------------------------------------------------------------------------- load


def offered_load(sizes: np.ndarray, runtimes: np.ndarray, submits: np.ndarray, procs: int
                 ) -> float:
    """The paper's Load: sum(size x runtime) / (M x duration), the duration being the last
    arrival time from the start of the workload (Lublin's definition)."""
    duration = max(float(submits.max()), 1.0)
    return float(np.dot(sizes.astype(np.float64), runtimes)) / (procs * duration)


def solve_beta_arr(arrivals: Arrivals, sizes: np.ndarray, runtimes: np.ndarray, procs: int,
                   target: float) -> float:
    """The beta_arr whose workload (same seed) has the target load, by bisection: with the
    random numbers fixed, the load falls as beta_arr grows."""

    def load(beta: float) -> float:
        return offered_load(sizes, runtimes, arrivals.times(beta), procs)

    lo, hi = BETA_SEARCH
    high_load, low_load = load(lo), load(hi)
    if not low_load <= target <= high_load:
        raise ValueError(
            f"a load of {target:g} is out of reach for {len(sizes)} "
            f"job{'s' if len(sizes) != 1 else ''}: beta_arr "
            f"can move it only between {low_load:.3g} and {high_load:.3g}")
    best = min((abs(high_load - target), lo), (abs(low_load - target), hi))
    for _ in range(SEARCH_STEPS):
        mid = 0.5 * (lo + hi)
        got = load(mid)
        best = min(best, (abs(got - target), mid))
        if abs(got - target) <= LOAD_RTOL * target:
            break
        if got > target:
            lo = mid
        else:
            hi = mid
    return best[1]


# ----------------------------------------------------------------------------- trace


def _trace(header: TraceHeader, submits: np.ndarray, sizes: np.ndarray, runtimes: np.ndarray,
           req_times: np.ndarray, req_starts: np.ndarray, eccs: list[EccCommand]) -> Trace:
    n = len(submits)
    given = {
        "job_id": np.arange(1, n + 1, dtype=np.int64),
        "submit": submits.astype(np.float64),
        "runtime": runtimes.astype(np.float64),
        "procs": sizes.astype(np.int64),
        "req_procs": sizes.astype(np.int64),
        "req_time": req_times.astype(np.float64),
        "status": np.ones(n, dtype=np.int64),
        "req_start": req_starts.astype(np.float64),
        "job_class": np.where(req_starts >= 0, "D", "B").astype("<U1"),
    }
    columns = {name: given.get(name, absent_column(name, n)) for name in COLUMN_NAMES}
    return Trace(path="<lublin>", header=header, columns=columns, eccs=eccs)


def _header(params: LublinParams, seed: int, beta: float, load: float,
            target: float | None, n_eccs: int) -> TraceHeader:
    aimed = "given beta_arr" if target is None else f"target {target:g}"
    lines = [
        "; Version: 2.2",
        "; Computer: Lublin-Feitelson model (schedd workload lublin), LOS paper Sec. IV-D",
        f"; MaxJobs: {params.jobs}",
        f"; MaxRecords: {params.jobs + n_eccs}",
        f"; MaxProcs: {params.procs}",
        f"; Note: seed {seed}, unit {params.unit}, P_S {params.p_small:g}, "
        f"P_D {params.p_dedicated:g}, P_E {params.p_extend:g}, P_R {params.p_reduce:g}, "
        f"lead {params.lead:g} s, ECC mean {params.ecc_mean:g}, "
        f"overestimate {params.overestimate:g}"
        + ("" if params.size_rule == "round" else f", sizes {params.size_rule}"),
        f"; Note: load {load:.4f} ({aimed}), beta_arr {beta:.6f}",
    ]
    return TraceHeader(max_procs=params.procs, lines=lines)
