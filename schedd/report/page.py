"""`schedd report`: one static HTML page plus its PNGs, for one run or several side by side.

Figures: utilisation and queue length over time, a Gantt chart per run (node ranges on a
pool, midplanes on Blue Gene/Q), wait and bounded-slowdown distributions by class and by
size x runtime category, a wait-ratio heatmap of every run against the first, and the
summary table with each figure's definition (docs/metrics.md).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ..metrics import MetricOptions
from . import figures
from .runs import Run, RunDirError, load_run, unique_names

# Summary rows: (label, summary key, how to show it, definition, docs/metrics.md anchor).
SUMMARY_ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    ("policy", "run.policy", "text", "scheduling policy and cluster", ""),
    ("cluster", "run.cluster", "text", "machine the run used", ""),
    ("jobs", "jobs", "int", "jobs counted (after the window filter)", "whole-run-metrics"),
    ("started", "started", "int", "jobs that started at least once", "whole-run-metrics"),
    ("utilisation", "utilization", "pct",
     "Σ busy node-seconds / (nodes × (last end − first submit))", "whole-run-metrics"),
    ("windowed utilisation", "utilization_window", "pct",
     "busy node-seconds inside [first submit, last submit] / capacity of that window",
     "whole-run-metrics"),
    ("productive utilisation", "productive_utilization", "pct",
     "Σ useful node-seconds / capacity (real-time paper eq. 26)", "whole-run-metrics"),
    ("mean wait (h)", "mean_wait_s", "hours", "first start − submit, started jobs",
     "per-job-metrics"),
    ("p50 wait (h)", "stats.all.wait_s.p50", "hours", "median wait", "groups-and-statistics"),
    ("p95 wait (h)", "stats.all.wait_s.p95", "hours", "95th percentile of wait",
     "groups-and-statistics"),
    ("mean response (h)", "mean_response_s", "hours", "end − submit", "per-job-metrics"),
    ("mean bounded slowdown", "mean_bounded_slowdown", "num",
     "max(1, response / max(r, τ)), τ = bsld_bound_s", "per-job-metrics"),
    ("mean bounded slowdown (600 s)", "mean_bounded_slowdown_600", "num",
     "(end − submit − r + max(r, 600)) / max(r, 600), the real-time paper's form",
     "per-job-metrics"),
    ("preemptions", "preemptions", "int", "preemptions, all jobs", "whole-run-metrics"),
    ("checkpoints", "checkpoints", "int", "checkpoints written (periodic and preemption)",
     "whole-run-metrics"),
    ("failures", "failures", "int", "interruptions by node failures", "whole-run-metrics"),
    ("backfill ratio", "backfill_ratio", "pct",
     "jobs started ahead of an earlier-submitted waiting job", "whole-run-metrics"),
    ("makespan (days)", "makespan_s", "days", "last end − first submit", "whole-run-metrics"),
)


class ReportError(ValueError):
    """Bad report input, said in one sentence."""


def _lookup(summary: dict[str, Any], key: str) -> Any:
    value: Any = summary
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _show(value: Any, how: str) -> str:
    if value is None:
        return "–"
    if how == "text":
        return html.escape(str(value))
    if how == "int":
        return f"{int(value):,}"
    if how == "pct":
        return f"{100 * float(value):.1f}%"
    if how == "hours":
        return f"{float(value) / 3600:.2f}"
    if how == "days":
        return f"{float(value) / 86_400:.2f}"
    return f"{float(value):.3f}"


def summary_table(runs: list[Run], docs: str) -> str:
    head = "".join(f"<th>{html.escape(r.name)}</th>" for r in runs)
    rows = []
    for label, key, how, definition, anchor in SUMMARY_ROWS:
        cells = "".join(f"<td>{_show(_lookup(r.summary, key), how)}</td>" for r in runs)
        link = (f'<a href="{html.escape(docs)}metrics.md#{anchor}">{html.escape(label)}</a>'
                if anchor and docs else html.escape(label))
        rows.append(f'<tr><th title="{html.escape(definition)}">{link}</th>{cells}'
                    f'<td class="def">{html.escape(definition)}</td></tr>')
    return (f'<table class="summary"><thead><tr><th>metric</th>{head}<th>definition</th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1250px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table.summary { border-collapse: collapse; font-size: 0.9em; }
table.summary th, table.summary td { border: 1px solid #ccc; padding: 3px 8px; }
table.summary td { text-align: right; } table.summary td.def { text-align: left; color: #555; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
"""

