"""Real-time jobs (RTJs) marked in, or added to, a batch trace.

The real-time paper (docs/workloads.md, "Real-time jobs"), §7.1.2-7.1.3, and the rules of
the authors' public simulator: eq. 59 rescales job sizes from the trace's machine to the
target machine; then

* default: floor(p/100 x N) of the N kept jobs, chosen uniformly without replacement,
  become RTJs (field 22 = R);
* short: the same count, chosen only among jobs whose walltime (or runtime) is at most
  90 minutes;
* aps: every trace job stays batch and floor(p x N / (100 - p)) new RTJs are added, with
  runtimes drawn from the Advanced Photon Source (APS) log, walltimes of 1-2x the runtime
  in whole minutes and sizes Exp(2048 nodes) rounded up to a Mira partition size.

Optionally a fraction of the batch jobs is marked not checkpointable (field 23 = 0). One
numpy Generator seeded with `seed` makes every draw, in a fixed order (docs/workloads.md),
so the same trace, params and seed give the same columns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..core.bgq import NODES_PER_MIDPLANE, PARTITION_MIDPLANES
from .normalize import job_nodes
from .swf import COLUMN_NAMES, Trace, TraceError, TraceHeader, _read_bytes, absent_column

MODES = ("default", "short", "aps")
SHORT_BY = ("walltime", "runtime")
MIRA_NODES = 49152
PARTITION_SIZES = tuple(m * NODES_PER_MIDPLANE for m in PARTITION_MIDPLANES)  # 512 .. 49,152


@dataclass(frozen=True)
class RealtimeParams:
    """How to make RTJs; the defaults are the paper's and its authors' (docs/workloads.md)."""

    percent: float  # RTJ percentage p, 0 < p < 100
    mode: str = "default"  # one of MODES
    seed: int = 0
    short_max_s: float = 5400.0  # short mode: 90 minutes
    short_by: str = "walltime"  # short mode compares this with short_max_s (SHORT_BY)
    aps_mean_nodes: float = 2048.0  # aps mode: mean of the exponential size draw
    non_checkpointable: float = 0.0  # fraction of the batch jobs given field 23 = 0
    normalize_from: int | None = None  # eq. 59: node count of the trace's machine
    target_nodes: int = MIRA_NODES  # node count of the machine the workload is for

    def __post_init__(self) -> None:
        if not (_is_number(self.percent) and 0.0 < self.percent < 100.0):
            raise ValueError(
                f"the real-time percentage must be a number in (0, 100), got {self.percent!r}")
        if self.mode not in MODES:
            raise ValueError(f"the mode must be default, short or aps, got {self.mode!r}")
        if not _whole(self.seed, 0):
            raise ValueError(f"the seed must be a whole number >= 0, got {self.seed!r}")
        if not (_is_number(self.short_max_s) and 0.0 < self.short_max_s < math.inf):
            raise ValueError(
                f"the short-job limit must be a positive number of seconds, got "
                f"{self.short_max_s!r}")
        if self.short_by not in SHORT_BY:
            raise ValueError(f"short_by must be walltime or runtime, got {self.short_by!r}")
        if not (_is_number(self.aps_mean_nodes) and 0.0 < self.aps_mean_nodes < math.inf):
            raise ValueError(
                f"the mean APS job size must be a positive number of nodes, got "
                f"{self.aps_mean_nodes!r}")
        if not (_is_number(self.non_checkpointable) and 0.0 <= self.non_checkpointable <= 1.0):
            raise ValueError(
                f"the non-checkpointable fraction must be in [0, 1], got "
                f"{self.non_checkpointable!r}")
        if self.normalize_from is not None and not _whole(self.normalize_from, 1):
            raise ValueError(
                f"the original machine size must be a whole number of nodes >= 1, got "
                f"{self.normalize_from!r}")
        if not _whole(self.target_nodes, 1):
            raise ValueError(
                f"the target machine size must be a whole number of nodes >= 1, got "
                f"{self.target_nodes!r}")


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _whole(x: object, low: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= low


def _exact(x: float) -> Fraction:
    """A number as the decimal it prints as (33.3 is 333/10, not the nearest double)."""
    return Fraction(str(x))


def share_count(percent: float, n: int) -> int:
    """floor(percent / 100 x n), in exact arithmetic."""
    return math.floor(_exact(percent) * n / 100)


def aps_count(percent: float, n: int) -> int:
    """floor(percent x n / (100 - percent)): added RTJs that make `percent` of the total."""
    p = _exact(percent)
    return math.floor(p * n / (100 - p))


def scale_sizes(sizes: np.ndarray, normalize_from: int, target_nodes: int) -> np.ndarray:
    """Eq. 59: ceil(size x target / original) (at least 1) in integer arithmetic; sizes
    <= 0 (unknown) are left as they are."""
    sizes = np.asarray(sizes, dtype=np.int64)
    scaled = np.maximum(1, -(-sizes * target_nodes // normalize_from))
    return np.where(sizes > 0, scaled, sizes)


def partition_size(nodes: np.ndarray, target_nodes: int) -> np.ndarray:
    """Each draw rounded up to the next Mira partition size (draws above 49,152 become
    49,152), then capped at `target_nodes`."""
    sizes = np.asarray(PARTITION_SIZES, dtype=np.int64)
    index = np.searchsorted(sizes, np.asarray(nodes, dtype=np.float64), side="left")
    rounded = sizes[np.minimum(index, len(sizes) - 1)]
    return np.minimum(rounded, target_nodes)


def aps_walltime(runtime: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(walltime in seconds, raised): round(runtime / 60 x u) minutes, at least 1 minute,
    rounding halves up; raised to the runtime rounded up to whole minutes where that
    rounding fell below the runtime (our engine kills a job at its walltime)."""
    minutes = np.maximum(1.0, np.floor(runtime / 60.0 * u + 0.5))
    floor_minutes = np.ceil(runtime / 60.0)
    raised = minutes < floor_minutes
    return 60.0 * np.maximum(minutes, floor_minutes), raised


