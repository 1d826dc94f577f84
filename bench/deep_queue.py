"""Every policy on a deep-queue trace, against EASY (issue 35 item 5).

    .venv/bin/python bench/deep_queue.py [--trace FILE] [--cpu-limit 600] [--policy P ...]
                                         [--out DIR] [--python PY]

A trace whose queue runs thousands deep: by default a Lublin-Feitelson workload at load 1.3
on 1,024 nodes with requested times 1-3x the runtime (30,000 jobs, `schedd workload lublin
--jobs 30000 --load 1.3 --seed 1 --procs 1024 --overestimate 3`; mean wait ~87 days: the
queue never drains). Each policy runs as `schedd simulate` in a child process limited to
--cpu-limit CPU seconds (RLIMIT_CPU); its CPU seconds (user + system of the child) and the
ratio to EASY's are printed as a Markdown table. Every run's files go to OUT/POLICY/, so two
versions of the code can be compared byte for byte (`--python /other/.venv/bin/python`,
then `cmp OUT1/P/jobs.csv OUT2/P/jobs.csv`).

Policies that need a marked trace or another machine (hybrid, the real-time ones, slurm)
are not in the default list: this bench is about queue depth on a plain node pool.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

POLICIES = ["easy", "fcfs", "easy-bestfit", "easy-sjf", "easy-wfp2", "agent", "conservative",
            "ckpt-backfill", "los", "delayed-los", "hybrid-los", "plan-sa"]


def lublin(path: Path, jobs: int, python: str) -> None:
    subprocess.run([python, "-m", "schedd", "workload", "lublin", "--jobs", str(jobs),
                    "--load", "1.3", "--seed", "1", "--procs", "1024", "--overestimate", "3",
                    "-o", str(path)], check=True, stdout=subprocess.DEVNULL,
                   cwd=path.parent)


def run(python: str, policy: str, trace: Path, out: Path, cpu_limit: int,
        extra: list[str]) -> tuple[float, float, bool]:
    """(CPU seconds, wall seconds, finished) of one simulate run in a child process."""

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([python, "-m", "schedd", "simulate", "--trace", str(trace),
                           "--policy", policy, "--out", str(out), "--no-progress", "--quiet",
                           *extra], preexec_fn=limit_cpu, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, cwd=out.parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0 and proc.returncode != -9 and proc.returncode != -24:
        sys.stderr.write(proc.stderr.decode()[-400:])
    return cpu, wall, proc.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, help="default: the Lublin load-1.3 trace "
                        "(generated into OUT)")
    parser.add_argument("--jobs", type=int, default=30_000, help="jobs of the generated trace")
    parser.add_argument("--limit", type=int, help="only the first N jobs of the trace")
    parser.add_argument("--cpu-limit", type=int, default=600)
    parser.add_argument("--policy", action="append", help="default: " + " ".join(POLICIES))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "deep_queue")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose schedd runs (another tree's venv)")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    trace = args.trace
    if trace is None:
        trace = args.out / f"lublin-{args.jobs // 1000}k-load1.3.cwf"
        if not trace.exists():
            lublin(trace, args.jobs, args.python)
    extra = ["--limit", str(args.limit)] if args.limit else []
    policies = args.policy or POLICIES
    if "easy" not in policies:
        policies = ["easy", *policies]
    print(f"trace {trace} {' '.join(extra)}; CPU limit {args.cpu_limit} s per run")
    print("| policy | CPU s | wall s | x EASY |\n|---|---|---|---|", flush=True)
    easy_cpu = None
    for policy in policies:
        cpu, wall, ok = run(args.python, policy, trace, args.out / policy, args.cpu_limit,
                            extra)
        if policy == "easy":
            easy_cpu = cpu
        ratio = f"{cpu / easy_cpu:.1f}" if easy_cpu else "-"
        if not ok:
            print(f"| {policy} | over {args.cpu_limit} (stopped) | {wall:.1f} | > {ratio} |",
                  flush=True)
        else:
            print(f"| {policy} | {cpu:.1f} | {wall:.1f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
