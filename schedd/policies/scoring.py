"""Scoring functions that choose the next job out of a window, and their model files.

A scoring function maps the window's observation (one row of `agent.JOB_FEATURES` per
waiting job, in queue order) to one score per job; the agent starts the job of lowest
score, the earliest in queue order on a tie. The built-in ones are the heuristics
RLScheduler (Zhang et al., SC'20) compares with: FCFS, SJF, smallest first, WFP3, UNICEF
and F1-F4 of Carastan-Santos and de Camargo (SC'17), written as RLScheduler's
HPCSimPickJobs.py scores them (r requested time, n requested nodes, s submit time, w wait
so far). A learned one is a linear function or a one-hidden-layer perceptron over
`learned_inputs`, saved as JSON (`save_model`, `load_model`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# Columns of a job row of the observation (schedd/policies/agent.py builds them).
PRESENT, WAIT, NODES, WALLTIME, ESTIMATE, SUBMIT, USER, PROJECT, QUEUE, CLASS, FITS = range(11)
JOB_FEATURES = ("present", "wait_s", "nodes", "walltime_s", "estimate_s", "submit_s",
                "user", "project", "queue", "job_class", "fits_now")

FORMAT = "schedd-agent/1"


def _log10_positive(x: np.ndarray) -> np.ndarray:
    """log10 with RLScheduler's guard: values <= 0 count as 0.1."""
    return np.log10(np.where(x > 0, x, 0.1))


def fcfs(jobs: np.ndarray) -> np.ndarray:
    return jobs[:, SUBMIT]


def sjf(jobs: np.ndarray) -> np.ndarray:
    return jobs[:, WALLTIME]


def smallest(jobs: np.ndarray) -> np.ndarray:
    return jobs[:, NODES]


def wfp3(jobs: np.ndarray) -> np.ndarray:
    """WFP3: -(w / r)^3 * n (the longest-waiting for its size first)."""
    return -np.power(jobs[:, WAIT] / jobs[:, WALLTIME], 3) * jobs[:, NODES]


def unicef(jobs: np.ndarray) -> np.ndarray:
    """UNICEF: -(w + 1e-15) / (log2(n + 1e-15) * r) (as RLScheduler: one-node jobs first)."""
    return -(jobs[:, WAIT] + 1e-15) / (np.log2(jobs[:, NODES] + 1e-15) * jobs[:, WALLTIME])


def f1(jobs: np.ndarray) -> np.ndarray:
    """F1: log10(r) * n + 870 * log10(s)."""
    return (_log10_positive(jobs[:, WALLTIME]) * jobs[:, NODES]
            + 870 * _log10_positive(jobs[:, SUBMIT]))


def f2(jobs: np.ndarray) -> np.ndarray:
    """F2: sqrt(r) * n + 25600 * log10(s)."""
    return np.sqrt(jobs[:, WALLTIME]) * jobs[:, NODES] + 25600 * _log10_positive(jobs[:, SUBMIT])


def f3(jobs: np.ndarray) -> np.ndarray:
    """F3: r * n + 6860000 * log10(s)."""
    return jobs[:, WALLTIME] * jobs[:, NODES] + 6860000 * _log10_positive(jobs[:, SUBMIT])


def f4(jobs: np.ndarray) -> np.ndarray:
    """F4: r * sqrt(n) + 530000 * log10(s)."""
    return jobs[:, WALLTIME] * np.sqrt(jobs[:, NODES]) + 530000 * _log10_positive(jobs[:, SUBMIT])


HEURISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fcfs": fcfs, "sjf": sjf, "smallest": smallest, "wfp3": wfp3, "unicef": unicef,
    "f1": f1, "f2": f2, "f3": f3, "f4": f4,
}

# The inputs of a learned scoring function, from a job row and the machine's total nodes.
LEARNED_INPUTS = ("log1p(wait)", "log1p(nodes)", "log1p(walltime)", "fits_now",
                  "log1p(wait/walltime)", "nodes/total")


def learned_inputs(jobs: np.ndarray, total_nodes: float) -> np.ndarray:
    """(n, len(LEARNED_INPUTS)): scale-free inputs of a learned scoring function."""
    wait = np.maximum(jobs[:, WAIT], 0.0)
    walltime = np.maximum(jobs[:, WALLTIME], 1.0)
    return np.stack([np.log1p(wait), np.log1p(jobs[:, NODES]), np.log1p(walltime),
                     jobs[:, FITS], np.log1p(wait / walltime), jobs[:, NODES] / total_nodes],
                    axis=1)


