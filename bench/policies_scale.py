"""Policies at scale (issue 21): each policy family on growing prefixes of a synthetic trace
up to 100,000 jobs, and what one scheduling pass costs against the queue length.

    .venv/bin/python bench/policies_scale.py [--jobs 100000] [--cpu-limit 300] [--family F]

Each run is a child process (this script with --one) limited to --cpu-limit CPU seconds
(RLIMIT_CPU); it reports its simulation CPU seconds and peak RSS. Inside, the policy is wrapped
to time every pass together with the queue length it saw, so a family that cannot finish
100,000 jobs here still shows how its pass cost grows: the mean pass time per queue-length
bucket, and the slope of log(pass time) against log(queue length) (1 = linear). Prefixes
grow 10k, 30k, 100k and stop after the first run over the limit.

Traces: the seeded synthetic trace of bench/run.py (1,024 nodes, about 85% load); the
hybrid policy runs it marked by `schedd workload hybrid`, the real-time policies run it
marked by `schedd workload realtime --percent 10` and rescaled to Mira. Writes
bench/results/policies.md.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "bench"))

# family -> (policy, trace kind, cluster, policy options)
FAMILIES: dict[str, tuple[str, str, str | None, list[str]]] = {
    "fcfs": ("fcfs", "plain", None, []),
    "easy": ("easy", "plain", None, []),
    "conservative": ("conservative", "plain", None, []),
    "conservative (depth=16)": ("conservative", "plain", None, ["depth=16"]),
    "ckpt-backfill": ("ckpt-backfill", "plain", None, []),
    "los (delayed-los)": ("delayed-los", "plain", None, []),
    "plan-sa": ("plan-sa", "plain", None, []),
    "hybrid": ("hybrid", "hybrid", None, []),
    "real-time (wcjs)": ("wcjs", "realtime", "mira", []),
    "real-time (rt-preempt)": ("rt-preempt", "realtime", "mira", []),
}
PREFIXES = (10_000, 30_000, 100_000)
BUCKETS = (0, 1, 10, 30, 100, 300, 1_000, 3_000, 10_000)


def traces(jobs: int) -> dict[str, Path]:
    from run import synthetic_trace

    RESULTS.mkdir(parents=True, exist_ok=True)
    plain = RESULTS / f"synthetic-{jobs // 1000}k.swf"
    if not plain.exists():
        synthetic_trace(plain, jobs)
    out = {"plain": plain}
    derived = {
        "hybrid": ["workload", "hybrid", str(plain), "--seed", "1"],
        "realtime": ["workload", "realtime", str(plain), "--percent", "10", "--seed", "1",
                     "--normalize-from", "1024"],
    }
    for kind, args in derived.items():
        path = RESULTS / f"synthetic-{jobs // 1000}k-{kind}.swf"
        if not path.exists():
            subprocess.run([sys.executable, "-m", "schedd", *args, "-o", str(path)],
                           check=True, cwd=RESULTS)
        out[kind] = path
    return out


class TimedPolicy:
    """Forwards to a policy and records (queue length, seconds) of every pass."""

    def __init__(self, inner: Any):
        self._inner = inner
        self.samples: list[tuple[int, float]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def schedule(self, view: Any) -> Any:
        start = time.perf_counter()
        decisions = self._inner.schedule(view)
        self.samples.append((len(view.queue), time.perf_counter() - start))
        return decisions


def one(policy: str, trace_path: str, cluster_spec: str | None, limit: int,
        opts: list[str]) -> dict[str, Any]:
    """Simulate the first `limit` jobs in this process; the pass-time profile."""
    from schedd.core.cluster import NodePool
    from schedd.core.cluster_spec import parse_cluster
    from schedd.policies import make_policy
    from schedd.sim import simulate
    from schedd.traces import normalize, read_trace
    from schedd.traces.normalize import select

    cluster = parse_cluster(cluster_spec) if cluster_spec else None
    trace = normalize(read_trace(trace_path), max_nodes=cluster.total_nodes if cluster else None)
    trace = select(trace, limit=limit)
    cluster = cluster or NodePool(trace.max_nodes)
    timed = TimedPolicy(make_policy(policy, opts, cluster))
    start = time.process_time()
    run = simulate(trace, cluster, timed)  # type: ignore[arg-type]
    cpu = time.process_time() - start
    buckets: dict[int, list[float]] = {}
    for q, s in timed.samples:
        b = max(x for x in BUCKETS if x <= q)
        buckets.setdefault(b, []).append(s)
    # Slope of log(mean pass) on log(queue length) over the buckets with a queue.
    pts = [(math.log(b if b else 0.5), math.log(sum(v) / len(v)))
           for b, v in buckets.items() if b >= 10 and len(v) >= 20]
    slope = None
    if len(pts) >= 2:
        mx, my = (sum(p[i] for p in pts) / len(pts) for i in (0, 1))
        den = sum((x - mx) ** 2 for x, _ in pts)
        slope = sum((x - mx) * (y - my) for x, y in pts) / den if den else None
    return {"jobs": int(run.summary["jobs"]), "sim_cpu": cpu, "passes": len(timed.samples),
            "max_queue": max((q for q, _ in timed.samples), default=0),
            "pass_us": {str(b): round(1e6 * sum(v) / len(v), 1)
                        for b, v in sorted(buckets.items())},
            "slope": slope, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def child(family: str, trace: Path, limit: int, cpu_limit: int) -> dict[str, Any]:
    policy, _, cluster, opts = FAMILIES[family]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", policy, str(trace),
           cluster or "", str(limit), *opts]

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=limit_cpu, cwd=RESULTS)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"failed": err.decode().strip().splitlines()[-1:] or [f"rc {proc.returncode}"],
                "wall": wall}
    result = json.loads(out)
    result["wall"] = wall
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--cpu-limit", type=int, default=300)
    parser.add_argument("--family", action="append", choices=list(FAMILIES))
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        policy, trace, cluster, limit, *opts = args.one
        print(json.dumps(one(policy, trace, cluster or None, int(limit), opts)))
        return
    paths = traces(args.jobs)
    lines = ["| family | policy | jobs | wall s | sim CPU s | jobs/CPU-s | peak RSS MiB "
             "| passes | max queue | mean pass us by queue length | slope |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for family in args.family or list(FAMILIES):
        policy, kind, _, opts = FAMILIES[family]
        for n in (p for p in PREFIXES if p <= args.jobs):
            r = child(family, paths[kind], n, args.cpu_limit)
            if "failed" in r:
                lines.append(f"| {family} | {policy} | {n:,} | over {args.cpu_limit} s CPU "
                             f"({r['failed'][0][:60]}) | | | | | | | |")
                print(lines[-1], flush=True)
                break
            profile = ", ".join(f"{k}+: {v:g}" for k, v in r["pass_us"].items())
            slope = "-" if r["slope"] is None else f"{r['slope']:.2f}"
            named = " ".join([policy, *opts])
            lines.append(f"| {family} | {named} | {r['jobs']:,} | {r['wall']:.1f} | "
                         f"{r['sim_cpu']:.1f} | {r['jobs'] / r['sim_cpu']:,.0f} | "
                         f"{r['rss_mib']} | "
                         f"{r['passes']:,} | {r['max_queue']:,} | {profile} | {slope} |")
            print(lines[-1], flush=True)
    (RESULTS / "policies.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
