"""A sweep's cells: every combination of its axes, each keyed by a hash of its inputs.

A cell is one simulation: a trace (by content), a cluster, a run spec (`POLICY
[KEY=VALUE ...] [--engine-flag VALUE ...]`, as `schedd compare` takes), a seed, extra
policy options and engine flags from the grid axes, and a workload transform. Its key is
the SHA-256 of all of that plus the code version (a hash of the schedd sources) and the
content of every file an option or engine flag names (an agent's `model=FILE`: a model
saved again at the same path is another input), so a cached result is reused only for
exactly the same inputs and code.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Workload transforms a cell can apply before simulating, and their parameters.
TRANSFORMS = {
    "realtime": ("percent", "mode", "aps_runtimes", "non_checkpointable"),
    "accuracy": ("alpha",),
    "hybrid": ("od_share", "mix"),
}


class SweepError(ValueError):
    """A bad sweep file or flag: one sentence for the user."""


@dataclass(frozen=True)
class Cell:
    trace: str  # path as given (the key uses the content hash, not the path)
    trace_sha: str
    cluster: str  # "" = nodes:<MaxNodes of the trace>
    run: str
    seed: int
    options: tuple[tuple[str, str], ...] = ()  # extra KEY=VALUE from the [options] axes
    engine: tuple[tuple[str, str], ...] = ()  # extra --flag VALUE from the [engine] axes
    transform: tuple[tuple[str, Any], ...] = ()  # (("kind", "realtime"), ("percent", 10))
    code: str = ""
    # (value, SHA-256) of each option or engine-flag value that names a file when the
    # cell is made (`named_files`): the key covers what the file holds, not its name.
    files: tuple[tuple[str, str], ...] = ()
    key: str = field(default="", compare=False)

    def inputs(self) -> dict[str, Any]:
        """The cell's input columns of the tidy table (in_*)."""
        out: dict[str, Any] = {"in_trace": Path(self.trace).name,
                               "in_cluster": self.cluster or "trace", "in_run": self.run,
                               "in_seed": self.seed}
        out.update({f"in_opt_{k}": v for k, v in self.options})
        out.update({f"in_eng_{k}": v for k, v in self.engine})
        t = dict(self.transform)
        kind = t.pop("kind", "")
        out["in_workload"] = kind or "none"
        out.update({f"in_wl_{k}": v for k, v in t.items()})
        return out


def content_key(cell: Cell) -> str:
    body = asdict(cell)
    body.pop("key")
    body.pop("trace")  # the content hash stands for the trace
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def file_sha(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as err:
        raise SweepError(f"cannot read trace {path}: {err.strerror}") from None
    return h.hexdigest()


def named_files(run: str, options: tuple[tuple[str, str], ...] = (),
                engine: tuple[tuple[str, str], ...] = ()) -> tuple[tuple[str, str], ...]:
    """(value, SHA-256 of its bytes) of each value in the run spec (`KEY=VALUE` options and
    engine-flag values) and in the option and engine axes that names a readable file, in
    the order given, each once. A value that names no file (a heuristic's name, a number)
    adds nothing."""
    import shlex

    try:
        words = shlex.split(run)[1:]
    except ValueError:  # the run spec's own parser says what is wrong with it
        words = []
    values = [w.split("=", 1)[1] if "=" in w else w for w in words if not w.startswith("--")]
    values += [v for _, v in options] + [v for _, v in engine]
    out: dict[str, str] = {}
    for value in values:
        if value and value not in out and os.path.isfile(value):
            try:
                out[value] = file_sha(value)
            except SweepError:
                continue  # unreadable: the run itself will say so
    return tuple(out.items())


def code_version() -> str:
    """A hash of every schedd source file: a code change invalidates cached cells.
    SCHEDD_SWEEP_CODE_VERSION pins it instead (to keep a cache across edits known not to
    change results; the tests pin it so concurrent edits do not move the keys)."""
    pinned = os.environ.get("SCHEDD_SWEEP_CODE_VERSION")
    if pinned:
        return pinned
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class SweepSpec:
    traces: list[str]
    runs: list[str]
    seeds: list[int] = field(default_factory=lambda: [0])
    clusters: list[str] = field(default_factory=lambda: [""])
    options: dict[str, list[str]] = field(default_factory=dict)
    engine: dict[str, list[str]] = field(default_factory=dict)
    workloads: list[dict[str, Any]] = field(default_factory=lambda: [{}])


def expand(spec: SweepSpec) -> list[Cell]:
    """Every cell, in a fixed order: traces, clusters, workloads, runs, options, engine
    flags, seeds (the table's row order)."""
    if not spec.traces:
        raise SweepError("a sweep needs at least one trace")
    if not spec.runs:
        raise SweepError("a sweep needs at least one run")
    for wl in spec.workloads:
        check_transform(wl)
    code = code_version()
    shas = {t: file_sha(t) for t in spec.traces}
    opt_names, eng_names = sorted(spec.options), sorted(spec.engine)
    cells = []
    for trace, cluster, wl, run in itertools.product(spec.traces, spec.clusters,
                                                     spec.workloads, spec.runs):
        for opt_values in itertools.product(*(spec.options[k] for k in opt_names)):
            for eng_values in itertools.product(*(spec.engine[k] for k in eng_names)):
                for seed in spec.seeds:
                    options = tuple(zip(opt_names, map(str, opt_values), strict=True))
                    engine = tuple(zip(eng_names, map(str, eng_values), strict=True))
                    cell = Cell(trace, shas[trace], cluster, run, int(seed), options, engine,
                                tuple(sorted(wl.items())), code,
                                named_files(run, options, engine))
                    cells.append(_keyed(cell))
    return cells


def _keyed(cell: Cell) -> Cell:
    return Cell(**{**asdict(cell), "key": content_key(cell),
                   "options": cell.options, "engine": cell.engine,
                   "transform": cell.transform, "files": cell.files})


def check_transform(wl: dict[str, Any]) -> dict[str, Any]:
    kind = wl.get("kind")
    if not wl:
        return {}
    if kind not in TRANSFORMS:
        raise SweepError(f"workload kind {kind!r} is not one of {', '.join(TRANSFORMS)}")
    unknown = sorted(set(wl) - {"kind", *TRANSFORMS[kind]})
    if unknown:
        raise SweepError(f"workload {kind} takes {', '.join(TRANSFORMS[kind])}, not "
                         f"{', '.join(unknown)}")
    return wl