def load_aps_runtimes(path: str) -> np.ndarray:
    """The APS runtimes file: one positive number of seconds per line; blank lines and lines
    starting with `#` are skipped. Raises TraceError ("FILE:LINE: expected ..., found ...")."""
    raw = _read_bytes(path)
    values: list[float] = []
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        text = line.strip()
        if not text or text.startswith(b"#"):
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            shown = text.decode("utf-8", "replace")
            raise TraceError.at(path, lineno,
                                f"expected a positive number of seconds, found {shown!r}")
        values.append(value)
    if not values:
        raise TraceError.at(path, None, "expected at least one runtime, found none")
    return np.array(values, dtype=np.float64)


def make_realtime(trace: Trace, params: RealtimeParams,
                  aps_runtimes: np.ndarray | None = None) -> tuple[Trace, dict[str, Any]]:
    """The trace with RTJs marked (default, short) or added (aps), and stats.

    Pure and deterministic: the same trace, params and runtimes give the same columns. Job
    lines the simulator would drop (runtime <= 0, or nodes outside 1..target_nodes) are
    copied unchanged and never marked; ECCs are copied unchanged.
    """
    runtimes = _check_inputs(trace.header, params, aps_runtimes)
    rng = np.random.default_rng(params.seed)
    n = len(trace)
    cols = {name: _column(trace, name, n) for name in COLUMN_NAMES}
    scale = 1.0
    if params.normalize_from is not None:
        scale = params.target_nodes / params.normalize_from
        for name in ("procs", "req_procs"):
            cols[name] = scale_sizes(cols[name], params.normalize_from, params.target_nodes)
    nodes = job_nodes(cols["req_procs"], cols["procs"])
    kept = (cols["runtime"] > 0) & (nodes >= 1) & (nodes <= params.target_nodes)
    n_kept = int(kept.sum())
    # every kept job starts as a checkpointable batch job, whatever the input said
    letters = np.where(kept, "B", np.asarray(cols["job_class"])).astype("<U1")
    ckpt = np.where(kept, -1, cols["checkpointable"]).astype(np.int64)

    eligible: int | None = None
    added: dict[str, np.ndarray] = {}
    raised = 0
    if params.mode == "aps":
        assert runtimes is not None
        wanted = aps_count(params.percent, n_kept)
        added, raised = _aps_jobs(rng, wanted, cols, kept, runtimes, params)
    else:
        wanted = share_count(params.percent, n_kept)
        candidates = kept & _short(cols, params) if params.mode == "short" else kept
        rows = np.flatnonzero(candidates)
        eligible = len(rows)
        letters[rng.choice(rows, size=min(wanted, len(rows)), replace=False)] = "R"

    batch_rows = np.flatnonzero(kept & (letters == "B"))
    n_off = math.floor(_exact(params.non_checkpointable) * len(batch_rows))
    ckpt[rng.choice(batch_rows, size=n_off, replace=False)] = 0

    cols["job_class"] = letters
    cols["checkpointable"] = ckpt
    if added:
        cols = _merge(cols, added)
    realtime = int((kept & (letters == "R")).sum()) + len(added.get("job_id", ()))
    stats: dict[str, Any] = {
        "jobs": len(cols["job_id"]),
        "kept": n_kept,
        "realtime": realtime,
        "batch": len(batch_rows),
        "wanted": wanted,
        "eligible": eligible,
        "added": len(added.get("job_id", ())),
        "walltime_raised": raised,
        "non_checkpointable": n_off,
        "scale": scale,
    }
    header = TraceHeader(
        max_nodes=params.target_nodes,
        max_procs=params.target_nodes if params.normalize_from is not None
        else trace.header.max_procs,
        unix_start_time=trace.header.unix_start_time,
        lines=list(trace.header.lines) + _header_notes(params, stats))
    return Trace(path=trace.path, header=header, columns=cols, eccs=list(trace.eccs),
                 skipped=trace.skipped), stats


