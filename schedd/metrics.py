"""Summary metrics over the per-job result columns (see docs/metrics.md for the formulas).

`summarize()` takes the arrays of `ResultTable.arrays()` and returns a JSON-ready dict
with a fixed key order; `format_summary()` renders it as a fixed-width terminal table.
Everything is vectorised: a few passes over each column plus one np.sort per metric and
group (percentiles are then index lookups), so a million rows take about 0.25 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedd.core.results import CLASS_CODES, STATE_CODES

CLASS_NAMES: dict[str, str] = {
    "B": "batch",
    "R": "realtime",
    "O": "ondemand",
    "M": "malleable",
    "D": "dedicated",
}
CATEGORIES: tuple[str, ...] = ("narrow-short", "narrow-long", "wide-short", "wide-long")
PERCENTILES: tuple[int, ...] = (5, 25, 50, 75, 95)
# Per-job metrics, in the order they appear in every stats group.
JOB_METRICS: tuple[str, ...] = (
    "wait_s",
    "response_s",
    "slowdown",
    "bounded_slowdown",
    "bounded_slowdown_600",
)
CATEGORY_BY: tuple[str, ...] = ("walltime", "runtime")

# The columns summarize() reads; anything else in the dict is ignored.
REQUIRED_COLUMNS: tuple[str, ...] = (
    "submit",
    "first_start",
    "end",
    "executed",
    "alloc_nodes",
    "walltime",
    "job_class",
    "final_state",
    "preemptions",
    "failures",
    "checkpoints",
    "busy_node_s",
    "useful_node_s",
    "lost_node_s",
    "ckpt_node_s",
    "restart_node_s",
    "setup_node_s",
    "t_pre",
    "ckpt_by_system",
    "start_delay",
)

_INT_COLUMNS = frozenset(
    {"alloc_nodes", "job_class", "final_state", "preemptions", "failures", "checkpoints",
     "ckpt_by_system"}
)


@dataclass(frozen=True)
class MetricOptions:
    bsld_bound_s: float = 10.0  # bounded slowdown bound
    rt_bsld_bound_s: float = 600.0  # real-time paper's 10-minute variant
    # narrow iff alloc_nodes <= this (real-time paper §7.1.1; Mira allocates multiples of 512)
    narrow_max_nodes: int = 4096
    short_max_s: float = 7200.0  # short iff (category_by value) <= this
    category_by: str = "walltime"  # "walltime" (authors' simulator) or "runtime" (paper text)
    # if set, only jobs whose start and end fall inside count (authors' 7-day window)
    window: tuple[float, float] | None = None
    # The hybrid paper counts an on-demand start as instant without "the time to preempt/
    # shrink nodes upon the arrival"; the engine models that time (the malleable jobs'
    # warning), so a start within this many seconds of the arrival also counts as prompt.
    prompt_grace_s: float = 120.0

    def __post_init__(self) -> None:
        if self.category_by not in CATEGORY_BY:
            raise ValueError(f"category_by must be one of {CATEGORY_BY}, got {self.category_by!r}")
        if not self.prompt_grace_s >= 0:
            raise ValueError(f"prompt_grace_s must be >= 0, got {self.prompt_grace_s!r}")
        if not (self.bsld_bound_s > 0 and self.rt_bsld_bound_s > 0):
            raise ValueError("slowdown bounds must be positive")
        if self.window is not None and not self.window[0] <= self.window[1]:
            raise ValueError(f"window must be (lo, hi) with lo <= hi, got {self.window!r}")

    def as_json(self) -> dict[str, Any]:
        window = None if self.window is None else [float(self.window[0]), float(self.window[1])]
        return {
            "bsld_bound_s": float(self.bsld_bound_s),
            "rt_bsld_bound_s": float(self.rt_bsld_bound_s),
            "narrow_max_nodes": int(self.narrow_max_nodes),
            "short_max_s": float(self.short_max_s),
            "category_by": self.category_by,
            "window": window,
            "prompt_grace_s": float(self.prompt_grace_s),
        }


# --------------------------------------------------------------------------- helpers


def _columns(results: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The required columns as int64/float64 arrays of one common length."""
    missing = [name for name in REQUIRED_COLUMNS if name not in results]
    if missing:
        raise KeyError(f"results lack columns: {', '.join(missing)}")
    cols = {
        name: np.asarray(results[name], dtype=np.int64 if name in _INT_COLUMNS else np.float64)
        for name in REQUIRED_COLUMNS
    }
    lengths = {c.shape for c in cols.values()}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise ValueError(f"result columns must be 1-D and of equal length, got {sorted(lengths)}")
    return cols


