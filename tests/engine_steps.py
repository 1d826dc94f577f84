"""Driving a real engine step by step in policy tests, with `validate()` after each step."""

from __future__ import annotations

from schedd.core.engine import Engine
from schedd.core.job import JobState
from schedd.core.validate import validate


def step(engine: Engine) -> bool:
    more = engine.step()
    validate(engine)
    return more


def until(engine: Engine, t: float) -> None:
    """Handle every instant up to and including t (each with its passes)."""
    while (nxt := engine.next_time()) is not None and nxt <= t:
        step(engine)


def finish(engine: Engine, max_steps: int = 10_000) -> Engine:
    for _ in range(max_steps):
        if not step(engine):
            return engine
    raise AssertionError(f"no end after {max_steps} steps (t={engine.now:g})")


def col(engine: Engine, name: str) -> dict[int, float]:
    r = engine.results.arrays()
    return dict(zip(r["id"].tolist(), r[name].tolist(), strict=True))


def state(engine: Engine, job_id: int) -> JobState:
    return engine.jobs[job_id].state
