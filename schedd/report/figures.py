"""The report's figures, drawn with matplotlib's object API on the Agg canvas (no display,
no pyplot state shared between figures). Each function writes one PNG and returns its
file name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from ..core.results import CLASS_CODES
from ..metrics import CATEGORIES, CLASS_NAMES, MetricOptions, per_job
from .runs import Run, parse_intervals

DPI = 110
RUN_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
              "#17becf")
CLASS_COLORS = {"B": "#4c72b0", "R": "#dd8452", "O": "#c44e52", "M": "#55a868",
                "D": "#8172b3"}
# Up to this many segments the chart draws every one; past it, an occupancy image + zoom.
GANTT_JOB_COLOURS = 1_500
ZOOM_SEGMENTS = 300
MAX_STEPS = 4_000  # time-series rows drawn as they are; longer series are binned
BINS = 600
DAY = 86_400.0


def _save(fig: Figure, out: Path, name: str) -> str:
    fig.savefig(out / name, dpi=DPI)
    return name


def _run_color(i: int) -> str:
    return RUN_COLORS[i % len(RUN_COLORS)]


def _origin(runs: list[Run]) -> float:
    firsts = [float(r.jobs["submit"].min()) for r in runs if len(r.jobs["submit"])]
    return min(firsts) if firsts else 0.0


def utilisation_and_queue(runs: list[Run], out: Path) -> str | None:
    """Utilisation (busy / up nodes) and queue length over time, one line per run."""
    series = [(i, r) for i, r in enumerate(runs) if r.timeseries is not None
              and len(r.timeseries["time"])]
    if not series:
        return None
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    ax_u, ax_q = fig.subplots(2, 1, sharex=True)
    for i, run in series:
        ts = run.timeseries
        assert ts is not None
        days = (ts["time"] - _origin([run])) / DAY  # each run from its own first submit
        up = np.maximum(run.total_nodes - ts["down_nodes"], 1)
        util, queue = ts["busy_nodes"] / up, ts["queue_length"].astype(np.float64)
        if len(days) > MAX_STEPS:  # time-weighted means per bin: readable, and exact areas
            days, (util, queue) = _binned(days, (util, queue), BINS)
        ax_u.step(days, util, where="post", color=_run_color(i), lw=0.8, label=run.name)
        ax_q.step(days, queue, where="post", color=_run_color(i), lw=0.8, label=run.name)
    ax_u.set_ylabel("utilisation (busy / up nodes)")
    ax_u.set_ylim(0, 1.02)
    ax_q.set_ylabel("waiting jobs")
    ax_q.set_xlabel("days since the first submission")
    ax_u.legend(loc="lower right", fontsize=8)
    ax_u.set_title("Utilisation and queue length over time")
    return _save(fig, out, "utilisation_queue.png")


def _binned(t: np.ndarray, series: tuple[np.ndarray, ...],
            bins: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Step functions (value in force from t[k] to t[k + 1]) as their time-weighted means
    over `bins` equal bins: bin left edges, and one array of means per series."""
    edges = np.linspace(t[0], t[-1], bins + 1)
    dt = np.diff(t)
    out = []
    for v in series:
        area = np.concatenate([[0.0], np.cumsum(v[:-1] * dt)])  # integral up to t[k]
        # Integral up to each edge: area at the last change before it plus the value since.
        k = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 1)
        at_edge = area[k] + v[k] * (edges - t[k])
        out.append(np.diff(at_edge) / np.diff(edges))
    return edges[:-1], out