def _window_mask(cols: dict[str, np.ndarray], window: tuple[float, float] | None) -> np.ndarray:
    """Jobs that count: all of them, or those that started and ended inside the window."""
    if window is None:
        return np.ones(cols["submit"].shape, dtype=bool)
    lo, hi = window
    start = cols["first_start"]
    # An unstarted job has no start inside any window, so it never counts here.
    return (start >= 0) & (start >= lo) & (cols["end"] <= hi)


def _ratio(num: float | np.integer, den: float | np.integer) -> float | None:
    """num / den, or None when the denominator is zero (keeps JSON free of NaN)."""
    return float(num) / float(den) if den else None


def _mean(x: np.ndarray) -> float | None:
    return float(x.mean()) if x.size else None


def _node_hours(x: np.ndarray) -> float:
    return float(x.sum()) / 3600.0


def _job_metrics(cols: dict[str, np.ndarray], opts: MetricOptions) -> dict[str, np.ndarray]:
    """Per-job wait, response and slowdowns; call with the started jobs only."""
    submit, end, run = cols["submit"], cols["end"], cols["executed"]
    wait = cols["first_start"] - submit
    response = end - submit
    # A job that held nodes for zero seconds has no slowdown: NaN, dropped by _describe_sorted.
    slowdown = np.divide(response, run, out=np.full(run.shape, np.nan), where=run > 0)
    bsld = np.maximum(1.0, response / np.maximum(run, opts.bsld_bound_s))
    rt_run = np.maximum(run, opts.rt_bsld_bound_s)
    # Real-time paper: (end - submit - r + max(r, 600)) / max(r, 600); no max(1, .) there.
    bsld_rt = (response - run + rt_run) / rt_run
    return {
        "wait_s": wait,
        "response_s": response,
        "slowdown": slowdown,
        "bounded_slowdown": bsld,
        "bounded_slowdown_600": bsld_rt,
    }


_Q = np.asarray(PERCENTILES, dtype=np.float64) / 100.0


def _sorted_percentiles(a: np.ndarray) -> np.ndarray:
    """PERCENTILES of an ascending, NaN-free, non-empty array.

    Same as np.percentile's default "linear" method (Hyndman & Fan type 7, including
    numpy's two-sided lerp), but on data we already sorted: np.sort is several times
    faster than the partition np.percentile would redo for every group.
    """
    virtual = (a.size - 1) * _Q
    prev = np.floor(virtual)
    gamma = virtual - prev
    lo = prev.astype(np.intp)
    hi = np.minimum(lo + 1, a.size - 1)
    below, above = a[lo], a[hi]
    diff = above - below
    return np.where(gamma >= 0.5, above - diff * (1 - gamma), below + diff * gamma)


def _without_nan(a: np.ndarray) -> np.ndarray:
    """An ascending array without the NaNs np.sort put at its end."""
    if a.size and np.isnan(a[-1]):
        a = a[: np.searchsorted(np.isnan(a), True)]
    return a


def _describe_sorted(a: np.ndarray) -> dict[str, Any]:
    """count, mean and percentiles of an ascending array whose NaNs (if any) sort last."""
    a = _without_nan(a)
    out: dict[str, Any] = {"count": int(a.size), "mean": _mean(a)}
    if a.size:
        q = _sorted_percentiles(a)
        out.update({f"p{p}": float(v) for p, v in zip(PERCENTILES, q, strict=True)})
    else:
        out.update({f"p{p}": None for p in PERCENTILES})
    return out


def _grouped_describe(
    metrics: dict[str, np.ndarray], codes: np.ndarray, names: list[tuple[int, str]]
) -> dict[str, dict[str, Any]]:
    """{group name: {metric: description}} for the (code, name) groups of `codes`.

    One stable argsort on the small-integer codes makes every group a contiguous slice;
    each slice is then sorted in place, so no boolean mask is rebuilt per metric.
    """
    if not names:
        return {}
    order = np.argsort(codes, kind="stable")  # radix sort on int8: a few ms per million
    counts = np.bincount(codes, minlength=max(i for i, _ in names) + 1)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    out: dict[str, dict[str, Any]] = {name: {} for _, name in names}
    for metric, values in metrics.items():
        grouped = values.take(order)
        for i, name in names:
            seg = grouped[bounds[i] : bounds[i + 1]]
            seg.sort()
            out[name][metric] = _describe_sorted(seg)
    return out


