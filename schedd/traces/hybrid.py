"""Hybrid on-demand / rigid / malleable workloads made from a real trace.

Fan, Lan, Rich, Allcock and Papka, "Hybrid Workload Scheduling on HPC Systems" (the hybrid
paper), §III-A and §IV-A/B: jobs are grouped into projects, each project submits one type of
job (10 % on-demand, 60 % rigid, the rest malleable); rigid jobs get a setup of 5–10 % of
their runtime, malleable jobs 0–5 % and a minimum size of 20 % of their requested size; the
on-demand jobs are split into four kinds of advance notice in the proportions of Table II.
Every choice the paper leaves open is listed in docs/workloads.md.

Each part of the marking draws from its own random stream derived from the seed, so the
five mixes W1..W5 of one seed share projects, types and setups and differ only in the
notices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .normalize import job_nodes
from .swf import Trace, TraceHeader

KINDS = ("none", "accurate", "early", "late")  # of on-demand jobs, as in Table II's columns
MIXES: dict[str, tuple[float, float, float, float]] = {  # Table II, in the order of KINDS
    "W1": (0.7, 0.1, 0.1, 0.1),
    "W2": (0.1, 0.7, 0.1, 0.1),
    "W3": (0.1, 0.1, 0.7, 0.1),
    "W4": (0.1, 0.1, 0.1, 0.7),
    "W5": (0.25, 0.25, 0.25, 0.25),
}
PROJECT_SOURCES = ("auto", "group", "user", "session")
CLASSES = {"ondemand": "O", "rigid": "B", "malleable": "M"}  # stats name -> field 22 letter
SIMULATE_FLAGS = "--ckpt daly --ckpt-cost hybrid --no-restart-read --daly-mtbf 50"
_STREAMS = ("types", "reassign", "setup", "kinds", "timing")


@dataclass(frozen=True)
class HybridParams:
    """How to mark a trace; the defaults are the paper's (docs/workloads.md)."""

    mix: str = "W5"  # a key of MIXES
    od_share: float = 0.1  # probability that a project is on-demand
    rigid_share: float = 0.6  # ... rigid; the rest are malleable
    min_fraction: float = 0.2  # malleable minimum size / requested size
    rigid_setup: tuple[float, float] = (0.05, 0.10)  # setup as a fraction of the runtime
    malleable_setup: tuple[float, float] = (0.0, 0.05)
    notice_lead: tuple[float, float] = (900.0, 1800.0)  # seconds from notice to estimate
    late_max: float = 1800.0  # a late job arrives up to this long after its estimate
    projects: str = "auto"  # one of PROJECT_SOURCES
    session_gap: float = 86400.0  # seconds that end a session (projects="session")
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mix not in MIXES:
            raise ValueError(f"the mix must be one of {', '.join(MIXES)}, got {self.mix!r}")
        for name, p in (("on-demand", self.od_share), ("rigid", self.rigid_share)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"the {name} share must be a probability in [0, 1], got {p:g}")
        if self.od_share + self.rigid_share > 1.0:
            raise ValueError(
                f"the on-demand and rigid shares must add up to at most 1, got "
                f"{self.od_share + self.rigid_share:g}")
        if not 0.0 < self.min_fraction <= 1.0:
            raise ValueError(
                f"the malleable minimum fraction must be in (0, 1], got {self.min_fraction:g}")
        for name, (low, high) in (("rigid", self.rigid_setup),
                                  ("malleable", self.malleable_setup)):
            if not 0.0 <= low <= high < 1.0:
                raise ValueError(
                    f"the {name} setup range must be fractions 0 <= low <= high < 1, got "
                    f"{low:g} to {high:g}")
        low, high = self.notice_lead
        if not (0.0 < low <= high and math.isfinite(high)):
            raise ValueError(
                f"the notice lead range must be seconds 0 < low <= high, got {low:g} to "
                f"{high:g}")
        if not (self.late_max >= 0.0 and math.isfinite(self.late_max)):
            raise ValueError(
                f"the late arrival limit must be a finite number of seconds >= 0, got "
                f"{self.late_max:g}")
        if self.projects not in PROJECT_SOURCES:
            raise ValueError(
                f"projects must be auto, group, user or session, got {self.projects!r}")
        if not (self.session_gap > 0.0 and math.isfinite(self.session_gap)):
            raise ValueError(
                f"the session gap must be a positive number of seconds, got "
                f"{self.session_gap:g}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"the seed must be a whole number >= 0, got {self.seed!r}")


def make_hybrid(trace: Trace, params: HybridParams) -> tuple[Trace, dict[str, Any]]:
    """The trace with every job marked on-demand (O), rigid (B) or malleable (M), and stats.

    Pure and deterministic: the same trace and params give the same columns. Every job line
    is kept; ECCs and all fields not listed in docs/workloads.md are unchanged.
    """
    rngs = dict(zip(_STREAMS, (np.random.default_rng(s) for s in
                               np.random.SeedSequence(params.seed).spawn(len(_STREAMS))),
                    strict=True))
    cols = trace.columns
    nodes = job_nodes(cols["req_procs"], cols["procs"])
    work = _uninterrupted_runtime(cols)
    walltime = np.where(cols["req_time"] > 0, cols["req_time"], work).astype(np.float64)
    order = np.lexsort((cols["job_id"], cols["submit"]))  # submission order, stable
    source = resolve_project_source(cols, params.projects)
    project = project_ids(cols, source, nodes, walltime, order, params.session_gap)

    letters = _project_classes(rngs["types"], int(project.max(initial=0)), params)[project - 1]
    single = (letters == "M") & (nodes == 1)
    reassign = np.where(rngs["reassign"].random(len(trace)) < 0.5, "B", "O")
    letters = np.where(single, reassign, letters).astype("<U1")

    setup = _setups(rngs["setup"], letters, work, params)
    notices = _notices(rngs["kinds"], rngs["timing"], letters, cols["submit"], nodes,
                       walltime, params)
    out = dict(cols)
    out["group"] = project
    out["job_class"] = letters
    out["runtime"] = np.where(work > 0, work - setup, work)
    out["setup"] = setup
    out["min_nodes"] = np.where(
        letters == "M", np.maximum(1, np.ceil(params.min_fraction * nodes)), -1
    ).astype(np.int64)
    out.update(notices.columns)
    stats = _stats(letters, nodes, work, project, source, notices, int(single.sum()))
    header = TraceHeader(max_nodes=trace.header.max_nodes, max_procs=trace.header.max_procs,
                         unix_start_time=trace.header.unix_start_time,
                         lines=list(trace.header.lines) + _header_notes(params, stats))
    return Trace(path=trace.path, header=header, columns=out, eccs=list(trace.eccs),
                 skipped=trace.skipped), stats


def _uninterrupted_runtime(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Runtime plus any setup the input already has, so marking a marked trace again
    starts from the same uninterrupted runtimes; non-positive runtimes stay as they are."""
    runtime = cols["runtime"].astype(np.float64)
    return np.where(runtime > 0, runtime + np.maximum(cols["setup"], 0.0), runtime)


# ----------------------------------------------------------------------------- projects


def resolve_project_source(cols: dict[str, np.ndarray], projects: str) -> str:
    """`auto` becomes group, else user, whichever has at least two known (>= 0) values,
    else session; any other choice is returned as it is."""
    if projects != "auto":
        return projects
    for name in ("group", "user"):
        values = cols[name]
        if len(np.unique(values[values >= 0])) >= 2:
            return name
    return "session"


def project_ids(cols: dict[str, np.ndarray], source: str, nodes: np.ndarray,
                walltime: np.ndarray, order: np.ndarray, session_gap: float) -> np.ndarray:
    """Project of every job, numbered 1.. in order of first submission.

    From field 12 or 13 (`source` user / group); jobs whose field is unknown (< 0), and
    every job when `source` is session, are grouped into sessions instead.
    """
    n = len(nodes)
    if source == "session":
        keys = session_labels(nodes, walltime, cols["submit"], order, session_gap)
    else:
        given = cols[source].astype(np.int64)
        unknown = given < 0
        keys = given.copy()
        if unknown.any():  # sessions of the unknown ones, numbered above every known id
            rank = np.empty(n, dtype=np.int64)
            rank[order] = np.arange(n)
            idx = np.flatnonzero(unknown)
            sub_order = np.argsort(rank[idx], kind="stable")
            labels = session_labels(nodes[idx], walltime[idx], cols["submit"][idx],
                                    sub_order, session_gap)
            keys[idx] = int(given.max()) + 1 + labels
    return _number_by_first_submission(keys, order)


def session_labels(nodes: np.ndarray, walltime: np.ndarray, submit: np.ndarray,
                   order: np.ndarray, gap: float) -> np.ndarray:
    """A label per job: jobs of one signature (nodes, requested time), each submitted less
    than `gap` seconds after the previous one of that signature, share a label.

    `order` lists the jobs in submission order; labels are arbitrary but deterministic.
    """
    n = len(nodes)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    by_signature = np.lexsort((rank, walltime, nodes))
    s_nodes, s_wall = nodes[by_signature], walltime[by_signature]
    s_submit = np.asarray(submit, dtype=np.float64)[by_signature]
    same = (s_nodes[1:] == s_nodes[:-1]) & (s_wall[1:] == s_wall[:-1])
    close = (s_submit[1:] - s_submit[:-1]) < gap
    starts = np.concatenate(([True], ~(same & close)))
    labels = np.empty(n, dtype=np.int64)
    labels[by_signature] = np.cumsum(starts) - 1
    return labels


def _number_by_first_submission(keys: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Replace arbitrary keys by 1, 2, ... in order of each key's first submission."""
    ids = np.empty(len(keys), dtype=np.int64)
    if not len(keys):
        return ids
    _, first, inverse = np.unique(keys[order], return_index=True, return_inverse=True)
    number = np.empty(len(first), dtype=np.int64)
    number[np.argsort(first)] = np.arange(1, len(first) + 1)
    ids[order] = number[inverse.ravel()]
    return ids


def _project_classes(rng: np.random.Generator, projects: int, params: HybridParams
                     ) -> np.ndarray:
    """Class letter of projects 1..P: on-demand, rigid or malleable, independently."""
    u = rng.random(projects)
    return np.where(u < params.od_share, "O",
                    np.where(u < params.od_share + params.rigid_share, "B", "M")).astype("<U1")


# ----------------------------------------------------------------------------- setup


def _setups(rng: np.random.Generator, letters: np.ndarray, work: np.ndarray,
            params: HybridParams) -> np.ndarray:
    """Whole seconds U(range) x runtime, rounded down so that some runtime is left;
    0 for on-demand jobs and jobs without a positive runtime."""
    u = rng.random(len(letters))
    low = np.select([letters == "B", letters == "M"],
                    [params.rigid_setup[0], params.malleable_setup[0]], 0.0)
    high = np.select([letters == "B", letters == "M"],
                     [params.rigid_setup[1], params.malleable_setup[1]], 0.0)
    setup = np.floor((low + u * (high - low)) * np.maximum(work, 0.0))
    return np.where(work > 0, setup, 0.0)


# ----------------------------------------------------------------------------- notices


@dataclass(frozen=True)
class _Notices:
    columns: dict[str, np.ndarray]  # fields 27-30 of every job
    counts: dict[str, int]  # on-demand jobs per kind
    clamped: int  # notices moved to time 0 (and their estimates, if also before it)


def split_counts(total: int, fractions: tuple[float, ...]) -> list[int]:
    """`total` split in these fractions by largest remainders (ties to the earlier one)."""
    quotas = np.round(np.asarray(fractions, dtype=np.float64) * total, 9)  # no float dust
    counts = np.floor(quotas).astype(np.int64)
    left = total - int(counts.sum())
    by_remainder = np.argsort(-(quotas - counts), kind="stable")
    counts[by_remainder[:left]] += 1
    return [int(c) for c in counts]


def _notices(kind_rng: np.random.Generator, time_rng: np.random.Generator,
             letters: np.ndarray, submit: np.ndarray, nodes: np.ndarray,
             walltime: np.ndarray, params: HybridParams) -> _Notices:
    """Fields 27-30: the notices of on-demand jobs, the exact Table II split of kinds."""
    n = len(letters)
    od = np.flatnonzero(letters == "O")
    counts = split_counts(len(od), MIXES[params.mix])
    kind = kind_rng.permutation(np.repeat(np.arange(len(KINDS)), counts))
    t = np.asarray(submit, dtype=np.float64)[od]
    low, high = params.notice_lead
    lead = low + time_rng.random(len(od)) * (high - low)
    early_at = time_rng.random(len(od))  # where between notice and estimate it arrives
    late_by = time_rng.random(len(od)) * params.late_max
    # accurate: estimate = arrival; early: arrival inside (notice, estimate);
    # late: arrival up to late_max after the estimate
    est = np.select([kind == 1, kind == 2, kind == 3],
                    [t, t - early_at * lead + lead, t - late_by], -1.0)
    has = kind > 0
    notice = np.where(has, est - lead, -1.0)
    # before time 0 a notice time would read as "no notice", an estimate as "absent"
    clamped = has & (notice < 0)
    notice[clamped] = 0.0
    est[has] = np.maximum(est[has], 0.0)
    columns = {
        "notice_time": _scatter(n, od, notice, -1.0, np.float64),
        "est_arrival": _scatter(n, od, est, -1.0, np.float64),
        "est_nodes": _scatter(n, od, np.where(has, nodes[od], -1), -1, np.int64),
        "est_runtime": _scatter(n, od, np.where(has, walltime[od], -1.0), -1.0, np.float64),
    }
    return _Notices(columns, dict(zip(KINDS, counts, strict=True)), int(clamped.sum()))


def _scatter(n: int, where: np.ndarray, values: np.ndarray, fill: float,
             dtype: type) -> np.ndarray:
    out: np.ndarray = np.full(n, fill, dtype=dtype)
    out[where] = values
    return out


def notice_kinds(columns: dict[str, np.ndarray]) -> np.ndarray:
    """The notice kind of every job from its fields ("" for jobs that are not on-demand):
    none without a notice, else accurate / early / late as the estimated arrival equals,
    follows or precedes the submit time."""
    est, submit = columns["est_arrival"], columns["submit"]
    kind = np.select([columns["notice_time"] < 0, est == submit, est > submit],
                     ["none", "accurate", "early"], "late")
    return np.where(columns["job_class"] == "O", kind, "")


# ----------------------------------------------------------------------------- report


def _stats(letters: np.ndarray, nodes: np.ndarray, work: np.ndarray, project: np.ndarray,
           source: str, notices: _Notices, reassigned: int) -> dict[str, Any]:
    node_hours = np.maximum(nodes, 0) * np.maximum(work, 0.0) / 3600.0
    hours = {name: float(node_hours[letters == letter].sum())
             for name, letter in CLASSES.items()}
    total = sum(hours.values())
    return {
        "jobs": len(letters),
        "projects": int(len(np.unique(project))),
        "project_source": source,
        "jobs_by_class": {name: int((letters == letter).sum())
                          for name, letter in CLASSES.items()},
        "node_hours_by_class": hours,
        "ondemand_by_kind": dict(notices.counts),
        "ondemand_node_hour_share": hours["ondemand"] / total if total > 0 else 0.0,
        "clamped_notices": notices.clamped,
        "single_node_reassigned": reassigned,
    }


def _header_notes(params: HybridParams, stats: dict[str, Any]) -> list[str]:
    mix = ", ".join(f"{k} {f:g}" for k, f in zip(KINDS, MIXES[params.mix], strict=True))
    jobs = stats["jobs_by_class"]
    return [
        f"; Note: hybrid workload (schedd workload hybrid), hybrid paper Sec. IV-A/B: mix "
        f"{params.mix} ({mix}), seed {params.seed}, project shares on-demand "
        f"{params.od_share:g} rigid {params.rigid_share:g}, projects {params.projects} "
        f"({stats['project_source']}, session gap {params.session_gap:g} s)",
        f"; Note: setup rigid {_percent(params.rigid_setup)}, malleable "
        f"{_percent(params.malleable_setup)} of the runtime; "
        f"malleable minimum {params.min_fraction:g} of the size; notice lead "
        f"{params.notice_lead[0]:g}-{params.notice_lead[1]:g} s, late up to "
        f"{params.late_max:g} s",
        f"; Note: {stats['projects']} projects; jobs O {jobs['ondemand']}, B {jobs['rigid']}, "
        f"M {jobs['malleable']}; on-demand share of node-hours "
        f"{stats['ondemand_node_hour_share']:.4f}",
        f"; Note: simulate with {SIMULATE_FLAGS} (rigid jobs checkpoint at Daly's optimum, "
        f"600 s below 1,024 nodes and 1,200 s otherwise; a resumed job pays its setup, no "
        f"checkpoint read)",
    ]


def _percent(fractions: tuple[float, float]) -> str:
    return f"{100 * fractions[0]:g}-{100 * fractions[1]:g} %"
