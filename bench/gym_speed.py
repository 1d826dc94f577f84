"""PickJob's steps per second beside RLScheduler's HPCEnv on the same lublin_256 sequences,
in the same run (issue 36: goal >= 10x).

    .venv/bin/python bench/gym_speed.py [--sequences 10] [--seed 0] [--rounds 3]
        [--trace PATH] [--rlscheduler GITDIR --rl-python PYTHON] [--json FILE]

Both environments get the same 256-job sequences of lublin_256 (first rows drawn as
HPCEnv draws them, in [256, jobs - 257), one generator seeded by --seed), and both are
stepped with action 0 (the first job of the window: FCFS picks), with and without
backfilling (HPCEnv's backfil=True is its greedy backfill; PickJob's is EASY). Only the
step() calls are timed (HPCEnv's reset() also schedules the sequence twice, with SJF and
F1, for its reward baselines; PickJob's reset() runs to the first choice); reset() times
are reported apart. The two run interleaved, sequence by sequence (HPCEnv in a process of
its own that waits for the next sequence), for --rounds rounds, and each environment's
fastest round of each sequence counts: on a shared machine whose load moves by the
minute, both see the same load, and the fastest round is the one least slowed by it.

RLScheduler (github DIR-LAB/deep-batch-scheduler, HPCSimPickJobs.py, job.py, cluster.py)
is read from GITDIR (a git directory) into a temporary directory and run there by
PYTHON, a virtualenv of its own (numpy, scipy, gym 0.26.2, tensorflow-cpu: the module
imports tensorflow and scipy at the top, though HPCEnv uses neither); nothing of it is
copied into this repository. Gym 0.26 seeds with a numpy Generator, which has no
`randint`: the driver sets `env.np_random` to an object whose randint returns the chosen
first rows, which is also how both environments get the same sequences. Without
--rlscheduler only PickJob is measured.

PickJob runs twice: as it is (on lublin_256's node pool an episode takes the fast path,
schedd/policies/agent_plain.py) and with plain=False (the general engine, as on Blue
Gene/Q or with failures). Beside them, the engine alone: schedd's general engine (not a
fast path) running the same sequences with the policy FCFS picks amount to (EASY with
backfilling, FCFS without), its time per PickJob step: what PickJob(plain=False) spends
at least, whatever its own code.

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
    # Stands in for env.np_random: reset() draws its sequence's first row with randint.
    def __init__(self):
        self.rows = []
    def randint(self, lo, hi):
        return self.rows.pop(0)

envs = {}
for flag in (False, True):
    env = H.HPCEnv(backfil=flag)
    env.my_init(workload_file=sys.argv[2])
    env.np_random = FirstRows()
    envs[flag] = env
print("READY", flush=True)
for line in sys.stdin:  # "BACKFILL ROW": one sequence, then its figures on one line
    backfil, row = line.split()
    env = envs[backfil == "1"]
    env.np_random.rows.append(int(row))
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
    print("RESULT " + json.dumps({"row": int(row), "first_job": env.loads[int(row)].job_id,
                                  "steps": steps, "step_s": step_s, "reset_s": reset_s,
                                  "bsld": -r[1]}), flush=True)
'''


def ours(env: PickJob, job: int) -> dict:
    """One sequence (its first job's id) stepped with action 0 to its end."""
    ids = env.trace.columns["job_id"]
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
    return {"row": row, "first_job": job, "steps": steps, "step_s": step_s,
            "reset_s": reset_s, "bsld": -reward, "most_waiting": int(most)}


def engine_alone(trace: str, first_jobs: list[int], backfill: bool, rounds: int) -> float:
    """Seconds schedd's general engine (the one PickJob(plain=False) drives; not the
    plain-EASY fast path `simulate` takes for EASY) runs the same sequences with the policy
    PickJob's FCFS picks amount to (EASY with backfilling, FCFS without), set up as an
    episode is, the fastest of `rounds` per sequence: a floor under PickJob(plain=False)'s
    step time."""
    from schedd.core.engine import Engine
    from schedd.core.results import ResultTable
    from schedd.gym import sequences
    from schedd.policies import make_policy
    from schedd.sim import feed_engine

    env = PickJob(trace=trace, jobs=256)
    ids = env.trace.columns["job_id"]
    policy = "easy" if backfill else "fcfs"
    total = 0.0
    for job in first_jobs:
        seq = sequences.sequence(env.trace, int(np.flatnonzero(ids == job)[0]), 256)
        best = np.inf
        for _ in range(rounds):
            engine = Engine(env.cluster, make_policy(policy, [], env.cluster))
            engine.results = ResultTable.empty(len(seq))
            feed_engine(engine, seq)
            t0 = time.perf_counter()
            engine.run()
            best = min(best, time.perf_counter() - t0)
        total += best
    return total


class Theirs:
    """RLScheduler's HPCEnv in its own interpreter, one sequence per request."""

    def __init__(self, gitdir: str, python: str, trace: str):
        self.tmp = tempfile.TemporaryDirectory(prefix="rlscheduler-")
        for name in ("HPCSimPickJobs.py", "job.py", "cluster.py"):
            text = subprocess.run(["git", "--git-dir", gitdir, "show", f"HEAD:{name}"],
                                  check=True, capture_output=True, text=True).stdout
            Path(self.tmp.name, name).write_text(text)
        Path(self.tmp.name, "driver.py").write_text(DRIVER)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
        self.proc = subprocess.Popen([python, "driver.py", self.tmp.name, trace],
                                     cwd=self.tmp.name, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self._read("READY")

    def _read(self, tag: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(tag):
                return line[len(tag):].strip()
        err = self.proc.stderr.read() if self.proc.stderr else ""
        raise RuntimeError(f"RLScheduler's HPCEnv failed:\n{err[-3000:]}")

    def run(self, row: int, backfill: bool) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{int(backfill)} {row}\n")
        self.proc.stdin.flush()
        return dict(json.loads(self._read("RESULT ")))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.tmp.cleanup()


def rate(runs: list[dict]) -> tuple[int, float, float]:
    steps = sum(r["steps"] for r in runs)
    return steps, steps / sum(r["step_s"] for r in runs), float(np.mean([r["reset_s"]
                                                                          for r in runs]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sequences", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3,
                   help="runs of every sequence in each environment; the fastest counts")
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
    # Interleaved: each sequence runs in PickJob, then in HPCEnv, round after round, and
    # each keeps its fastest round, so that load from others on a shared machine falls
    # on both alike.
    theirs = (Theirs(args.rlscheduler, args.rl_python or sys.executable, args.trace)
              if args.rlscheduler else None)
    envs = {(bf, plain): PickJob(trace=args.trace, jobs=256, backfill=bf, plain=plain)
            for bf in (False, True) for plain in (True, False)}
    best: dict[tuple[str, bool, int], dict] = {}
    for _ in range(args.rounds):
        for i, (row, job) in enumerate(zip(rows, first_jobs, strict=True)):
            for backfill in (False, True):
                runs = [("ours", ours(envs[backfill, True], job)),
                        ("general", ours(envs[backfill, False], job))]
                if theirs is not None:
                    runs.append(("theirs", theirs.run(row, backfill)))
                for who, run in runs:
                    key = (who, backfill, i)
                    if key not in best or run["step_s"] < best[key]["step_s"]:
                        best[key] = run
    if theirs is not None:
        theirs.close()
    for backfill in (False, True):
        mine = [best["ours", backfill, i] for i in range(len(rows))]
        report[f"pickjob_backfill={backfill}"] = mine
        steps, per_s, reset = rate(mine)
        general = [best["general", backfill, i] for i in range(len(rows))]
        report[f"pickjob_general_backfill={backfill}"] = general
        g_steps, g_per_s, g_reset = rate(general)
        floor_s = engine_alone(args.trace, first_jobs, backfill, args.rounds)
        report[f"engine_alone_backfill={backfill}_s"] = floor_s
        other = [best["theirs", backfill, i] for i in range(len(rows))] if theirs else None
        o_per_s = 0.0
        if other:
            report[f"hpcenv_backfil={backfill}"] = other
            o_steps, o_per_s, o_reset = rate(other)
            lines.append(f"| RLScheduler HPCEnv | {'greedy' if backfill else 'none'} | "
                         f"{o_steps:,} | {o_per_s:,.0f} | {1000 * o_reset:,.1f} | 1 |")
        lines.append(f"| schedd PickJob | {'EASY' if backfill else 'none'} | {steps:,} | "
                     f"{per_s:,.0f} | {1000 * reset:,.1f} | "
                     + (f"{per_s / o_per_s:,.1f}x |" if other else "- |"))
        lines.append(f"| schedd PickJob, general engine (plain=False) | "
                     f"{'EASY' if backfill else 'none'} | {g_steps:,} | {g_per_s:,.0f} | "
                     f"{1000 * g_reset:,.1f} | "
                     + (f"{g_per_s / o_per_s:,.1f}x |" if other else "- |"))
        lines.append(f"| (schedd's general engine alone, with "
                     f"{'EASY' if backfill else 'FCFS'} on the same sequences: "
                     f"{1e6 * floor_s / steps:,.0f} us per PickJob step, at most "
                     f"{steps / floor_s:,.0f} steps/s for PickJob(plain=False)"
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