def _category_codes(cols: dict[str, np.ndarray], opts: MetricOptions) -> np.ndarray:
    """0..3 = index into CATEGORIES (narrow-short, narrow-long, wide-short, wide-long)."""
    wide = cols["alloc_nodes"] > opts.narrow_max_nodes
    length = cols["walltime"] if opts.category_by == "walltime" else cols["executed"]
    long_ = length > opts.short_max_s
    return wide.astype(np.int8) * 2 + long_.astype(np.int8)


def _class_codes(job_class: np.ndarray) -> np.ndarray:
    """job_class as group codes; anything outside CLASS_CODES goes to an ignored extra code."""
    valid = (job_class >= 0) & (job_class < len(CLASS_CODES))
    return np.where(valid, job_class, len(CLASS_CODES)).astype(np.int8)


def _present_classes(codes: np.ndarray) -> list[tuple[int, str]]:
    """(code, name) of the classes with at least one job, in CLASS_CODES order."""
    counts = np.bincount(codes, minlength=len(CLASS_CODES) + 1)
    return [(i, CLASS_NAMES[c]) for i, c in enumerate(CLASS_CODES) if counts[i]]


# --------------------------------------------------------------------------- sections


def _busy_after(cols: dict[str, np.ndarray], hi: float) -> np.ndarray:
    """Per job, the node-seconds it held after time `hi`, from the per-job columns: its
    nodes at the first start times the part of [first start, end] after `hi`, capped at
    all it held. Exact for a job that held the same nodes from max(hi, first start) to
    its end without a break (every job of a run without preemptions or resizes); for a job
    preempted, shrunk or grown after `hi` it is an estimate (pass segments to be exact)."""
    start = cols["first_start"]
    tail = np.maximum(cols["end"] - np.maximum(start, hi), 0.0)
    after = np.minimum(cols["alloc_nodes"] * tail, cols["busy_node_s"])
    return np.where(start >= 0, after, 0.0)


def _segments_busy_inside(segments: dict[str, np.ndarray], lo: float, hi: float) -> float:
    """Node-seconds of the execution segments inside [lo, hi]."""
    start = np.asarray(segments["start"], dtype=np.float64)
    end = np.asarray(segments["end"], dtype=np.float64)
    nodes = np.asarray(segments["nodes"], dtype=np.float64)
    overlap = np.maximum(np.minimum(end, hi) - np.maximum(start, lo), 0.0)
    return float((nodes * overlap).sum())


def _window_utilization(cols: dict[str, np.ndarray], total_nodes: int,
                        segments: dict[str, np.ndarray] | None) -> float | None:
    """Busy node-seconds inside [first submit, last submit] over total_nodes x that span:
    the utilisation of the submission window, which leaves out the drain after the last
    arrival (docs/metrics.md). Nothing runs before the first submit, so only the end of
    the window clips."""
    if not cols["submit"].size:
        return None
    lo, hi = float(cols["submit"].min()), float(cols["submit"].max())
    if segments is not None:
        inside = _segments_busy_inside(segments, lo, hi)
    else:
        inside = float(cols["busy_node_s"].sum() - _busy_after(cols, hi).sum())
    value = _ratio(inside, total_nodes * (hi - lo))
    # A window of a few ulps (submissions a rounding error apart) measures nothing.
    return value if value is None or math.isfinite(value) else None


def _busy_over_makespan(cols: dict[str, np.ndarray], total_nodes: int
                        ) -> tuple[float | None, float, float, float]:
    """(utilisation, makespan, capacity, busy node-seconds)."""
    n = cols["submit"].size
    makespan = float(cols["end"].max() - cols["submit"].min()) if n else 0.0
    capacity = total_nodes * makespan
    busy = float(cols["busy_node_s"].sum())
    return _ratio(busy, capacity), makespan, capacity, busy


