"""Read a run directory (what `schedd simulate` or `schedd-replay` wrote) back for figures."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.results import CLASS_CODES, COLUMNS, STATE_CODES


class RunDirError(ValueError):
    """A run directory that cannot be reported on (one sentence for the user)."""


@dataclass
class Run:
    name: str  # label in legends: the directory's name, made unique by the caller
    path: Path
    summary: dict[str, Any]
    jobs: dict[str, np.ndarray]  # result columns of jobs.csv
    segments: dict[str, np.ndarray] | None  # segments.csv columns, if the run has it
    allocations: list[str]  # segments.csv allocated_resources, row for row
    timeseries: dict[str, np.ndarray] | None

    @property
    def total_nodes(self) -> int:
        return int(self.summary.get("total_nodes") or self.summary["run"]["total_nodes"])

    @property
    def cluster(self) -> str:
        return str(self.summary.get("run", {}).get("cluster", ""))

    @property
    def policy(self) -> str:
        return str(self.summary.get("run", {}).get("policy", ""))


_SEGMENT_NUMERIC = ("job_id", "starting_time", "finish_time", "nodes", "segment")
_SEGMENT_TEXT = ("partition", "end_reason", "job_class")


def load_run(path: str | Path, name: str | None = None) -> Run:
    d = Path(path)
    summary_path = d / "summary.json"
    if not summary_path.is_file():
        raise RunDirError(f"{d}: not a run directory (no summary.json)")
    try:
        summary = json.loads(summary_path.read_text())
    except json.JSONDecodeError as err:
        raise RunDirError(
            f"{summary_path}: not valid JSON ({err.msg}, line {err.lineno})") from None
    jobs = _read_jobs(d / "jobs.csv")
    segments, allocations = _read_segments(d / "segments.csv")
    timeseries = _read_numeric(d / "timeseries.csv")
    return Run(name or d.name, d, summary, jobs, segments, allocations, timeseries)


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise RunDirError(f"{path}: empty file") from None
        return header, list(reader)


def _read_jobs(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise RunDirError(f"{path.parent}: not a run directory (no jobs.csv)")
    header, rows = _rows(path)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise RunDirError(f"{path}: lacks columns {', '.join(missing)}")
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(header)
    out: dict[str, np.ndarray] = {}
    for name, values in zip(header, cols, strict=True):
        code = COLUMNS.get(name)
        if code is not None:
            try:
                out[name] = np.array(values, dtype=np.float64).astype(
                    np.int64 if code == "q" else np.float64)
            except ValueError as err:
                raise RunDirError(f"{path}: column {name}: {err}") from None
    # The text columns win over the codes if both are there (they are written together).
    if "class" in header:
        out["job_class"] = np.array([CLASS_CODES.index(c) for c in cols[header.index("class")]],
                                    dtype=np.int64)
    if "state" in header:
        out["final_state"] = np.array(
            [STATE_CODES.index(s) for s in cols[header.index("state")]], dtype=np.int64)
    return out


def _read_segments(path: Path) -> tuple[dict[str, np.ndarray] | None, list[str]]:
    if not path.is_file():
        return None, []
    header, rows = _rows(path)
    index = {name: i for i, name in enumerate(header)}
    out: dict[str, np.ndarray] = {}
    for name in _SEGMENT_NUMERIC:
        out[name] = np.array([float(r[index[name]]) for r in rows], dtype=np.float64)
    for name in _SEGMENT_TEXT:
        out[name] = np.array([r[index[name]] for r in rows], dtype=object)
    return out, [r[index["allocated_resources"]] for r in rows]


def _read_numeric(path: Path) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    header, rows = _rows(path)
    data = np.array(rows, dtype=np.float64).reshape(len(rows), len(header))
    return {name: data[:, i] for i, name in enumerate(header)}


def unique_names(paths: list[str]) -> list[str]:
    """Legend labels: directory names, with a parent prefix (or a number) where two clash."""
    base = [Path(p).resolve().name for p in paths]
    names = [f"{Path(p).resolve().parent.name}/{n}" if base.count(n) > 1 else n
             for p, n in zip(paths, base, strict=True)]
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        seen[n] = seen.get(n, 0) + 1
        if seen[n] > 1:
            names[i] = f"{n} ({seen[n]})"
    return names


def parse_intervals(text: str) -> list[tuple[int, int]]:
    """Batsim interval set "0-3 8" -> [(0, 4), (8, 9)] (half-open)."""
    out = []
    for part in text.split():
        lo, _, hi = part.partition("-")
        out.append((int(lo), int(hi or lo) + 1))
    return out
