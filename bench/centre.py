"""A daemon at the size of a large centre (issue 35, item 3), in one command.

    nice -n 10 .venv/bin/python bench/centre.py [--jobs 50000] [--nodes 100000]
        [--days 31] [--step 86400]

A month-long Lublin workload for a 100,000-node machine (`schedd workload lublin --jobs
50000 --procs 100000 --unit 32 --load 64 --seed 1`: 50,000 jobs arriving over 30.2
days, 64 times what the machine can run in that time, so the queue only grows) is
submitted in **one SubmitJobs stream** (messages of 1,000 jobs, each job with its trace
submit time, runtime and requested time) to `schedd serve --clock lockstep --cluster
nodes:100000 --policy easy` with its journal on disk. The clock is then advanced a day
at a time (AdvanceClock, which returns once the engine is there) through the month: the
50,000 jobs wait first for their submit times, then in EASY's queue, which ends the month
about 49,000 deep. Figures:

* EASY's scheduling pass: `schedd_policy_pass_seconds{policy="easy"}` over the month
  (every pass), its p99 read from the histogram's buckets (the bucket it falls in), the
  share of passes within 50 ms, and its mean. Goal p99 < 50 ms.
* Restart from the journal: the daemon is killed (SIGKILL) at the month's end and started
  again on the same journal; seconds from the process's start to "serving" (timed by the
  parent, start to the log line), and the queue it then reports equal to before. Goal
  < 30 s.
* RSS: the daemon's peak resident set (VmHWM) over the submission and the month, and
  after the restart. Goal < 1.5 GiB.

Writes bench/results/centre-latest.md and prints it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from daemon_proc import DaemonProc  # noqa: E402

from schedd.v1 import scheduler_pb2 as pb  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
    out: dict[str, float] = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def pass_figures(m: dict[str, float], policy: str = "easy") -> dict[str, Any]:
    """Count, mean, share within 50 ms and the bucket holding the p99, from the histogram."""
    prefix = "schedd_policy_pass_seconds_bucket{"
    buckets = sorted((float(k.split('le="')[1].split('"')[0]), v) for k, v in m.items()
                     if k.startswith(prefix) and f'policy="{policy}"' in k)
    count = m.get(f'schedd_policy_pass_seconds_count{{policy="{policy}"}}', 0.0)
    total = m.get(f'schedd_policy_pass_seconds_sum{{policy="{policy}"}}', 0.0)
    within = dict(buckets).get(0.05, 0.0)
    lower, p99 = 0.0, float("inf")
    for le, n in buckets:
        if n >= 0.99 * count:
            p99 = le
            break
        lower = le
    return {"passes": count, "mean_ms": 1000 * total / max(count, 1),
            "within_50ms": within / max(count, 1), "p99_bucket": (lower, p99)}


def workload(path: Path, jobs: int, nodes: int) -> Path:
    if not path.exists():
        subprocess.run([sys.executable, "-m", "schedd", "workload", "lublin", "--jobs",
                        str(jobs), "--procs", str(nodes), "--unit", "32", "--load", "64",
                        "--seed", "1", "-o", str(path)], check=True, capture_output=True)
    return path


def requests_of(path: Path) -> list[pb.SubmitJobRequest]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        f = line.split()
        job, submit, run, procs, req = int(f[0]), float(f[1]), float(f[3]), int(f[4]), float(
            f[8])
        out.append(pb.SubmitJobRequest(job_id=job, submit_time=submit, nodes=procs,
                                       runtime=max(run, 1.0), walltime=max(req, run, 1.0),
                                       request_id=f"centre:{job}"))
    return out


def serve_args(db: Path, nodes: int) -> list[str]:
    return ["--clock", "lockstep", "--cluster", f"nodes:{nodes}", "--policy", "easy",
            "--state-db", str(db), "--log-level", "warning"]


def queue_of(stub: Any) -> tuple[int, int, int]:
    c = stub.GetCluster(pb.GetClusterRequest(), timeout=300)
    return (sum(q.jobs for q in c.queue_by_class), sum(r.jobs for r in c.running_by_class),
            c.pending)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=50_000)
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--days", type=int, default=31)
    p.add_argument("--step", type=float, default=86_400.0)
    p.add_argument("--at-once", action="store_true",
                   help="submit every job for now (no trace submit times): all 50,000 in "
                   "EASY's queue at once")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="work in DIR and keep the journal (default: a temporary directory)")
    p.add_argument("--out", default=str(RESULTS / "centre-latest.md"))
    a = p.parse_args()
    started = dt.datetime.now(dt.UTC)
    lines = [f"{started:%Y-%m-%d %H:%M} UTC, {platform.node()}: {os.cpu_count()} cores, "
             f"Python {platform.python_version()}; load average at start {loadavg()}", ""]
    with tempfile.TemporaryDirectory(prefix="schedd-centre-") as tmpdir:
        tmp = Path(a.keep or tmpdir)
        tmp.mkdir(parents=True, exist_ok=True)
        trace = workload(tmp / "lublin-month.swf", a.jobs, a.nodes)
        reqs = requests_of(trace)
        first_submit = reqs[0].submit_time
        span = reqs[-1].submit_time - first_submit
        if a.at_once:
            for r in reqs:
                r.ClearField("submit_time")
        print(f"{len(reqs):,} jobs over {span / 86400:.1f} days", flush=True)
        db = tmp / "journal.sqlite"
        d = DaemonProc(*serve_args(db, a.nodes), metrics=True, timeout=120)
        try:
            stub = d.stub()
            t0 = time.perf_counter()
            r = stub.SubmitJobs(iter([pb.SubmitJobsRequest(jobs=reqs[lo:lo + 1000])
                                      for lo in range(0, len(reqs), 1000)]), timeout=1800)
            submit_s = time.perf_counter() - t0
            assert r.accepted == len(reqs), r
            rss_submitted = status_kb(d.proc.pid, "VmRSS")
            stub.AdvanceClock(pb.AdvanceClockRequest(by=0.001), timeout=3600)
            waiting = queue_of(stub)  # (queued, running, not yet submitted)
            print(f"one stream of {len(reqs):,} jobs: {submit_s:.1f} s; RSS "
                  f"{rss_submitted / 1024:.0f} MiB", flush=True)
            t0 = time.perf_counter()
            days = []
            for day in range(1, a.days + 1):
                target = first_submit + day * a.step
                d0 = time.perf_counter()
                stub.AdvanceClock(pb.AdvanceClockRequest(to=target), timeout=3600)
                queued, running, pending = queue_of(stub)
                days.append((day, time.perf_counter() - d0, queued, running, pending))
                print(f"day {day}: {days[-1][1]:.1f} s, queued {queued:,}, running "
                      f"{running:,}, not yet submitted {pending:,}, RSS "
                      f"{status_kb(d.proc.pid, 'VmRSS') / 1024:.0f} MiB", flush=True)
            month_s = time.perf_counter() - t0
            m = scrape(d.metrics_port)
            passes = pass_figures(m)
            before = queue_of(stub)
            peak = status_kb(d.proc.pid, "VmHWM")
            rss_end = status_kb(d.proc.pid, "VmRSS")
            iterations = m.get("schedd_iteration_seconds_count", 0.0)
            d.kill()
        finally:
            d.stop()
        journal_mb = sum(f.stat().st_size for f in tmp.glob("journal.sqlite*")) / 1e6
        t0 = time.perf_counter()
        d2 = DaemonProc(*serve_args(db, a.nodes), metrics=True, timeout=600)
        restart_s = time.perf_counter() - t0
        try:
            after = queue_of(d2.stub())
            rss_restart = status_kb(d2.proc.pid, "VmRSS")
            peak_restart = status_kb(d2.proc.pid, "VmHWM")
        finally:
            d2.stop()
    lo, hi = passes["p99_bucket"]
    gib = 1024 * 1024
    rows = [
        "| figure | value | goal | met |", "|---|---|---|---|",
        f"| workload | {len(reqs):,} Lublin jobs over {span / 86400:.1f} days on "
        f"nodes:{a.nodes:,}, submitted in one SubmitJobs stream in {submit_s:.1f} s; the "
        f"month replayed in {month_s:.0f} s ({a.days} AdvanceClock calls, "
        f"{iterations:,.0f} iterations); after the stream {waiting[0]:,} queued, "
        f"{waiting[1]:,} running, {waiting[2]:,} not yet submitted; at the month's end "
        f"{before[0]:,} queued, {before[1]:,} running, {before[2]:,} not yet submitted | "
        f"50,000 waiting | "
        f"{'yes' if waiting[0] + waiting[2] >= 0.99 * len(reqs) else 'no'} |",
        f"| EASY pass p99 ({passes['passes']:,.0f} passes) | in ({lo * 1000:g}, "
        f"{hi * 1000:g}] ms; {100 * passes['within_50ms']:.2f}% within 50 ms; mean "
        f"{passes['mean_ms']:.2f} ms | < 50 ms | {'yes' if hi <= 0.05 else 'no'} |",
        f"| restart from the journal after kill -9 (journal {journal_mb:,.0f} MB) | "
        f"{restart_s:.1f} s to serving; queue after {after[0]:,} / {after[1]:,} / "
        f"{after[2]:,} (queued / running / not yet submitted), before "
        f"{before[0]:,} / {before[1]:,} / {before[2]:,} | < 30 s, same queue | "
        f"{'yes' if restart_s < 30 and after == before else 'no'} |",
        f"| RSS | after the stream {rss_submitted / 1024:,.0f} MiB; end of the month "
        f"{rss_end / 1024:,.0f} MiB; peak (VmHWM) {peak / 1024:,.0f} MiB; after the "
        f"restart {rss_restart / 1024:,.0f} MiB (peak {peak_restart / 1024:,.0f}) | "
        f"< 1.5 GiB | {'yes' if max(peak, peak_restart) < 1.5 * gib else 'no'} |",
    ]
    lines += rows + ["", "| day | wall s | queued | running | not yet submitted |",
                     "|---:|---:|---:|---:|---:|"]
    lines += [f"| {day} | {s:.1f} | {q:,} | {r:,} | {pn:,} |" for day, s, q, r, pn in days]
    lines += ["", f"load average at end {loadavg()}"]
    RESULTS.mkdir(exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