def _utilization(cols: dict[str, np.ndarray], waste: np.ndarray | None,
                 total_nodes: int, segments: dict[str, np.ndarray] | None = None
                 ) -> dict[str, Any]:
    utilization, makespan, capacity, busy = _busy_over_makespan(cols, total_nodes)
    useful = float(cols["useful_node_s"].sum())
    return {
        "utilization": utilization,
        "utilization_window": _window_utilization(cols, total_nodes, segments),
        "productive_utilization": _ratio(useful, capacity),
        "overhead_utilization": _ratio(busy - useful, capacity),
        # The hybrid paper's system utilisation: busy time minus what interruptions wasted.
        "utilization_excl_waste": (_ratio(busy - float(waste.sum()), capacity)
                                   if waste is not None else None),
        "makespan_s": makespan,
    }


_STATS_COLUMNS = ("submit", "first_start", "end", "executed", "alloc_nodes", "walltime")


def _stats(
    cols: dict[str, np.ndarray],
    classes: np.ndarray,
    present: list[tuple[int, str]],
    opts: MetricOptions,
) -> dict[str, Any]:
    """Per-job metric distributions for all started jobs, by class and by category."""
    started = cols["first_start"] >= 0
    sub = {name: cols[name][started] for name in _STATS_COLUMNS}
    metrics = _job_metrics(sub, opts)
    cats = _category_codes(sub, opts)
    class_codes = classes[started]
    every = {name: _describe_sorted(np.sort(v)) for name, v in metrics.items()}
    by_category = _grouped_describe(metrics, cats, list(enumerate(CATEGORIES)))
    if len(present) == 1 and bool((class_codes == present[0][0]).all()):
        # One class (every job of most traces): its groups are the run's own, described
        # above; sorting them again was half of summarising a million-job run.
        only = present[0][1]
        return {"all": every, "by_class": {only: _copied(every)}, "by_category": by_category,
                "by_class_category": {only: _copied(by_category)}}
    # Class x category (the real-time paper's Figs. 4-7 split RTJs and BJs per category).
    pairs = _grouped_describe(metrics, class_codes.astype(np.int16) * len(CATEGORIES) + cats,
                              [(i * len(CATEGORIES) + k, f"{name}/{cat}")
                               for i, name in present for k, cat in enumerate(CATEGORIES)])
    return {
        "all": every,
        "by_class": _grouped_describe(metrics, class_codes, present),
        "by_category": by_category,
        "by_class_category": {name: {cat: pairs[f"{name}/{cat}"] for cat in CATEGORIES}
                              for _, name in present},
    }