# Counts the images that decoded, for whoever loads the page headless (tests/test_report.py).
_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-figures', imgs.length);
  document.body.setAttribute('data-figures-loaded', ok);
});
"""


def _figure(name: str, caption: str) -> str:
    return (f'<figure><img src="{html.escape(name)}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def build_report(run_dirs: list[str], out_dir: str | Path, *, docs: str | None = None,
                 options: MetricOptions | None = None) -> Path:
    """Write out_dir/index.html and its PNGs; returns the page's path."""
    if not run_dirs:
        raise ReportError("give at least one run directory")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ReportError(f"cannot create {out}: {err.strerror}") from None
    names = unique_names(run_dirs)
    try:
        runs = [load_run(d, n) for d, n in zip(run_dirs, names, strict=True)]
    except RunDirError as err:
        raise ReportError(str(err)) from None
    opts = options or MetricOptions()
    docs = docs if docs is not None else _default_docs()
    parts: list[str] = []
    title = ("Run " + runs[0].name if len(runs) == 1
             else "Runs " + ", ".join(r.name for r in runs))
    parts.append(f"<h1>{html.escape(title)}</h1>")
    parts.append("<h2>Summary</h2>" + summary_table(runs, docs))
    name = figures.utilisation_and_queue(runs, out)
    if name:
        parts.append("<h2>Utilisation and queue</h2>" + _figure(
            name, "Busy nodes over nodes up, and waiting jobs, at every change "
            "(timeseries.csv)."))
    gantts = []
    for i, run in enumerate(runs):
        bgq = run.segments is not None and any(p for p in run.segments["partition"])
        g = figures.gantt(run, i, out, bgq)
        if g:
            gantts.append(_figure(g, f"{run.name} ({run.policy} on {run.cluster}): "
                                  "segments.csv; markers at the end of a preempted, "
                                  "checkpointed or failed segment."))
    if gantts:
        parts.append("<h2>Allocations</h2>" + "".join(gantts))
    parts.append("<h2>Distributions</h2>" + _figure(
        figures.distributions(runs, out, opts),
        "Boxes: quartiles; whiskers: 5th to 95th percentile; dots: means (jobs.csv, started "
        "jobs)."))
    heat = [figures.wait_ratio_heatmap(runs[0], r, i, out, opts)
            for i, r in enumerate(runs[1:], start=1)]
    heat_html = [_figure(h, f"Mean wait of {r.name} over {runs[0].name} by nodes held x "
                         "runtime; below 1 (blue) the run waits less.")
                 for h, r in zip(heat, runs[1:], strict=True) if h]
    if heat_html:
        parts.append("<h2>Wait ratio</h2>" + "".join(heat_html))
    page = out / "index.html"
    page.write_text(_page(title, "".join(parts)))
    return page


def build_sweep_report(table: str | Path, out_dir: str | Path, metrics: list[str],
                       by: list[str]) -> Path:
    """A page of `sweep_figures` for a sweep's tidy table (CSV)."""
    import csv

    path = Path(table)
    if not path.is_file():
        raise ReportError(f"{path}: no such sweep table")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ReportError(f"{path}: the sweep table has no rows")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inputs = [k for k in rows[0] if k.startswith("in_")]
    by = by or [k for k in inputs if k != "in_seed" and len({r[k] for r in rows}) > 1][:2]
    unknown = [m for m in metrics if m not in rows[0]]
    if unknown:
        raise ReportError(f"{path}: no column {', '.join(unknown)}")
    parts = [f"<h1>Sweep {html.escape(path.name)}</h1>",
             f"<p>{len(rows)} cells, {sum(r.get('status') == 'ok' for r in rows)} ok.</p>"]
    for metric in metrics:
        for b in by:
            key = b if b.startswith("in_") else f"in_{b}"
            if key not in rows[0]:
                raise ReportError(f"{path}: no input column {b}")
            name = figures.sweep_figures(rows, out, metric, key)
            parts.append(_figure(name, f"{metric} by {b}"))
    page = out / "index.html"
    page.write_text(_page(f"Sweep {path.name}", "".join(parts)))
    return page


def _page(title: str, body: str) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style>"
            f"<script>{_SCRIPT}</script></head><body>{body}</body></html>\n")


def _default_docs() -> str:
    """The project's docs/ next to the package when run from a checkout; else no links
    (each row still carries its definition)."""
    here = Path(__file__).resolve().parents[2] / "docs"
    return here.as_uri() + "/" if (here / "metrics.md").is_file() else ""