@dataclass(frozen=True)
class Model:
    """A scoring function: a heuristic by name, or learned weights. `kind` "linear":
    score = inputs @ w; "mlp": score = tanh(inputs @ w1 + b1) @ w2."""

    kind: str  # "heuristic", "linear" or "mlp"
    name: str = ""  # the heuristic
    weights: tuple[tuple[float, ...], ...] = ()  # linear: (w,); mlp: w1 rows..., b1, w2

    def scores(self, jobs: np.ndarray, machine: np.ndarray) -> np.ndarray:
        if self.kind == "heuristic":
            return HEURISTICS[self.name](jobs)
        x = learned_inputs(jobs, float(machine[2]))
        if self.kind == "linear":
            return x @ np.asarray(self.weights[0])
        k = len(LEARNED_INPUTS)
        w1 = np.asarray(self.weights[:k])
        b1 = np.asarray(self.weights[k])
        w2 = np.asarray(self.weights[k + 1])
        return np.tanh(x @ w1 + b1) @ w2

    def choose(self, jobs: np.ndarray, machine: np.ndarray, n: int) -> int:
        """The slot (0..n-1) of the lowest score among the first n rows; the earliest on a
        tie (NaN scores count as the highest)."""
        s = self.scores(jobs[:n], machine)
        s = np.where(np.isnan(s), np.inf, s)
        return int(np.argmin(s))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": FORMAT, "kind": self.kind}
        if self.kind == "heuristic":
            out["name"] = self.name
        else:
            out["inputs"] = list(LEARNED_INPUTS)
            out["weights"] = [list(row) for row in self.weights]
        return out


def linear(w: Any) -> Model:
    return Model("linear", weights=(tuple(float(v) for v in np.asarray(w).ravel()),))


def mlp(params: Any, hidden: int) -> Model:
    """From a flat vector: w1 (inputs x hidden, row-major), b1 (hidden), w2 (hidden)."""
    k = len(LEARNED_INPUTS)
    p = np.asarray(params, dtype=np.float64).ravel()
    if len(p) != mlp_size(hidden):
        raise ValueError(f"an MLP of {hidden} hidden units has {mlp_size(hidden)} "
                         f"parameters, not {len(p)}")
    w1 = p[:k * hidden].reshape(k, hidden)
    rows = [tuple(float(v) for v in row) for row in w1]
    rows.append(tuple(float(v) for v in p[k * hidden:k * hidden + hidden]))
    rows.append(tuple(float(v) for v in p[k * hidden + hidden:]))
    return Model("mlp", weights=tuple(rows))


def mlp_size(hidden: int) -> int:
    return len(LEARNED_INPUTS) * hidden + 2 * hidden


def save_model(path: str | os.PathLike[str], model: Model) -> None:
    """JSON, floats written so that they read back exactly."""
    with open(path, "w") as out:
        json.dump(model.to_json(), out, indent=1)
        out.write("\n")


class ModelError(ValueError):
    """A model that cannot be read: the message is one sentence for the user."""


def load_model(spec: str) -> Model:
    """A heuristic's name (fcfs, sjf, smallest, wfp3, unicef, f1-f4) or a model file."""
    if spec in HEURISTICS:
        return Model("heuristic", name=spec)
    try:
        with open(spec) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ModelError(f"model {spec!r} is neither a file nor one of "
                         f"{', '.join(HEURISTICS)}") from None
    except (OSError, ValueError) as err:
        raise ModelError(f"cannot read model {spec}: {err}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelError(f"{spec} is not a schedd agent model (expected \"format\": "
                         f"\"{FORMAT}\")")
    kind = data.get("kind")
    if kind == "heuristic" and data.get("name") in HEURISTICS:
        return Model("heuristic", name=str(data["name"]))
    if kind in ("linear", "mlp") and data.get("inputs") == list(LEARNED_INPUTS):
        try:
            rows = tuple(tuple(float(v) for v in row) for row in data["weights"])
        except (KeyError, TypeError, ValueError):
            raise ModelError(f"{spec}: \"weights\" must be lists of numbers") from None
        k = len(LEARNED_INPUTS)
        ok = (len(rows) == 1 and len(rows[0]) == k) if kind == "linear" else (
            len(rows) == k + 2 and len({len(r) for r in rows}) == 1 and len(rows[0]) > 0)
        if ok and all(math.isfinite(v) for row in rows for v in row):
            return Model(str(kind), weights=rows)
        raise ModelError(f"{spec}: weights of the wrong shape for a {kind} model "
                         f"(or not finite)")
    raise ModelError(f"{spec}: unknown model kind {kind!r} or inputs (expected heuristic, "
                     f"linear or mlp over {', '.join(LEARNED_INPUTS)})")