def _copied(groups: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A copy of {key: {field: value}} that shares no dict with the original."""
    return {key: dict(fields) for key, fields in groups.items()}


def _class_counts(
    classes: np.ndarray, present: list[tuple[int, str]], flags: np.ndarray | None = None
) -> dict[str, int]:
    """Jobs per present class, or (with flags) the flagged jobs per present class."""
    counts = np.bincount(classes, weights=flags, minlength=len(CLASS_CODES) + 1)
    return {name: int(counts[i]) for i, name in present}


def _preemption(
    cols: dict[str, np.ndarray], classes: np.ndarray, present: list[tuple[int, str]]
) -> dict[str, Any]:
    preempted = cols["preemptions"] > 0
    jobs = _class_counts(classes, present)
    hit = _class_counts(classes, present, preempted.astype(np.float64))
    return {
        "preemption_ratio": _ratio(np.count_nonzero(preempted), preempted.size),
        "preemption_ratio_by_class": {name: _ratio(hit[name], jobs[name]) for name in jobs},
    }


def _overheads(cols: dict[str, np.ndarray]) -> dict[str, Any]:
    by_sys = cols["ckpt_by_system"] == 1
    return {
        "preemptions": int(cols["preemptions"].sum()),
        "checkpoints": int(cols["checkpoints"].sum()),
        "failures": int(cols["failures"].sum()),
        "lost_node_h": _node_hours(cols["lost_node_s"]),
        "ckpt_node_h": _node_hours(cols["ckpt_node_s"]),
        "restart_node_h": _node_hours(cols["restart_node_s"]),
        "setup_node_h": _node_hours(cols["setup_node_s"]),
        # Real-time paper's per-scheme accounting (in node-hours).
        "chr_ckpt_sys": _node_hours(cols["ckpt_node_s"][by_sys]),
        "chr_ckpt_jobs": _node_hours(cols["ckpt_node_s"][cols["ckpt_by_system"] == 0]),
        "chr_pre_sys": _node_hours(cols["t_pre"] * cols["alloc_nodes"]),
    }


def _scheduling(cols: dict[str, np.ndarray], backfilled: np.ndarray | None,
                total_nodes: int) -> dict[str, Any]:
    """The checkpoint-backfilling paper's metrics (§4, §5.2): its wait (every waiting
    segment counted), mean queue length (waiting jobs averaged over the span, every waiting
    segment counted), backfill ratio, checkpoints per node per day, and the share of busy
    node-time wasted by preemption (lost work, checkpoint writes, restart reads)."""
    n = cols["submit"].size
    span = float(cols["end"].max() - cols["submit"].min()) if n else 0.0
    waiting = cols["end"] - cols["submit"] - cols["executed"]
    wasted = cols["lost_node_s"] + cols["ckpt_node_s"] + cols["restart_node_s"]
    return {
        # The paper's wait (§4): every waiting segment of a job, requeues included, over
        # the jobs that started (the population of mean_wait_s).
        "mean_wait_all_segments_s": _mean(waiting[cols["first_start"] >= 0]),
        "mean_queue_length": _ratio(float(waiting.sum()), span),
        "backfill_ratio": (_ratio(np.count_nonzero(backfilled), n)
                           if backfilled is not None else None),
        "checkpoints_per_node_day": _ratio(
            float((cols["checkpoints"] * cols["alloc_nodes"]).sum()),
            total_nodes * span / 86_400.0),
        "wasted_ratio": _ratio(float(wasted.sum()), float(cols["busy_node_s"].sum())),
    }


def _ondemand_start_ratios(cols: dict[str, np.ndarray], grace: float) -> dict[str, Any]:
    """Shares of on-demand jobs that started at their submit time, and within `grace`
    seconds of it (unstarted ones did neither)."""
    is_o = cols["job_class"] == CLASS_CODES.index("O")
    started = is_o & (cols["first_start"] >= 0)
    delay = cols["first_start"] - cols["submit"]
    jobs = np.count_nonzero(is_o)
    return {
        "ondemand_instant_start_ratio": _ratio(np.count_nonzero(started & (delay == 0)), jobs),
        "ondemand_prompt_start_ratio": _ratio(np.count_nonzero(started & (delay <= grace)),
                                              jobs),
    }


def _dedicated(cols: dict[str, np.ndarray]) -> dict[str, Any]:
    is_d = cols["job_class"] == CLASS_CODES.index("D")
    delay = cols["start_delay"][is_d & (cols["first_start"] >= 0)]
    late = delay[delay > 0]
    return {
        "jobs": int(np.count_nonzero(is_d)),
        "started": int(delay.size),
        "delayed": int(late.size),
        "mean_delay_s": _mean(delay),  # over started dedicated jobs, on-time ones as 0
        "mean_delay_of_delayed_s": _mean(late),
        "max_delay_s": float(delay.max()) if delay.size else None,
    }


def _final_states(final_state: np.ndarray) -> dict[str, int]:
    return {name: int(np.count_nonzero(final_state == i)) for i, name in enumerate(STATE_CODES)}


# --------------------------------------------------------------------------- public API


def summarize(
    results: dict[str, np.ndarray],
    *,
    total_nodes: int,
    options: MetricOptions = MetricOptions(),  # noqa: B008 - frozen, so sharing is safe
    segments: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """JSON-serialisable summary of a run; same input gives the same dict, key order included.

    `segments` (optional: columns `job`, `start`, `end`, `nodes`, one row per stretch of
    holding nodes, as the RunRecorder keeps them) makes `utilization_window` exact for
    jobs preempted or resized after the last submission; without it that figure comes
    from the per-job columns."""
    if total_nodes <= 0:
        raise ValueError(f"total_nodes must be positive, got {total_nodes}")
    all_cols = _columns(results)
    keep = _window_mask(all_cols, options.window)
    cols = all_cols if keep.all() else {name: c[keep] for name, c in all_cols.items()}
    classes = _class_codes(cols["job_class"])
    present = _present_classes(classes)
    stats = _stats(cols, classes, present, options)
    backfilled = results.get("backfilled")  # optional: results of older runs lack it
    if backfilled is not None:
        backfilled = np.asarray(backfilled)[keep] if not keep.all() else np.asarray(backfilled)
    headline = {name: stats["all"][name]["mean"] for name in JOB_METRICS}
    waste = results.get("waste_node_s")  # optional, like backfilled
    if waste is not None:
        waste = np.asarray(waste, dtype=np.float64)[keep]
    return {
        "jobs": int(cols["submit"].size),
        "started": int(np.count_nonzero(cols["first_start"] >= 0)),
        "input_rows": int(all_cols["submit"].size),
        "total_nodes": int(total_nodes),
        "mean_wait_s": headline["wait_s"],
        "mean_response_s": headline["response_s"],
        "mean_slowdown": headline["slowdown"],
        "mean_bounded_slowdown": headline["bounded_slowdown"],
        "mean_bounded_slowdown_600": headline["bounded_slowdown_600"],
        **_utilization(cols, waste, total_nodes, _kept_segments(segments, results, keep)),
        "jobs_by_class": _class_counts(classes, present),
        "final_states": _final_states(cols["final_state"]),
        **_preemption(cols, classes, present),
        **_overheads(cols),
        **_scheduling(cols, backfilled, total_nodes),
        **_ondemand_start_ratios(cols, options.prompt_grace_s),
        "dedicated": _dedicated(cols),
        "stats": stats,
        "options": options.as_json(),
    }


HEADLINE_KEYS = ("mean_wait_s", "mean_slowdown", "mean_bounded_slowdown", "utilization")


def headline(
    results: dict[str, np.ndarray],
    *,
    total_nodes: int,
    options: MetricOptions = MetricOptions(),  # noqa: B008 - frozen, so sharing is safe
) -> dict[str, Any]:
    """`summarize`'s HEADLINE_KEYS, computed by the same functions on the same arrays (so
    equal to the last bit), without the distributions, groups and the rest: what
    schedd.gym's environment rewards at the end of every episode."""
    if total_nodes <= 0:
        raise ValueError(f"total_nodes must be positive, got {total_nodes}")
    all_cols = _columns(results)
    keep = _window_mask(all_cols, options.window)
    cols = all_cols if keep.all() else {name: c[keep] for name, c in all_cols.items()}
    started = cols["first_start"] >= 0
    # At an episode's end every job started: the same arrays, not copies of them.
    sub = cols if started.all() else {name: cols[name][started] for name in _STATS_COLUMNS}
    return _headline_figures(sub, cols, total_nodes, options)


