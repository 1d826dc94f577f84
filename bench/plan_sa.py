"""`plan-sa` benchmark: one scheduling pass on a Theta-sized machine (4,360 nodes) with 100
running jobs and 50, 100, 200 or 500 waiting jobs.

    .venv/bin/python bench/plan_sa.py [--repeat 3] [--budget 1.0]

For each queue depth, a real `Engine` holds the state and the policy's whole pass runs on
its `View` (building the profile, the search, decoding P_best, the decisions):
* the full annealing schedule at the paper's defaults (T0 1, Tth 0.0001, N 100, r 0.9:
  8,800 evaluations), as `simulate` runs it; median of --repeat passes (seeds 1..repeat);
* the same pass in the daemon's mode under a wall-clock budget of --budget seconds (the
  clock bound as `schedd serve` binds it): evaluations reached, the pass's time, how far past
  the deadline the search ended (in evaluations), and the best cost against the queue order's;
* the kernel run as plain Python (NUMBA_DISABLE_JIT=1, a child process) on 300 evaluations
  for the 100-job queue, to show what compiling buys.

Writes bench/results/plan_sa.md; copy it into docs/benchmarks.md with the machine line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.cluster import NodePool  # noqa: E402
from schedd.core.engine import Engine  # noqa: E402
from schedd.core.job import JobSpec  # noqa: E402
from schedd.core.view import View  # noqa: E402
from schedd.policies import make_policy  # noqa: E402
from schedd.policies.plan_sa import PlanSA  # noqa: E402

NODES = 4360
RUNNING = 100
DEPTHS = (50, 100, 200, 500)
RESULTS = ROOT / "bench" / "results"


def busy_engine(waiting: int, seed: int) -> Engine:
    """100 running jobs on 98% of the machine, then `waiting` jobs submitted behind them."""
    rng = np.random.default_rng(seed)
    cluster = NodePool(NODES)
    engine = Engine(cluster, make_policy("fcfs", [], cluster))
    sizes = rng.integers(1, 128, RUNNING).astype(float)
    sizes = np.maximum(1, (sizes * (0.98 * NODES) / sizes.sum()).astype(int))
    for i, n in enumerate(sizes.tolist()):
        wall = float(rng.uniform(600, 86_400))
        engine.submit(JobSpec(i + 1, 0.0, wall, int(n), wall))
    engine.run(until=0.0)
    assert len(engine.running) == RUNNING
    for i in range(waiting):
        n = int(rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]))
        wall = float(rng.uniform(600, 86_400))
        engine.submit(JobSpec(RUNNING + i + 1, 0.0, wall * 0.7, n, wall))
    engine.run(until=0.0)  # queues them (fcfs starts whatever fits at the head)
    return engine


def one_pass(waiting: int, seed: int, budget: float | None) -> dict:
    engine = busy_engine(waiting, seed)
    cluster = engine.cluster
    policy = make_policy("plan-sa", [f"seed={seed}"], cluster)
    assert isinstance(policy, PlanSA)
    if budget is not None:
        deadline = 0.0

        def time_left() -> float:
            return deadline - time.perf_counter()

        policy.bind_budget(lambda: time_left() <= 0, time_left)
        deadline = time.perf_counter() + budget
    view = View(engine)
    queue = len(engine.queue)
    start = time.perf_counter()
    decisions = policy.schedule(view)
    elapsed = time.perf_counter() - start
    last = policy.last
    assert last is not None
    return {"queue": queue, "seconds": elapsed, "evals": last.evaluations,
            "finished": last.finished, "initial": last.initial_cost, "best": last.best_cost,
            "overrun_s": last.overrun_s, "eval_s": last.eval_s,
            "started": len(decisions)}


def interpreted_rate() -> float:
    """Evaluations per second of this process's kernel on the 100-job queue (300 of them)."""
    engine = busy_engine(100, 1)
    policy = make_policy("plan-sa", ["evals=300"], engine.cluster)
    assert isinstance(policy, PlanSA)
    start = time.perf_counter()
    policy.schedule(View(engine))
    assert policy.last is not None
    return policy.last.evaluations / (time.perf_counter() - start)


def pure_python_rate() -> float:
    """`interpreted_rate` in a child with numba's JIT off (the kernel runs as Python)."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, __file__, "--interpreted-rate"], env=env,
                         check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--interpreted-rate", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.interpreted_rate:
        print(interpreted_rate())
        return 0
    one_pass(50, 99, None)  # load the compiled kernel before timing
    lines = [f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
             "", "| waiting | running | full run (8,800 evals), median | evaluations/s | "
             f"{args.budget:g} s budget: evals | pass time | search past deadline | "
             "best / queue order |",
             "|---|---|---|---|---|---|---|---|"]
    raw = {}
    for waiting in DEPTHS:
        full = [one_pass(waiting, seed, None) for seed in range(1, args.repeat + 1)]
        seconds = statistics.median(r["seconds"] for r in full)
        evals = full[0]["evals"]
        timed = [one_pass(waiting, seed, args.budget) for seed in range(1, args.repeat + 1)]
        mid = sorted(timed, key=lambda r: r["seconds"])[len(timed) // 2]
        past = mid["overrun_s"] / mid["eval_s"] if mid["eval_s"] else 0.0
        lines.append(
            f"| {full[0]['queue']} | {RUNNING} | {seconds:.3f} s | {evals / seconds:,.0f} | "
            f"{mid['evals']:,}{'' if not mid['finished'] else ' (all)'} | "
            f"{mid['seconds']:.3f} s | {mid['overrun_s'] * 1000:.2f} ms = {past:.2f} evals | "
            f"{mid['best'] / mid['initial']:.3f} |")
        raw[waiting] = {"full": full, "budget": timed}
        print(lines[-1], flush=True)
    rate = pure_python_rate()
    fast = next(r for r in raw[100]["full"])
    lines += ["", f"Plain Python (NUMBA_DISABLE_JIT=1), 100 waiting: {rate:,.0f} evaluations/s, "
                  f"so a full run would take {8800 / rate:.1f} s "
                  f"(compiled: {fast['seconds']:.3f} s)."]
    print(lines[-1])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "plan_sa.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "plan_sa.json").write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
