"""Periodic checkpoint rules: how often a job checkpoints and what one checkpoint costs.

* SYS-CKPT: one universal interval for every job (real-time paper eq. 6).
* APP-CKPT x%: as many checkpoints as fit in x% of the walltime, spread evenly (§7.1.4; the
  authors' simulator: n = floor(walltime * x / 100 / C), interval = ceil((walltime + 120) /
  (n + 1)), none when n = 0).
* Daly's higher-order optimum interval for a given MTBF (hybrid paper §IV, Daly 2006), with
  the hybrid paper's costs (600 s below 1,024 nodes, 1,200 s otherwise); no checkpoints when
  the interval is not shorter than the runtime estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from .cluster import CheckpointModel
from .pickling import by_fields

PeriodicMode = Literal["none", "trace", "sys", "app", "daly"]
CostModel = Literal["io", "hybrid", "fixed"]


def app_interval(walltime: float, cost: float, overhead_pct: float) -> float | None:
    """APP-CKPT x% interval in compute seconds, or None when no checkpoint fits the budget."""
    if cost <= 0:
        return None
    n = math.floor(walltime * overhead_pct / 100.0 / cost)
    if n <= 0:
        return None
    return float(math.ceil((walltime + 120.0) / (n + 1)))


def daly_interval(cost: float, mtbf: float) -> float:
    """Daly's higher-order estimate of the optimum compute time between checkpoints."""
    if cost >= 2.0 * mtbf:
        return mtbf
    ratio = cost / (2.0 * mtbf)
    return math.sqrt(2.0 * cost * mtbf) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - cost


def hybrid_cost(nodes: int) -> float:
    """Checkpoint cost of the hybrid paper: 600 s below 1K nodes, 1,200 s otherwise."""
    return 600.0 if nodes < 1024 else 1200.0


@dataclass(frozen=True, slots=True)
class CheckpointPolicy:
    """Engine-wide checkpoint configuration (set from the simulator's options).

    `owner` tells who pays for periodic checkpoints in the accounting: the system
    (SYS-CKPT, eq. 8) or the job (APP-CKPT, eqs. 13 and 15).
    """

    periodic: PeriodicMode = "trace"
    sys_interval: float = 3600.0
    app_overhead_pct: float = 10.0
    daly_mtbf: float = 5 * 3600.0
    cost_model: CostModel = "io"
    fixed_s: float = 0.0  # cost_model "fixed": seconds per checkpoint write (and restart read)
    # Resuming from a checkpoint file reads it back (real-time paper eqs. 7, 12, 17); the
    # hybrid paper's jobs resume after their setup alone.
    restart_read: bool = True

    @property
    def owner_is_system(self) -> bool:
        return self.periodic != "app"

    def cost(self, model: CheckpointModel, nodes: int, gb_per_node: float) -> float:
        if self.cost_model == "hybrid":
            return hybrid_cost(nodes)
        if self.cost_model == "fixed":  # e.g. the checkpoint paper's T_delay (§5.1)
            return self.fixed_s
        return model.seconds(nodes, gb_per_node)

    def interval(self, walltime: float, cost: float, trace_interval: float) -> float | None:
        """Compute seconds between periodic checkpoints for a job, or None for none."""
        if self.periodic == "none":
            return None
        if self.periodic == "trace":
            return trace_interval if trace_interval > 0 else None
        if self.periodic == "sys":
            return self.sys_interval if self.sys_interval > 0 else None
        if self.periodic == "app":
            return app_interval(walltime, cost, self.app_overhead_pct)
        interval = daly_interval(cost, self.daly_mtbf)
        return interval if interval < walltime else None


    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)
