"""What the decision-time benchmarks share (bench/hybrid.py, bench/wcjs.py): a wrapper
that times one scheduling pass of the wrapped policy at chosen instants.

At the first pass where the next event's condition holds, the policy object is deep-copied
`repeat` times and only the copy's `schedule(view)` is timed (perf_counter, and the
process's CPU time: on a shared machine the wall time also counts the time other processes
held the core; garbage collector off during the call); the copies' decisions are not
applied, so every repetition sees the same engine state; then the real pass runs. Before
each timed pass the probe sleeps 2 ms (see `_fresh_slice`). `claims` counts what the
policy holds in its `claims` attribute, if it has one (on-demand or JIT claims).
"""

from __future__ import annotations

import copy
import gc
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedd.core.decisions import Decision
from schedd.core.view import View


@dataclass
class Case:
    """One measured pass: timings and what the pass saw and decided."""

    samples: list[float] = field(default_factory=list)  # wall seconds
    cpu: list[float] = field(default_factory=list)  # CPU seconds of the same passes
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
            _fresh_slice()
            start, start_cpu = time.perf_counter(), time.process_time()
            decisions = policy.schedule(view)
            case.samples.append(time.perf_counter() - start)
            case.cpu.append(time.process_time() - start_cpu)
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


def _fresh_slice() -> None:
    """Sleep a moment so the timed pass starts on a fresh time slice: after the deep copy
    and the collection, a busy machine's scheduler would otherwise preempt it mid-pass."""
    time.sleep(0.002)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


MEDIAN_LIMIT_MS = 2.0  # issue 21: the median decision
P95_LIMIT_MS = 10.0  # the papers: "less than 10 milliseconds to make a decision"
VERDICT_HEADERS = (f"median < {MEDIAN_LIMIT_MS:g} ms", f"p95 < {P95_LIMIT_MS:g} ms")
CELL_LEGEND = ("wall median / wall p95 / CPU median of the passes, ms; verdicts on the "
               "wall times")


def timing_cells(probe: Probe, events: list[str]) -> list[str]:
    """One cell per event (see CELL_LEGEND), then the two verdicts of the row."""
    cells, medians, p95s = [], [], []
    for event in events:
        case = probe.cases[event]
        wall = np.array(case.samples)
        med, p95 = float(np.median(wall)), float(np.percentile(wall, 95))
        medians.append(med)
        p95s.append(p95)
        cells.append(f"{ms(med)} / {ms(p95)} / {ms(float(np.median(case.cpu)))}")
    return cells + ["PASS" if max(medians) * 1000 < MEDIAN_LIMIT_MS else "MISS",
                    "PASS" if max(p95s) * 1000 < P95_LIMIT_MS else "MISS"]
