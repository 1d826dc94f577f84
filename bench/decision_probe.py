"""What the decision-time benchmarks share (bench/hybrid.py, bench/wcjs.py): a wrapper
that times one scheduling pass of the wrapped policy at chosen instants.

At the first pass where the next event's condition holds, the policy object is deep-copied
`repeat` times and only the copy's `schedule(view)` is timed (perf_counter, garbage
collector off during the call); the copies' decisions are not applied, so every repetition
sees the same engine state; then the real pass runs. `claims` counts what the policy holds
in its `claims` attribute, if it has one (on-demand or JIT claims).
"""

from __future__ import annotations

import copy
import gc
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedd.core.decisions import Decision
from schedd.core.view import View


@dataclass
class Case:
    """One measured pass: timings and what the pass saw and decided."""

    samples: list[float] = field(default_factory=list)  # seconds
    now: float = 0.0
    running: int = 0
    waiting: int = 0
    free: int = 0
    claims: int = 0  # claims the policy held before the pass
    claims_after: int = 0
    decisions: str = ""


class Probe:
    """Wraps the policy under test. At the first pass where the next event's condition
    holds, it times `repeat` passes of deep copies, then runs the real pass."""

    def __init__(self, inner: Any, events: list[tuple[str, Callable[[View], bool]]],
                 repeat: int):
        self.inner = inner
        self.processes_eccs = getattr(inner, "processes_eccs", True)
        self.events = events
        self.repeat = repeat
        self.cases: dict[str, Case] = {}

    def schedule(self, view: View) -> list[Decision]:
        if self.events and self.events[0][1](view):
            name, _ = self.events.pop(0)
            self.cases[name] = self.measure(view)
        return self.inner.schedule(view)

    def measure(self, view: View) -> Case:
        case = Case(now=view.now, running=len(view.running), waiting=len(view.queue),
                    free=view.free_nodes,
                    claims=len(getattr(self.inner, "claims", {})))
        decisions: list[Decision] = []
        for _ in range(self.repeat):
            policy = copy.deepcopy(self.inner)
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            decisions = policy.schedule(view)
            case.samples.append(time.perf_counter() - start)
            gc.enable()
            case.claims_after = len(getattr(policy, "claims", {}))
        kinds = Counter(type(d).__name__ for d in decisions)
        case.decisions = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        return case

    def drive(self, engine: Any) -> None:
        """Step `engine` (whose policy is this probe) until every event was measured."""
        while self.events and engine.step():
            pass
        if self.events:
            raise RuntimeError(f"events never seen: {[name for name, _ in self.events]}")


    def detail_cells(self, events: list[str], t0: float) -> list[str]:
        """What each measured pass saw and decided, one table cell per event."""
        return [f"t0{(c.now - t0) / 60:+.0f} min: {c.running} / {c.waiting} / {c.free}; "
                f"claims {c.claims} -> {c.claims_after}; {c.decisions}"
                for c in (self.cases[e] for e in events)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"