def _gantt_rects(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles (start, end, lo, hi) per piece of a segment's resource set, and the
    segment each piece belongs to."""
    seg = run.segments
    assert seg is not None
    starts, ends = seg["starting_time"], seg["finish_time"]
    rects, rows = [], []
    for k, text in enumerate(run.allocations):
        for lo, hi in parse_intervals(text):
            rects.append((starts[k], ends[k], lo, hi))
            rows.append(k)
    return np.array(rects, dtype=np.float64).reshape(-1, 4), np.array(rows, dtype=np.int64)


def gantt(run: Run, index: int, out: Path, bgq: bool) -> str | None:
    """Who held which nodes (or midplanes) when, preemptions and failures marked. Up to
    GANTT_JOB_COLOURS segments: one chart, a colour per job. Denser: the whole run as an
    occupancy image (busy fraction per resource band and time bin) above a zoom on
    ZOOM_SEGMENTS segments around the median start, drawn job by job."""
    seg = run.segments
    if seg is None or not len(seg["job_id"]):
        return None
    rects, rows = _gantt_rects(run)
    n_rows = (run.total_nodes // 512) if bgq else run.total_nodes
    n_seg = len(seg["job_id"])
    t0 = _origin([run])
    if n_seg <= GANTT_JOB_COLOURS:
        fig = Figure(figsize=(11, 5.5), layout="constrained")
        ax = fig.subplots()
        _draw_segments(ax, run, rects, rows, t0, np.ones(n_seg, dtype=bool))
        ax.set_title(f"{run.name}: allocations ({n_seg:,} segments)")
        _resource_axis(ax, n_rows, bgq)
        return _save(fig, out, f"gantt_{index}.png")
    fig = Figure(figsize=(11, 9), layout="constrained")
    ax_all, ax_zoom = fig.subplots(2, 1, height_ratios=(1, 1.2))
    days = (rects[:, :2] - t0) / DAY
    _occupancy_image(ax_all, days[:, 0], days[:, 1], rects[:, 2], rects[:, 3], n_rows)
    _mark_interruptions(ax_all, run, t0, np.ones(n_seg, dtype=bool))
    _resource_axis(ax_all, n_rows, bgq)
    ax_all.set_title(f"{run.name}: {n_seg:,} segments, busy fraction per band and time bin")
    order = np.argsort(seg["starting_time"], kind="stable")
    mid = len(order) // 2
    pick = order[max(0, mid - ZOOM_SEGMENTS // 2): mid + ZOOM_SEGMENTS // 2]
    lo_t, hi_t = float(seg["starting_time"][pick].min()), float(seg["starting_time"][pick].max())
    shown = (seg["starting_time"] <= hi_t) & (seg["finish_time"] >= lo_t)
    _draw_segments(ax_zoom, run, rects, rows, t0, shown)
    ax_zoom.set_xlim((lo_t - t0) / DAY, (hi_t - t0) / DAY)
    _resource_axis(ax_zoom, n_rows, bgq)
    ax_zoom.set_title(f"zoom: {int(shown.sum()):,} segments held between day "
                      f"{(lo_t - t0) / DAY:.2f} and {(hi_t - t0) / DAY:.2f}")
    for ax in (ax_all, ax_zoom):
        ax.axvspan((lo_t - t0) / DAY, (hi_t - t0) / DAY, color="none", ec="#d62728", lw=1)
    return _save(fig, out, f"gantt_{index}.png")


def _draw_segments(ax, run: Run, rects: np.ndarray, rows: np.ndarray, t0: float,  # noqa: ANN001
                   shown: np.ndarray) -> None:
    seg = run.segments
    assert seg is not None
    keep = shown[rows]
    r, k = rects[keep], rows[keep]
    x0, x1 = (r[:, 0] - t0) / DAY, (r[:, 1] - t0) / DAY
    verts = np.stack([np.column_stack([x0, r[:, 2]]), np.column_stack([x1, r[:, 2]]),
                      np.column_stack([x1, r[:, 3]]), np.column_stack([x0, r[:, 3]])], axis=1)
    palette = _job_palette()
    colours = [palette[int(seg["job_id"][i]) % len(palette)] for i in k.tolist()]
    ax.add_collection(PolyCollection(list(verts), facecolors=colours, edgecolors="#333333",
                                     linewidths=0.2, rasterized=True))
    if len(x0):
        ax.set_xlim(float(x0.min()), float(x1.max()))
    _mark_interruptions(ax, run, t0, shown)


def _mark_interruptions(ax, run: Run, t0: float, shown: np.ndarray) -> None:  # noqa: ANN001
    """A marker at the end of every preempted, checkpointed or failed segment."""
    seg = run.segments
    assert seg is not None
    reason = seg["end_reason"]
    mid = _segment_mid(run)
    ends = (seg["finish_time"] - t0) / DAY
    for kind, marker, colour in (("preempted", "v", "#d62728"),
                                 ("checkpointed", "v", "#ff7f0e"), ("failed", "x", "black")):
        sel = (reason == kind) & shown
        if sel.any():
            ax.scatter(ends[sel], mid[sel], marker=marker, s=14, c=colour, zorder=3,
                       label=f"{kind} ({int(sel.sum())})", linewidths=0.8)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper right", fontsize=8)


def _resource_axis(ax, n_rows: int, bgq: bool) -> None:  # noqa: ANN001
    ax.set_ylim(0, n_rows)
    ax.set_xlabel("days since the first submission")
    if bgq:
        ax.set_ylabel("midplane")
        ticks = [t for t in range(0, n_rows, 8 if n_rows > 16 else 1)]
        ax.set_yticks([t + 0.5 for t in ticks])
        ax.set_yticklabels([f"M{t:02d}" for t in ticks], fontsize=7)
    else:
        ax.set_ylabel("node")


def _segment_mid(run: Run) -> np.ndarray:
    """Vertical middle of each segment's first resource interval (where markers go)."""
    out = np.zeros(len(run.allocations))
    for k, text in enumerate(run.allocations):
        ivs = parse_intervals(text)
        if ivs:
            out[k] = (ivs[0][0] + ivs[0][1]) / 2
    return out


def _job_palette() -> list[str]:
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    return [matplotlib.colors.to_hex(cmap(i)) for i in range(20)]


def _occupancy_image(ax, x0, x1, lo, hi, n_rows) -> None:  # noqa: ANN001
    """Busy fraction per (resource row band, time bin): the dense Gantt."""
    bins_t, bins_r = 600, min(int(n_rows), 300)
    t_lo, t_hi = float(x0.min()), float(x1.max())
    width = (t_hi - t_lo) / bins_t or 1.0
    grid = np.zeros((bins_r, bins_t))
    scale = bins_r / n_rows
    for a, b, r0, r1 in zip(x0.tolist(), x1.tolist(), lo.tolist(), hi.tolist(), strict=True):
        c0, c1 = (a - t_lo) / width, (b - t_lo) / width
        i0, i1 = int(c0), min(int(np.ceil(c1)), bins_t)
        q0, q1 = int(r0 * scale), max(int(np.ceil(r1 * scale)), int(r0 * scale) + 1)
        for i in range(i0, i1):
            overlap = min(c1, i + 1) - max(c0, i)
            grid[q0:q1, i] += overlap * (r1 - r0) * scale / (q1 - q0)
    im = ax.imshow(np.clip(grid, 0, 1), aspect="auto", origin="lower", cmap="viridis",
                   extent=(t_lo, t_hi, 0, n_rows), vmin=0, vmax=1, interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, label="busy fraction")


def _metric_sets(runs: list[Run], opts: MetricOptions) -> list[dict[str, np.ndarray]]:
    return [per_job(r.jobs, opts) for r in runs]


def distributions(runs: list[Run], out: Path, opts: MetricOptions) -> str:
    """Wait and bounded slowdown by job class and by size x runtime category, runs side by
    side (boxes: quartiles; whiskers: 5th-95th percentiles; means as dots)."""
    sets = _metric_sets(runs, opts)
    present = sorted({int(c) for m in sets for c in np.unique(m["job_class"])})
    groups_class = [(f"class {CLASS_NAMES[CLASS_CODES[c]]}", "job_class", c) for c in present]
    groups_cat = [(cat, "category", k) for k, cat in enumerate(CATEGORIES)]
    fig = Figure(figsize=(12, 8), layout="constrained")
    axes = fig.subplots(2, 2)
    for row, (metric, label, log) in enumerate((
            ("wait_s", "wait (hours)", False), ("bounded_slowdown", "bounded slowdown", True))):
        for col, groups in enumerate((groups_class, groups_cat)):
            ax = axes[row][col]
            _boxes(ax, sets, runs, groups, metric, log)
            ax.set_ylabel(label)
            if row == 0:
                ax.set_title("by job class" if col == 0 else "by size x runtime category")
    fig.suptitle(f"Wait and bounded slowdown (τ = {opts.bsld_bound_s:g} s); categories: wide "
                 f"> {opts.narrow_max_nodes} nodes, long > {opts.short_max_s / 3600:g} h "
                 f"({opts.category_by})", fontsize=10)
    return _save(fig, out, "distributions.png")


def _boxes(ax, sets, runs, groups, metric, log) -> None:  # noqa: ANN001
    width = 0.8 / max(len(runs), 1)
    for i, (m, run) in enumerate(zip(sets, runs, strict=True)):
        data, positions = [], []
        for g, (_, key, value) in enumerate(groups):
            values = m[metric][m[key] == value]
            values = values[np.isfinite(values)]
            if metric == "wait_s":
                values = values / 3600.0
            if len(values):
                data.append(values)
                positions.append(g + (i - (len(runs) - 1) / 2) * width)
        if not data:
            continue
        colour = _run_color(i)
        bp = ax.boxplot(data, positions=positions, widths=width * 0.85, whis=(5, 95),
                        showfliers=False, patch_artist=True, manage_ticks=False)
        for patch in bp["boxes"]:
            patch.set(facecolor=colour, alpha=0.35, edgecolor=colour)
        for part in ("whiskers", "caps", "medians"):
            for line in bp[part]:
                line.set(color=colour)
        ax.scatter(positions, [float(np.mean(d)) for d in data], color=colour, s=12, zorder=3,
                   label=run.name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups], fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=7, loc="upper left")