def headline_all_started(cols: dict[str, np.ndarray], *, total_nodes: int,
                         options: MetricOptions = MetricOptions(),  # noqa: B008 - frozen
                         ) -> dict[str, Any]:
    """`headline` of results in which every job started and no window is set, from only
    the columns it reads: float64 submit, first_start, end, executed and busy_node_s, in
    the results' order (utilisation sums busy_node_s in it). What schedd.gym's fast path
    rewards with, before (or without) making the result rows."""
    if total_nodes <= 0:
        raise ValueError(f"total_nodes must be positive, got {total_nodes}")
    if options.window is not None:
        raise ValueError("headline_all_started takes no window; use headline")
    return _headline_figures(cols, cols, total_nodes, options)


def _headline_figures(started: dict[str, np.ndarray], kept: dict[str, np.ndarray],
                      total_nodes: int, options: MetricOptions) -> dict[str, Any]:
    """The HEADLINE_KEYS from the started jobs' columns and the kept (window) ones."""
    metrics = _job_metrics(started, options)
    # _describe_sorted's mean without its percentiles (three quarters of its time), and
    # _utilization's first figure without the others.
    means = {name: _mean(_without_nan(np.sort(metrics[name])))
             for name in ("wait_s", "slowdown", "bounded_slowdown")}
    return {"mean_wait_s": means["wait_s"], "mean_slowdown": means["slowdown"],
            "mean_bounded_slowdown": means["bounded_slowdown"],
            "utilization": _busy_over_makespan(kept, total_nodes)[0]}


def _kept_segments(segments: dict[str, np.ndarray] | None, results: dict[str, np.ndarray],
                   keep: np.ndarray) -> dict[str, np.ndarray] | None:
    """The segments of the jobs the window filter kept (all of them without a filter)."""
    if segments is None or keep.all():
        return segments
    if "id" not in results:
        raise KeyError("segments with a window filter need the results' id column")
    mine = np.isin(np.asarray(segments["job"]), np.asarray(results["id"])[keep])
    return {name: np.asarray(segments[name])[mine] for name in ("start", "end", "nodes")}


