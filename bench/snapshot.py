"""What a daemon snapshot costs against the number of live jobs (issue 21).

    .venv/bin/python bench/snapshot.py [--jobs 10000,30000,100000] [--repeat 3]

An engine on `nodes:64` running EASY holds N queued jobs (1..64 nodes, submitted at 0,
one step taken, as a daemon fed by SubmitJobs streams does); the daemon's snapshot code
(schedd.daemon.snapshot) pickles it with the policy and restores it into a fresh engine.
Reported per N: best CPU seconds of `dumps` and `restore` over --repeat runs, CPU
microseconds per live job, and the snapshot's size. The engine thread holds the GIL for
most of that time, which the event loop's acknowledgements then wait for; docs/daemon.md
says how often a snapshot is taken.

    .venv/bin/python bench/snapshot.py --streams 6      # a real daemon, a growing queue

With --streams K: a real `schedd serve` (lockstep, nodes:64, EASY, journal on disk, the
default snapshot interval) takes K+1 SubmitJobs streams of 20,000 jobs that all stay
queued; printed: each stream's jobs/s after the first, and every snapshot the daemon
logged (live jobs, seconds).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from schedd.core.cluster import NodePool
from schedd.core.engine import Engine
from schedd.core.job import JobSpec
from schedd.daemon.snapshot import dumps, restore
from schedd.policies import make_policy


def engine_with_queue(jobs: int) -> Engine:
    pool = NodePool(64)
    engine = Engine(pool, make_policy("easy", [], pool), seed=0)
    for i in range(1, jobs + 1):
        engine.submit(JobSpec(id=i, submit=0.0, runtime=3600.0, nodes=1 + i % 64,
                              walltime=3600.0))
    engine.step()
    return engine


def best_cpu(work: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        out = work()
        best = min(best, time.process_time() - start)
    return best, out


def daemon_streams(streams: int, size: int = 20_000) -> None:
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "tests"))
    from daemon_proc import DaemonProc

    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    with tempfile.TemporaryDirectory() as work:
        dp = DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--policy", "easy",
                        "--state-db", f"{work}/journal.sqlite", "--log-level", "info")
        try:
            with dp.channel() as channel:
                stub = pb_grpc.SchedulerStub(channel)
                jobs = [pb.SubmitJobRequest(nodes=1 + i % 64, walltime=3600.0)
                        for i in range(size)]
                rates = []
                for k in range(streams + 1):
                    start = time.perf_counter()
                    stub.SubmitJobs(iter([pb.SubmitJobsRequest(jobs=jobs)]), timeout=300)
                    if k:  # the first stream fills an empty daemon: not counted
                        rates.append(size / (time.perf_counter() - start))
                stub.AdvanceClock(pb.AdvanceClockRequest(by=1), timeout=300)
            snaps = [json.loads(line) for line in dp.log().splitlines()
                     if "snapshot stored" in line]
        finally:
            dp.kill()
    print(f"streams of {size:,} jobs/s: " + ", ".join(f"{r:,.0f}" for r in rates))
    print("snapshots (live jobs, seconds): " + ", ".join(
        f"({s['live_jobs']:,}, {s['seconds']})" for s in snaps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="10000,30000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--streams", type=int, default=0,
                        help="instead: a real daemon taking this many 20,000-job streams")
    args = parser.parse_args()
    if args.streams:
        daemon_streams(args.streams)
        return
    import schedd.core.engine as compiled

    build = "compiled (mypyc)" if compiled.__file__.endswith(".so") else "pure Python"
    print(f"Machine: {platform.node()}, Python {platform.python_version()}, engine {build}")
    print("| live jobs | dumps CPU s | restore CPU s | dumps us/job | restore us/job | MB |")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in args.jobs.split(",")):
        old = engine_with_queue(n)
        named = {"engine": old, "primary": old.policy}
        dump_s, data = best_cpu(partial(dumps, named, {}), args.repeat)
        assert isinstance(data, bytes)
        fresh = engine_with_queue(0)
        target = {"engine": fresh, "primary": fresh.policy}
        load_s, _ = best_cpu(partial(restore, data, target), args.repeat)
        if len(fresh.jobs) != len(old.jobs):
            raise SystemExit("the restored engine does not hold the same jobs")
        print(f"| {n:,} | {dump_s:.3f} | {load_s:.3f} | {1e6 * dump_s / n:.1f} | "
              f"{1e6 * load_s / n:.1f} | {len(data) / 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
