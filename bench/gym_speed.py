"""PickJob's steps per second beside RLScheduler's HPCEnv on the same lublin_256 sequences,
in the same run (issue 36: goal >= 10x).

    .venv/bin/python bench/gym_speed.py [--sequences 10] [--seed 0] [--trace PATH]
        [--rlscheduler GITDIR --rl-python PYTHON] [--json FILE]

Both environments get the same 256-job sequences of lublin_256 (first rows drawn as
HPCEnv draws them, in [256, jobs - 257), one generator seeded by --seed), and both are
stepped with action 0 (the first job of the window: FCFS picks), with and without
backfilling (HPCEnv's backfil=True is its greedy backfill; PickJob's is EASY). Only the
step() calls are timed (HPCEnv's reset() also schedules the sequence twice, with SJF and
F1, for its reward baselines; PickJob's reset() runs to the first choice); reset() times
are reported apart.

RLScheduler (github DIR-LAB/deep-batch-scheduler, HPCSimPickJobs.py, job.py, cluster.py)
is read from GITDIR (a git directory) into a temporary directory and run there by
PYTHON, a virtualenv of its own (numpy, scipy, gym 0.26.2, tensorflow-cpu: the module
imports tensorflow and scipy at the top, though HPCEnv uses neither); nothing of it is
copied into this repository. Gym 0.26 seeds with a numpy Generator, which has no
`randint`: the driver sets `env.np_random` to an object whose randint returns the chosen
first rows, which is also how both environments get the same sequences. Without
--rlscheduler only PickJob is measured.

Beside each pair, the engine alone: `schedd.sim.simulate` on the same sequences with the
policy FCFS picks amount to (EASY with backfilling, FCFS without), its time per PickJob
step: what any environment driving this engine spends at least, whatever its own code.

Without backfilling and with FCFS picks both environments schedule the same way (start
the first waiting job when it fits, else wait for releases), so the mean bounded
slowdowns they report must agree: the table says on how many sequences they do.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from schedd.gym.env import PickJob

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "lublin_256.swf"

DRIVER = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import HPCSimPickJobs as H

class FirstRows:
    """Stands in for env.np_random: reset() draws its sequence's first row with randint."""
    def __init__(self, rows):
        self.rows = list(rows)
    def randint(self, lo, hi):
        return self.rows.pop(0)

trace, backfil, rows = sys.argv[2], sys.argv[3] == "1", [int(r) for r in sys.argv[4:]]
env = H.HPCEnv(backfil=backfil)
env.my_init(workload_file=trace)
env.np_random = FirstRows(rows)
out = []
for row in rows:
    t0 = time.perf_counter()
    env.reset()
    reset_s = time.perf_counter() - t0
    steps, step_s, done = 0, 0.0, False
    while not done:
        t0 = time.perf_counter()
        r = env.step(0)
        step_s += time.perf_counter() - t0
        steps += 1
        done = r[2]
    out.append({"row": row, "first_job": env.loads[row].job_id, "steps": steps,
                "step_s": step_s, "reset_s": reset_s, "bsld": -r[1]})
