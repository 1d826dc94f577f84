"""Run one sweep cell where a Dask worker (or the client) calls it, caching its result.

The cache holds, per cell key, `row.json` (the tidy-table row: every scalar figure of the
run's summary, dotted, plus the cell's inputs) and `results.npz` (the per-job result
columns, for pooling across cells as `schedd compare` does). Both are written to a
temporary name and renamed, so an interrupted sweep never leaves half a cell: a cell is
cached completely or not at all. Failures are returned as rows with `status = error` and
are not cached (a rerun tries them again).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .cells import Cell
from .orphans import partial_prefix


def cell_dir(cache: str | Path, key: str) -> Path:
    return Path(cache) / key[:2] / key


def load_cached(cache: str | Path, key: str) -> dict[str, Any] | None:
    path = cell_dir(cache, key) / "row.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def load_results(cache: str | Path, key: str) -> dict[str, np.ndarray]:
    with np.load(cell_dir(cache, key) / "results.npz") as data:
        return {name: data[name] for name in data.files}


def flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar figures of a summary with dotted keys (stats.all.wait_s.p50, ...)."""
    out: dict[str, Any] = {}
    for k, v in summary.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif isinstance(v, (int, float, str, bool)) or v is None:
            out[name] = v
    return out


def run_cell(cell: Cell, cache: str, trace_bytes: bytes | None = None) -> dict[str, Any]:
    """The cell's row, from the cache or by simulating it (then cached)."""
    cached = load_cached(cache, cell.key)
    if cached is not None:
        return cached
    row: dict[str, Any] = {"key": cell.key, **cell.inputs()}
    try:
        results, summary = simulate_cell(cell, trace_bytes)
    except Exception as err:  # a bad cell is reported with its inputs, not fatal
        row.update(status="error", error=f"{type(err).__name__}: {err}",
                   where=traceback.format_exc(limit=-1).strip().splitlines()[-1])
        return row
    row["status"] = "ok"
    row.update(flatten(summary))
    _store(cache, cell.key, row, results)
    return row


def _store(cache: str, key: str, row: dict[str, Any], results: dict[str, np.ndarray]) -> None:
    final = cell_dir(cache, key)
    final.parent.mkdir(parents=True, exist_ok=True)
    # Named for this process (orphans.py): if it is killed outright, the next sweep
    # knows the folder for abandoned; any other failure (Ctrl-C) removes it here.
    tmp = Path(tempfile.mkdtemp(prefix=partial_prefix(key), dir=final.parent))
    try:
        np.savez_compressed(tmp / "results.npz", **results)  # type: ignore[arg-type]
        (tmp / "row.json").write_text(json.dumps(row, allow_nan=False,
                                                 default=_json_default))
        os.replace(tmp, final)
    except OSError:  # another worker cached the same cell first: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
        if not final.is_dir():
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def simulate_cell(cell: Cell, trace_bytes: bytes | None = None
                  ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Per-job result columns and summary of one cell."""
    from ..core.cluster import NodePool
    from ..core.cluster_spec import parse_cluster
    from ..metrics import MetricOptions
    from ..options import engine_options_from
    from ..policies import make_policy
    from ..sim import max_job_nodes, simulate
    from ..traces import normalize, read_trace
    from .runspec import engine_args, parse_run

    raw = read_trace(_local_trace(cell, trace_bytes))
    cluster = parse_cluster(cell.cluster) if cell.cluster else None
    raw = _transform(raw, dict(cell.transform), cell.seed,
                     max_job_nodes(cluster) if cluster else None)
    trace = normalize(raw, max_nodes=max_job_nodes(cluster) if cluster else None)
    if cluster is None:
        cluster = NodePool(trace.max_nodes)
    spec = parse_run(cell.run)
    options = list(spec.options) + [f"{k}={v}" for k, v in cell.options]
    flags = list(spec.engine_flags)
    for k, v in cell.engine:
        flags += [f"--{k}"] if v == "true" else [] if v == "false" else [f"--{k}", v]
    # The cell's axes added to the spec's own words, without printing and parsing again.
    spec = replace(spec, label=shlex.join([spec.policy, *options, *flags]),
                   options=tuple(options), engine_flags=tuple(flags))
    policy = make_policy(spec.policy, list(spec.options), cluster)
    engine_options = engine_options_from(engine_args(spec), policy)
    run = simulate(trace, cluster, policy, seed=cell.seed, engine_options=engine_options,
                   metric_options=MetricOptions(prompt_grace_s=engine_options.warning_s))
    return {k: np.ascontiguousarray(v) for k, v in run.results.items()}, run.summary


def _local_trace(cell: Cell, trace_bytes: bytes | None) -> str:
    """The trace's path on this machine: as given, or the scattered bytes written once
    per worker (named by content, so every cell of the trace reuses the file)."""
    if trace_bytes is None:
        return cell.trace
    suffix = ".gz" if cell.trace.endswith(".gz") else Path(cell.trace).suffix or ".swf"
    path = Path(tempfile.gettempdir()) / f"schedd-sweep-{cell.trace_sha[:24]}{suffix}"
    if not path.is_file():
        tmp = path.with_name(path.name + f".{os.getpid()}")
        tmp.write_bytes(trace_bytes)
        os.replace(tmp, path)
    return str(path)


def _transform(raw: Any, wl: dict[str, Any], seed: int, target_nodes: int | None) -> Any:
    kind = wl.pop("kind", None)
    if kind is None:
        return raw
    if kind == "accuracy":
        from ..traces.workload import with_estimate_accuracy

        return with_estimate_accuracy(raw, float(wl["alpha"]))
    if kind == "realtime":
        from ..traces.realtime import RealtimeParams, load_aps_runtimes, make_realtime

        if float(wl["percent"]) == 0:
            return raw  # 0%: the plain trace, so a sweep can hold the baseline
        runtimes = load_aps_runtimes(wl["aps_runtimes"]) if wl.get("aps_runtimes") else None
        params = RealtimeParams(percent=float(wl["percent"]), mode=wl.get("mode", "default"),
                                seed=seed,
                                non_checkpointable=float(wl.get("non_checkpointable", 0.0)))
        if target_nodes:
            params = replace(params, target_nodes=target_nodes)
        return make_realtime(raw, params, runtimes)[0]
    if kind == "hybrid":
        from ..traces.hybrid import HybridParams, make_hybrid

        params_h = HybridParams(od_share=float(wl.get("od_share", 0.1)),
                                mix=str(wl.get("mix", "W5")), seed=seed)
        return make_hybrid(raw, params_h)[0]
    raise ValueError(f"unknown workload kind {kind!r}")
