"""Test-only policies, loaded with `--plugin tests/plugins/slow_policies.py`.

`spin` computes (busy, in Python) for `seconds` of wall time before deciding like EASY; it
stands for any policy too slow for its budget. `anytime-easy` searches until the budget
says stop (or `rounds` rounds without one) and then returns EASY's plan; it stands for an
anytime policy such as simulated annealing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from schedd.core.decisions import Decision
from schedd.core.view import View
from schedd.policies import register
from schedd.policies.backfill import Easy
from schedd.policies.base import Policy


@dataclass(frozen=True)
class SpinOptions:
    seconds: float = field(default=5.0, metadata={"help": "wall seconds per pass"})
    every: int = field(default=1, metadata={"help": "spin on every n-th pass only"})


@register
class Spin(Policy):
    name = "spin"
    summary = "test policy: computes for `seconds`, then decides like easy"
    Options = SpinOptions

    def __init__(self, options: SpinOptions, cluster):  # type: ignore[no-untyped-def]
        super().__init__(options, cluster)
        self._easy = Easy(Easy.Options(), cluster)
        self.passes = 0

    def schedule(self, view: View) -> list[Decision]:
        self.passes += 1
        if self.passes % self.options.every == 0:
            end = time.perf_counter() + self.options.seconds
            while time.perf_counter() < end:
                sum(range(200))
        return self._easy.schedule(view)


@dataclass(frozen=True)
class AnytimeOptions:
    rounds: int = field(default=1000, metadata={"help": "rounds when no budget is bound"})


@register
class AnytimeEasy(Policy):
    name = "anytime-easy"
    summary = "test policy: searches until out of time, then decides like easy"
    Options = AnytimeOptions
    anytime = True

    def __init__(self, options: AnytimeOptions, cluster):  # type: ignore[no-untyped-def]
        super().__init__(options, cluster)
        self._easy = Easy(Easy.Options(), cluster)
        self.rounds: list[int] = []

    def schedule(self, view: View) -> list[Decision]:
        rounds = 0
        while not self.out_of_time() and rounds < self.options.rounds:
            sum(range(2000))
            rounds += 1
        self.rounds.append(rounds)
        return self._easy.schedule(view)
