"""LOS Reservation_DP benchmark: one scheduling decision for a 50-job lookahead window.

    .venv/bin/python bench/los_dp.py [--repeat 2000]

A decision starts from node counts and walltimes, as a policy would hold them: sizes to units
(rounded up), capacities to units (rounded down), which jobs outlast the freeze time, then
`reservation_dp`. Rows:
* the paper's Blue Gene/P, 320 processors in units of 32 (10 units); sizes drawn as in its
  Section IV-D with P_S = 0.5 (small: 1-3 units, large: 4-10 units);
* a 4,360-node machine (Theta) in units of 8 (`choose_unit`: 545 units), sizes drawn from
  Theta's 2023 log's common sizes; a typical decision and the largest grid (all but one
  unit free now and at the freeze, every job fits and most outlast the freeze).

Each decision is timed alone (perf_counter) over 20 seeded instances in turn; the table
gives the median, the 90th percentile and the largest of --repeat decisions. Prints a
Markdown table for docs/los.md; writes nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.policies.los_dp import (  # noqa: E402
    BGP_UNIT_NODES,
    choose_unit,
    free_units,
    job_units,
    reservation_dp,
    still_running_at_freeze,
)

WINDOW = 50
INSTANCES = 20
THETA_NODES = 4360
# The most common sizes in theta_2023.swf (91% of its jobs are multiples of 8 nodes).
THETA_SIZES = np.array([128, 256, 1024, 512, 150, 144, 192, 802, 384, 957, 640, 900, 195,
                        1000, 1536, 896, 872, 1554, 129, 832, 4096, 3850])


@dataclass(frozen=True)
class Decision:
    nodes: np.ndarray
    walltimes: np.ndarray
    free_now: int
    free_at_freeze: int
    freeze_time: float


@dataclass(frozen=True)
class Case:
    label: str
    machine: int
    unit: int
    target_ms: float
    instances: list[Decision]


def bgp_instance(rng: np.random.Generator) -> Decision:
    small = rng.random(WINDOW) < 0.5
    units = np.where(small, rng.integers(1, 4, WINDOW), rng.integers(4, 11, WINDOW))
    return Decision(units * BGP_UNIT_NODES, rng.uniform(60, 36_000, WINDOW), 288, 288,
                    7_200.0)


def theta_instance(rng: np.random.Generator, free_now: int, free_at_freeze: int) -> Decision:
    common = THETA_SIZES
    nodes = rng.choice(common[common <= free_now], WINDOW)
    return Decision(nodes, rng.uniform(600, 86_400, WINDOW), free_now, free_at_freeze, 7_200.0)


def cases() -> list[Case]:
    rng = np.random.default_rng(2024)
    return [
        Case("Blue Gene/P, 320 processors, 288 free now and at the freeze", 320,
             choose_unit(320, BGP_UNIT_NODES), 5.0,
             [bgp_instance(rng) for _ in range(INSTANCES)]),
        Case("4,360 nodes, 1,536 free now, 640 at the freeze", THETA_NODES,
             choose_unit(THETA_NODES), 50.0,
             [theta_instance(rng, 1536, 640) for _ in range(INSTANCES)]),
        Case("4,360 nodes, 4,352 free now and at the freeze (largest grid)", THETA_NODES,
             choose_unit(THETA_NODES), 50.0,
             [theta_instance(rng, 4352, 4352) for _ in range(INSTANCES)]),
    ]


def decide(d: Decision, unit: int) -> np.ndarray:
    """One Reservation_DP decision from node counts, as a policy would make it."""
    after = still_running_at_freeze(0.0, d.walltimes, d.freeze_time)
    return reservation_dp(job_units(d.nodes, unit), after, free_units(d.free_now, unit),
                          free_units(d.free_at_freeze, unit))


def time_case(case: Case, repeat: int) -> list[float]:
    for d in case.instances:  # warm caches, check feasibility
        chosen = decide(d, case.unit)
        assert d.nodes[chosen].sum() <= d.free_now
    seconds = []
    for r in range(repeat):
        d = case.instances[r % len(case.instances)]
        start = time.perf_counter()
        decide(d, case.unit)
        seconds.append(time.perf_counter() - start)
    return seconds


def machine_line() -> str:
    return (f"machine: {platform.machine()}, {platform.system()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, NumPy {np.__version__}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2000)
    args = ap.parse_args()
    print(machine_line())
    print()
    print("| case | unit (nodes) | units | window | median | p90 | max | target |")
    print("|---|---|---|---|---|---|---|---|")
    for case in cases():
        ms = sorted(1000 * s for s in time_case(case, args.repeat))
        median = statistics.median(ms)
        p90 = ms[int(0.9 * (len(ms) - 1))]
        verdict = "met" if median < case.target_ms else "MISSED"
        print(f"| {case.label} | {case.unit} | {-(-case.machine // case.unit)} | {WINDOW} | "
              f"{median:.3f} ms | {p90:.3f} ms | {ms[-1]:.3f} ms | "
              f"< {case.target_ms:g} ms: {verdict} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
