"""How close `schedd simulate --slurm-conf` is to a real Slurm, run by run.

    .venv/bin/python bench/slurm_fidelity.py [--runs bench/slurm_reference/runs] [--markdown]

For every reference run: the share of jobs whose simulated wait is within 0, 2 and 10 s
of Slurm's, the total wait against Slurm's, and the first job (by submit time) that
differs by more than 2 s; and, pooled over the runs, on the jobs where every real run
agrees within 2 s (Slurm repeating itself, where a miss is the emulation's own). Beside
each workload, Slurm against itself: the same figures
between its real runs (every pair, pooled; the range of the pairs' "<= 2 s") — the
ceiling — and EASY on the same machine and jobs, the baseline. Also the CPU time of each
simulation.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schedd.slurm.fidelity import (  # noqa: E402
    Agreement,
    Paired,
    agreement,
    consensus,
    each_pair,
    first_apart,
    mean_between,
    on_jobs,
    pooled,
    runs_of,
    simulate_runs,
)

RUNS = Path(__file__).resolve().parent / "slurm_reference" / "runs"


def load_of(run: Path) -> str:
    """The machine's load average over the run's last minute, from its run.json."""
    try:
        load = json.loads((run / "run.json").read_text())["load_average"][0]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return ""
    return f"{load:.1f}"


def row(name: str, a: Agreement, seconds: float | None = None, load: str = "",
        apart: Paired | None = None) -> str:
    first = a.first_diverging
    where = (f"job {first.job} (submitted at {first.submit:g} s): {first.wait_a:g} s "
             f"vs {first.wait_b:g} s" if first else "none")
    parted = ""
    if apart is not None:
        parted = (f"job {apart.job} at {apart.submit + apart.wait_a:g} s by "
                  f"{apart.how_a or '?'} / {apart.submit + apart.wait_b:g} s by "
                  f"{apart.how_b or '?'}")
    cpu = f" | {seconds * 1000:.0f} ms | {load} |" if seconds is not None else " | | |"
    return (f"| {name} | {a.jobs} | {a.within0:.0%} | {a.within2:.0%} | {a.within10:.0%} | "
            f"{a.total_diff:+.1%} | {where} | {parted}{cpu}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=RUNS, help="reference runs' root")
    args = parser.parse_args()
    print("| run | jobs | = 0 s | <= 2 s | <= 10 s | total wait | first diverging (Slurm vs "
          "other) | first start apart (Slurm / schedd) | sim CPU | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for workload, runs in runs_of(args.runs).items():
        ceiling = mean_between(runs)
        if ceiling is not None:
            spread = sorted(a.within2 for a in each_pair(runs))
            pairs = (f"{spread[0]:.0%}–{spread[-1]:.0%}" if len(spread) > 1
                     else f"{spread[0]:.0%}")
            print(row(f"**{workload}: Slurm vs Slurm** ({len(runs)} runs; pairs {pairs})",
                      ceiling))
        ours = simulate_runs(runs)
        for run, sim in zip(runs, ours, strict=True):
            print(row(f"{workload}/{run.name}: schedd vs Slurm", agreement(sim.pairs),
                      sim.seconds, load_of(run), first_apart(sim.pairs)))
        print(row(f"**{workload}: schedd (all runs) vs Slurm**", pooled(ours)))
        if len(runs) > 1:  # one run agrees with itself on every job: no row
            agreed = consensus(runs)
            print(row(f"{workload}: schedd vs Slurm on the {len(agreed)} jobs every real "
                      f"run agrees on", on_jobs(ours, agreed)))
        print(row(f"{workload}: EASY (all runs) vs Slurm", pooled(simulate_runs(runs, "easy"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
