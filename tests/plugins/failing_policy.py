"""Test-only policy, loaded with `--plugin tests/plugins/failing_policy.py`.

`explode`: decides like EASY until a job of exactly `nodes` nodes waits in the queue, then
raises. It stands for any policy bug: the daemon must treat it as a fatal engine failure
(health NOT_SERVING, an error log, a counter, exit non-zero), not serve a dead engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schedd.core.decisions import Decision
from schedd.core.view import View
from schedd.policies import register
from schedd.policies.backfill import Easy
from schedd.policies.base import Policy


@dataclass(frozen=True)
class ExplodeOptions:
    nodes: int = field(default=7, metadata={"help": "raise when a job this size waits"})


@register
class Explode(Policy):
    name = "explode"
    summary = "test policy: raises when a job of `nodes` nodes waits, else easy"
    Options = ExplodeOptions

    def __init__(self, options: ExplodeOptions, cluster):  # type: ignore[no-untyped-def]
        super().__init__(options, cluster)
        self._easy = Easy(Easy.Options(), cluster)

    def schedule(self, view: View) -> list[Decision]:
        if any(job.nodes == self.options.nodes for job in view.queue):
            raise RuntimeError(f"explode: a job of {self.options.nodes} nodes is waiting")
        return self._easy.schedule(view)
