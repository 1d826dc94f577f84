"""A learner in NumPy only: the cross-entropy method over a scoring function.

Candidates are the weights of a linear scoring function (or of a one-hidden-layer
perceptron) over `scoring.LEARNED_INPUTS`; each is scored by the mean bounded slowdown it
gets on a batch of training sequences, run by the `agent` policy on the engine (what an
episode of `PickJob` runs, without handing each choice out: the same schedule, faster);
the elite fraction sets the next sampling distribution (Rubinstein; Szita and Lorincz's
noisy CEM). Everything is drawn from one seeded NumPy generator, so a seed gives the same
model whatever the number of worker processes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.cluster import Cluster
from ..policies.agent import AgentOptions, AgentPolicy
from ..policies.scoring import LEARNED_INPUTS, Model, linear, mlp, mlp_size
from ..sim import simulate
from ..traces import NormalizedTrace
from . import sequences


@dataclass(frozen=True)
class CemConfig:
    kind: str = "linear"  # or "mlp"
    hidden: int = 8  # mlp only
    iterations: int = 12
    population: int = 24
    elite: float = 0.25  # fraction kept
    batch: int = 8  # training sequences per iteration (the same for every candidate)
    jobs: int = 256
    init_std: float = 1.0
    extra_std: float = 0.05  # added to the elite's spread each iteration (noisy CEM)
    seed: int = 0


def model_of(config: CemConfig, params: np.ndarray) -> Model:
    return linear(params) if config.kind == "linear" else mlp(params, config.hidden)


def size_of(config: CemConfig) -> int:
    return len(LEARNED_INPUTS) if config.kind == "linear" else mlp_size(config.hidden)


def mean_bsld(model: Model, trace: NormalizedTrace, cluster: Cluster, starts: Sequence[int],
              jobs: int, options: AgentOptions = AgentOptions()) -> np.ndarray:  # noqa: B008
    """Mean bounded slowdown of each sequence (its first row in `starts`) under `model`."""
    out = np.empty(len(starts))
    for i, start in enumerate(starts):
        policy = AgentPolicy.with_model(model, cluster, options)
        run = simulate(sequences.sequence(trace, int(start), jobs), cluster, policy)
        out[i] = run.summary["mean_bounded_slowdown"]
    return out


Evaluate = Callable[[list[Model], list[int]], list[float]]


def serial(trace: NormalizedTrace, cluster: Cluster, jobs: int,
           options: AgentOptions = AgentOptions()) -> Evaluate:  # noqa: B008
    def evaluate(models: list[Model], starts: list[int]) -> list[float]:
        return [float(mean_bsld(m, trace, cluster, starts, jobs, options).mean())
                for m in models]
    return evaluate


def cem(config: CemConfig, evaluate: Evaluate, start_range: tuple[int, int],
        log: Callable[[str], None] | None = None) -> tuple[Model, list[dict[str, float]]]:
    """Train; returns the final mean's model and one record per iteration."""
    rng = np.random.default_rng(config.seed)
    d = size_of(config)
    mean = np.zeros(d)
    std = np.full(d, config.init_std)
    n_elite = max(2, int(round(config.elite * config.population)))
    history = []
    lo, hi = start_range
    for it in range(config.iterations):
        starts = [int(s) for s in rng.integers(lo, hi + 1, size=config.batch)]
        pop = mean + std * rng.standard_normal((config.population, d))
        pop[0] = mean  # the current mean competes too
        fitness = np.asarray(evaluate([model_of(config, p) for p in pop], starts))
        order = np.argsort(fitness, kind="stable")
        elite = pop[order[:n_elite]]
        mean = elite.mean(axis=0)
        std = elite.std(axis=0) + config.extra_std
        record = {"iteration": it, "best": float(fitness[order[0]]),
                  "elite_mean": float(fitness[order[:n_elite]].mean()),
                  "mean_candidate": float(fitness[0])}
        history.append(record)
        if log is not None:
            log(f"iteration {it}: best {record['best']:.2f}, elite mean "
                f"{record['elite_mean']:.2f}, previous mean {record['mean_candidate']:.2f}")
    return model_of(config, mean), history