def _check_inputs(header: TraceHeader, params: RealtimeParams,
                  aps_runtimes: np.ndarray | None) -> np.ndarray | None:
    declared = header.max_nodes if header.max_nodes is not None else header.max_procs
    if params.normalize_from is None and declared is not None \
            and declared != params.target_nodes:
        raise ValueError(
            f"the trace's machine has {declared} nodes but the target has "
            f"{params.target_nodes}; use that target size or normalise the sizes from it "
            f"(eq. 59)")
    if params.mode != "aps":
        return None
    if aps_runtimes is None:
        raise ValueError("the aps mode needs the APS runtimes, got none")
    runtimes = np.asarray(aps_runtimes, dtype=np.float64).ravel()
    if not len(runtimes) or not (np.isfinite(runtimes) & (runtimes > 0)).all():
        raise ValueError("the APS runtimes must be one or more positive numbers of seconds")
    return runtimes


def _column(trace: Trace, name: str, n: int) -> np.ndarray:
    col = trace.columns.get(name)
    return absent_column(name, n) if col is None else np.asarray(col)


def _short(cols: dict[str, np.ndarray], params: RealtimeParams) -> np.ndarray:
    """Short-mode eligibility: walltime (field 9 if > 0, else the runtime) or runtime at
    most short_max_s."""
    runtime = cols["runtime"].astype(np.float64)
    if params.short_by == "runtime":
        return runtime <= params.short_max_s
    walltime = np.where(cols["req_time"] > 0, cols["req_time"], runtime)
    return walltime <= params.short_max_s


def _aps_jobs(rng: np.random.Generator, count: int, cols: dict[str, np.ndarray],
              kept: np.ndarray, runtimes: np.ndarray, params: RealtimeParams
              ) -> tuple[dict[str, np.ndarray], int]:
    """The added RTJs' columns that differ from "absent", and how many walltimes were
    raised. Draws, in this order: submits, runtime picks, walltime factors, sizes."""
    if count == 0:
        return {}, 0
    submits = cols["submit"][kept].astype(np.float64)
    low, high = math.ceil(submits.min()), math.floor(submits.max())
    if low <= high:  # whole seconds in [min submit, max submit]
        submit = rng.integers(low, high + 1, size=count).astype(np.float64)
    else:  # every kept job within one second: all at the first submit
        submit = np.full(count, submits.min())
    runtime = runtimes[rng.integers(0, len(runtimes), size=count)]
    walltime, raised = aps_walltime(runtime, 1.0 + rng.random(count))
    size = partition_size(rng.exponential(params.aps_mean_nodes, size=count),
                          params.target_nodes)
    first = int(np.asarray(cols["job_id"]).max(initial=0)) + 1
    return {
        "job_id": np.arange(first, first + count, dtype=np.int64),
        "submit": submit,
        "runtime": runtime,
        "procs": size,
        "req_procs": size,
        "req_time": walltime,
        "job_class": np.full(count, "R", dtype="<U1"),
    }, int(raised.sum())


def _merge(cols: dict[str, np.ndarray], added: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Trace rows and added rows together, sorted by (submit, job id)."""
    count = len(added["job_id"])
    out = {}
    for name in COLUMN_NAMES:
        extra = added.get(name)
        if extra is None:
            extra = np.asarray(absent_column(name, count))
        out[name] = np.concatenate((np.asarray(cols[name]), extra.astype(cols[name].dtype)))
    order = np.lexsort((out["job_id"], out["submit"]))
    return {name: col[order] for name, col in out.items()}


def _header_notes(params: RealtimeParams, stats: dict[str, Any]) -> list[str]:
    if params.mode == "aps":
        how = (f"{stats['added']} APS jobs added (mean size {params.aps_mean_nodes:g} nodes, "
               f"{stats['walltime_raised']} walltimes raised to the runtime)")
    elif params.mode == "short":
        how = (f"chosen among {stats['eligible']} jobs with {params.short_by} <= "
               f"{params.short_max_s:g} s (wanted {stats['wanted']})")
    else:
        how = "chosen among all kept jobs"
    notes = [
        f"; Note: real-time jobs (schedd workload realtime), real-time paper Sec. 7.1.3: mode "
        f"{params.mode}, {params.percent:g} %, seed {params.seed}; {stats['realtime']} R "
        f"({how}); {stats['batch']} B, {stats['non_checkpointable']} of them not "
        f"checkpointable",
    ]
    if params.normalize_from is not None:
        notes.append(
            f"; Note: sizes scaled by eq. 59 from {params.normalize_from} to "
            f"{params.target_nodes} nodes (x {stats['scale']:.6g}, rounded up)")
    return notes