def per_job(
    results: dict[str, np.ndarray],
    options: MetricOptions = MetricOptions(),  # noqa: B008 - frozen, so sharing is safe
) -> dict[str, np.ndarray]:
    """The per-job metrics of the started jobs (the arrays `stats` describes), with each
    job's class code, category code (index into CATEGORIES), nodes held and executed
    seconds: what distribution figures plot."""
    cols = _columns(results)
    started = cols["first_start"] >= 0
    sub = {name: cols[name][started] for name in _STATS_COLUMNS}
    out = _job_metrics(sub, options)
    out["job_class"] = cols["job_class"][started]
    out["category"] = _category_codes(sub, options).astype(np.int64)
    out["alloc_nodes"] = sub["alloc_nodes"]
    out["executed"] = sub["executed"]
    return out


# --------------------------------------------------------------------------- formatting

_LABEL_W = 22
_CELL_W = 12


def _fmt(v: Any) -> str:
    """One cell: '-' for null, integers as is, floats to 6 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, int):  # bool included
        return str(v)
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def _kv_lines(pairs: list[tuple[str, Any]]) -> list[str]:
    width = max(len(k) for k, _ in pairs) + 2
    return [f"  {k:<{width}}{_fmt(v):>{_CELL_W}}" for k, v in pairs]


def _metric_table(stats: dict[str, Any], metric: str) -> list[str]:
    cols = ["count", "mean", *(f"p{p}" for p in PERCENTILES)]
    header = f"  {metric:<{_LABEL_W}}" + "".join(f"{c:>{_CELL_W}}" for c in cols)
    groups: list[tuple[str, dict[str, Any]]] = [("all", stats["all"])]
    groups += [(f"class {k}", v) for k, v in stats["by_class"].items()]
    groups += [(k, v) for k, v in stats["by_category"].items()]
    rows = [
        f"  {label:<{_LABEL_W}}" + "".join(f"{_fmt(g[metric][c]):>{_CELL_W}}" for c in cols)
        for label, g in groups
    ]
    return [header, "  " + "-" * (_LABEL_W + _CELL_W * len(cols)), *rows]


def format_summary(summary: dict[str, Any]) -> str:
    """A readable fixed-width report of a summarize() result."""
    lines = [
        f"jobs {summary['jobs']} (started {summary['started']}) on {summary['total_nodes']} "
        f"nodes, makespan {_fmt(summary['makespan_s'])} s",
        "",
        "headline:",
    ]
    head_keys = ["mean_wait_s", "mean_response_s", "mean_slowdown", "mean_bounded_slowdown",
                 "mean_bounded_slowdown_600", "utilization", "utilization_window",
                 "productive_utilization",
                 "overhead_utilization", "utilization_excl_waste", "preemption_ratio",
                 "ondemand_instant_start_ratio", "ondemand_prompt_start_ratio"]
    lines += _kv_lines([(k, summary[k]) for k in head_keys])
    lines += ["", "per-job metrics (percentiles: numpy linear interpolation):"]
    for metric in JOB_METRICS:
        lines += _metric_table(summary["stats"], metric) + [""]
    lines.append("counts and overheads:")
    pairs: list[tuple[str, Any]] = [(f"jobs {k}", v) for k, v in summary["jobs_by_class"].items()]
    pairs += [(f"state {k}", v) for k, v in summary["final_states"].items()]
    pairs += [(f"preemption_ratio {k}", v)
              for k, v in summary["preemption_ratio_by_class"].items()]
    pairs += [(k, summary[k]) for k in (
        "mean_queue_length", "backfill_ratio", "checkpoints_per_node_day", "wasted_ratio",
        "preemptions", "checkpoints", "failures", "lost_node_h", "ckpt_node_h",
        "restart_node_h", "setup_node_h", "chr_ckpt_sys", "chr_ckpt_jobs", "chr_pre_sys")]
    if "node_failures" in summary:  # the engine's count, idle nodes too (written by sim)
        pairs.append(("node_failures", summary["node_failures"]))
    pairs += [(f"dedicated {k}", v) for k, v in summary["dedicated"].items()]
    lines += _kv_lines(pairs)
    return "\n".join(lines) + "\n"