print("RESULT " + json.dumps(out))
'''


def ours(trace: str, first_jobs: list[int], backfill: bool) -> list[dict]:
    env = PickJob(trace=trace, jobs=256, backfill=backfill)
    ids = env.trace.columns["job_id"]
    out = []
    for job in first_jobs:
        row = int(np.flatnonzero(ids == job)[0])
        t0 = time.perf_counter()
        obs, _ = env.reset(options={"start": row})
        reset_s = time.perf_counter() - t0
        steps, step_s, done = 0, 0.0, False
        most = obs["machine"][3]
        while not done:
            t0 = time.perf_counter()
            obs, reward, done, _, info = env.step(0)
            step_s += time.perf_counter() - t0
            steps += 1
            most = max(most, obs["machine"][3])
        out.append({"row": row, "first_job": job, "steps": steps, "step_s": step_s,
                    "reset_s": reset_s, "bsld": -reward, "most_waiting": int(most)})
    return out


def engine_alone(trace: str, first_jobs: list[int], backfill: bool) -> float:
    """Seconds `schedd.sim.simulate` takes on the same sequences with the policy PickJob's
    FCFS picks amount to (EASY with backfilling, FCFS without): the engine's own share of
    an episode, a floor under PickJob's step time that no environment on this engine
    goes below."""
    from schedd.gym import sequences
    from schedd.policies import make_policy
    from schedd.sim import simulate

    env = PickJob(trace=trace, jobs=256)
    ids = env.trace.columns["job_id"]
    policy = "easy" if backfill else "fcfs"
    total = 0.0
    for job in first_jobs:
        seq = sequences.sequence(env.trace, int(np.flatnonzero(ids == job)[0]), 256)
        t0 = time.perf_counter()
        simulate(seq, env.cluster, make_policy(policy, [], env.cluster))
        total += time.perf_counter() - t0
    return total


def theirs(gitdir: str, python: str, trace: str, rows: list[int], backfill: bool
           ) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="rlscheduler-") as tmp:
        for name in ("HPCSimPickJobs.py", "job.py", "cluster.py"):
            text = subprocess.run(["git", "--git-dir", gitdir, "show", f"HEAD:{name}"],
                                  check=True, capture_output=True, text=True).stdout
            Path(tmp, name).write_text(text)
        Path(tmp, "driver.py").write_text(DRIVER)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        done = subprocess.run([python, "driver.py", tmp, trace, "1" if backfill else "0",
                               *map(str, rows)], cwd=tmp, capture_output=True, text=True,
                              env=env, timeout=3600)
        if done.returncode != 0:
            raise RuntimeError(f"RLScheduler's HPCEnv failed:\n{done.stderr[-3000:]}")
        line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")][-1]
        return json.loads(line[len("RESULT "):])


def rate(runs: list[dict]) -> tuple[int, float, float]:
    steps = sum(r["steps"] for r in runs)
    return steps, steps / sum(r["step_s"] for r in runs), float(np.mean([r["reset_s"]
                                                                          for r in runs]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sequences", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace", default=str(TRACE))
    p.add_argument("--rlscheduler", default=None, metavar="GITDIR")
    p.add_argument("--rl-python", default=None, metavar="PYTHON")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    n_jobs = len(PickJob(trace=args.trace, jobs=256).trace)
    rng = np.random.default_rng(args.seed)
    rows = [int(r) for r in rng.integers(256, n_jobs - 256 - 1, size=args.sequences)]
    # Both read the trace sorted by job id (HPCEnv) or queue order (schedd): the same
    # for lublin_256, whose ids follow submit times; sequences are matched by first id.
    ids_by_id = np.sort(PickJob(trace=args.trace, jobs=256).trace.columns["job_id"])
    first_jobs = [int(ids_by_id[r]) for r in rows]
    print(f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.sequences} sequences of 256 jobs, seed {args.seed}", file=sys.stderr)
    report: dict = {"rows": rows, "first_jobs": first_jobs}
    lines = ["| environment | backfilling | steps | steps/s | reset ms | speed-up |",
             "|---|---|---:|---:|---:|---:|"]
    for backfill in (False, True):
        mine = ours(args.trace, first_jobs, backfill)
        report[f"pickjob_backfill={backfill}"] = mine
        steps, per_s, reset = rate(mine)
        floor_s = engine_alone(args.trace, first_jobs, backfill)
        report[f"engine_alone_backfill={backfill}_s"] = floor_s
        other = None
        if args.rlscheduler:
            other = theirs(args.rlscheduler, args.rl_python or sys.executable, args.trace,
                           rows, backfill)
            report[f"hpcenv_backfil={backfill}"] = other
            o_steps, o_per_s, o_reset = rate(other)
            lines.append(f"| RLScheduler HPCEnv | {'greedy' if backfill else 'none'} | "
                         f"{o_steps:,} | {o_per_s:,.0f} | {1000 * o_reset:,.1f} | 1 |")
        lines.append(f"| schedd PickJob | {'EASY' if backfill else 'none'} | {steps:,} | "
                     f"{per_s:,.0f} | {1000 * reset:,.1f} | "
                     f"{per_s / o_per_s:,.1f}x |" if other else
                     f"| schedd PickJob | {'EASY' if backfill else 'none'} | {steps:,} | "
                     f"{per_s:,.0f} | {1000 * reset:,.1f} | - |")
        lines.append(f"| (schedd's engine alone, `simulate` with "
                     f"{'EASY' if backfill else 'FCFS'} on the same sequences: "
                     f"{1e6 * floor_s / steps:,.0f} us per PickJob step, at most "
                     f"{steps / floor_s:,.0f} steps/s"
                     + (f" = {steps / floor_s / o_per_s:,.1f}x HPCEnv" if other else "")
                     + ") | | | | | |")
        if other and not backfill:
            same = [abs(a["bsld"] - b["bsld"]) <= 1e-9 * max(1.0, abs(b["bsld"]))
                    for a, b in zip(mine, other, strict=True)]
            light = [a["most_waiting"] <= 128 for a in mine]
            report["same_bsld_without_backfilling"] = sum(same)
            lines.append(f"| (same mean bounded slowdown: {sum(same)} of {len(rows)} "
                         f"sequences; of the {sum(light)} where at most 128 jobs ever "
                         f"wait: {sum(s for s, ok in zip(same, light, strict=True) if ok)})"
                         f" | | | | | |")
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