SIZE_EDGES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768,
              65536)
RUNTIME_EDGES_H = (0, 1 / 6, 1, 3, 6, 12, 24, float("inf"))


def wait_ratio_heatmap(base: Run, other: Run, index: int, out: Path,
                       opts: MetricOptions) -> str | None:
    """Mean wait of `other` over mean wait of `base` per size x runtime cell (the plan-based
    paper's comparison): below 1 (blue) `other` waits less."""
    a, b = per_job(base.jobs, opts), per_job(other.jobs, opts)
    top = max(int(a["alloc_nodes"].max(initial=1)), int(b["alloc_nodes"].max(initial=1)))
    sizes = [e for e in SIZE_EDGES if e <= top] + [top + 1]
    sizes = sorted(set(sizes))
    if len(sizes) < 2:
        return None
    runtimes = np.array(RUNTIME_EDGES_H) * 3600.0
    ratio = np.full((len(runtimes) - 1, len(sizes) - 1), np.nan)
    counts = np.zeros_like(ratio, dtype=int)
    cells = [(_cell_index(m["alloc_nodes"], sizes), _cell_index(m["executed"], runtimes))
             for m in (a, b)]
    for i in range(len(runtimes) - 1):
        for j in range(len(sizes) - 1):
            wa, wb = ((m["wait_s"][(cs == j) & (cr == i)]) for m, (cs, cr) in
                      zip((a, b), cells, strict=True))
            counts[i, j] = len(wa) + len(wb)
            if len(wa) and len(wb) and wa.mean() > 0:
                ratio[i, j] = wb.mean() / wa.mean()
    fig = Figure(figsize=(11, 5), layout="constrained")
    ax = fig.subplots()
    # Colours on log10 of the ratio, clipped to 1/1000..1000 (a cell can wait 0 s).
    shade = np.log10(np.clip(ratio, 1e-3, 1e3))
    finite = shade[np.isfinite(shade)]
    span = max(float(np.abs(finite).max()) if len(finite) else 1.0, 0.3)
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-span, vmax=span)
    im = ax.imshow(shade, cmap="coolwarm", norm=norm, origin="lower", aspect="auto")
    for i in range(ratio.shape[0]):
        for j in range(ratio.shape[1]):
            text = "–" if not np.isfinite(ratio[i, j]) else f"{ratio[i, j]:.2f}"
            if counts[i, j]:
                ax.text(j, i, f"{text}\n{counts[i, j]}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(sizes) - 1))
    ax.set_xticklabels([f"{sizes[j]}-{sizes[j + 1] - 1}" if sizes[j + 1] - 1 > sizes[j]
                        else f"{sizes[j]}" for j in range(len(sizes) - 1)],
                       rotation=45, fontsize=7)
    ax.set_yticks(range(len(runtimes) - 1))
    ax.set_yticklabels(["<10m", "10m-1h", "1-3h", "3-6h", "6-12h", "12-24h", ">24h"],
                       fontsize=8)
    ax.set_xlabel("nodes held")
    ax.set_ylabel("runtime")
    fig.colorbar(im, ax=ax, label=f"log10(mean wait {other.name} / {base.name})")
    ax.set_title(f"Wait ratio {other.name} / {base.name} per cell (number: ratio, then jobs "
                 "in both runs)", fontsize=9)
    return _save(fig, out, f"wait_ratio_{index}.png")


def _cell_index(values: np.ndarray, edges) -> np.ndarray:  # noqa: ANN001
    """Index of the [edges[k], edges[k + 1]) bin each value falls in."""
    return np.searchsorted(np.asarray(edges, dtype=np.float64), values, side="right") - 1


def sweep_figures(rows: list[dict], out: Path, metric: str, by: str) -> str:  # noqa: C901
    """Sweep table: `metric` against `by` for every other input combination (one line or
    box per group)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if r.get("status") != "ok" or r.get(metric) in (None, ""):
            continue
        key = ", ".join(f"{k}={r[k]}" for k in sorted(r) if k.startswith("in_")
                        and k not in (by, "in_seed"))
        groups.setdefault(key or "all", {}).setdefault(str(r[by]), []).append(float(r[metric]))
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    ax = fig.subplots()
    xs = sorted({x for g in groups.values() for x in g}, key=_natural)
    for i, (label, values) in enumerate(sorted(groups.items())):
        means = [float(np.mean(values[x])) if x in values else np.nan for x in xs]
        lows = [float(np.min(values[x])) if x in values else np.nan for x in xs]
        highs = [float(np.max(values[x])) if x in values else np.nan for x in xs]
        pos = np.arange(len(xs))
        ax.plot(pos, means, marker="o", color=_run_color(i), label=label.replace("in_", ""))
        ax.fill_between(pos, lows, highs, color=_run_color(i), alpha=0.15)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels(xs, rotation=30, fontsize=8)
    ax.set_xlabel(by.replace("in_", ""))
    ax.set_ylabel(metric)
    if metric.startswith(("mean_wait", "mean_bounded", "mean_slowdown")):
        positive = [v for g in groups.values() for vs in g.values() for v in vs if v > 0]
        if positive and max(positive) / max(min(positive), 1e-9) > 100:
            ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title(f"{metric} by {by.replace('in_', '')} (line: mean over seeds; band: min-max)")
    return _save(fig, out, f"sweep_{metric}_by_{by.replace('in_', '')}.png")


def _natural(text: str) -> tuple[int, float | str]:
    try:
        return (0, float(text))
    except ValueError:
        return (1, text)
