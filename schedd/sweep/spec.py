"""A sweep from a TOML file or from flags (docs/sweep.md).

```toml
traces = ["traces/lublin_256.swf"]        # relative to the file
clusters = ["nodes:256"]                  # optional; default: MaxNodes of each trace
runs = ["easy", "los", "delayed-los C_s=2"]
seeds = [0, 1, 2]
[options]                                 # policy-option axes, added to every run
[engine]                                  # engine-flag axes (names without --)
mtbf = [0, 50]
[[workloads]]                             # transforms, each one axis value
kind = "realtime"
percent = 10
```
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from .cells import SweepError, SweepSpec, check_transform

_KEYS = {"traces", "clusters", "runs", "seeds", "options", "engine", "workloads"}


def _strings(value: Any, what: str) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (str, int, float, bool)) for v in values):
        raise SweepError(f"{what} must be a value or a non-empty list of values")
    return [str(v).lower() if isinstance(v, bool) else str(v) for v in values]


def spec_from_toml(path: str) -> SweepSpec:
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text())
    except OSError as err:
        raise SweepError(f"cannot read {path}: {err.strerror}") from None
    except tomllib.TOMLDecodeError as err:
        raise SweepError(f"{path}: {err}") from None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise SweepError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    base = file.parent
    traces = [str((base / t) if not Path(t).is_absolute() else Path(t))
              for t in _strings(data.get("traces", []), "traces")] if "traces" in data else []
    return _spec(traces, data, f"{path}: ")


def _spec(traces: list[str], data: dict[str, Any], where: str) -> SweepSpec:
    try:
        seeds = [int(s) for s in _strings(data.get("seeds", [0]), "seeds")]
    except ValueError:
        raise SweepError(f"{where}seeds must be integers") from None
    for table in ("options", "engine"):
        if not isinstance(data.get(table, {}), dict):
            raise SweepError(f"{where}[{table}] must be a table of KEY = [values]")
    workloads = data.get("workloads", [{}])
    if not isinstance(workloads, list) or not all(isinstance(w, dict) for w in workloads):
        raise SweepError(f"{where}workloads must be a list of tables ([[workloads]])")
    try:
        return SweepSpec(
            traces=traces,
            runs=_strings(data.get("runs", []), "runs") if "runs" in data else [],
            seeds=seeds,
            clusters=_strings(data.get("clusters", [""]), "clusters"),
            options={k: _strings(v, f"options.{k}") for k, v in data.get("options", {}).items()},
            engine={k: _strings(v, f"engine.{k}") for k, v in data.get("engine", {}).items()},
            workloads=[check_transform(dict(w)) for w in workloads] or [{}],
        )
    except SweepError as err:
        raise SweepError(f"{where}{err}") from None


def _axis(text: str, what: str) -> tuple[str, list[str]]:
    name, sep, values = text.partition("=")
    if not sep or not name or not values:
        raise SweepError(f"{what} {text!r} must be NAME=V1,V2,...")
    return name, values.split(",")


def spec_from_flags(traces: list[str], runs: list[str], seeds: str, clusters: list[str],
                    options: list[str], engine: list[str], workloads: list[str]) -> SweepSpec:
    """The flag form: --trace, --run, --seeds 0,1,2, --cluster, --opt K=V1,V2,
    --engine FLAG=V1,V2, --workload KIND:K=V,K=V (each --workload one axis value)."""
    data: dict[str, Any] = {
        "runs": runs, "seeds": seeds.split(",") if seeds else ["0"],
        "clusters": clusters or [""],
        "options": dict(_axis(o, "--opt") for o in options),
        "engine": dict(_axis(e, "--engine") for e in engine),
        "workloads": [_workload_flag(w) for w in workloads] or [{}],
    }
    return _spec(traces, data, "")


def _workload_flag(text: str) -> dict[str, Any]:
    kind, _, rest = text.partition(":")
    wl: dict[str, Any] = {"kind": kind}
    for part in filter(None, rest.split(",")):
        k, sep, v = part.partition("=")
        if not sep:
            raise SweepError(f"--workload {text!r}: expected KIND:KEY=VALUE,...")
        wl[k] = v
    return wl
