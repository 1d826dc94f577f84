"""Daemon benchmark: `schedd serve` submission rate and latency, and GetJob under a slow pass.

    .venv/bin/python bench/daemon.py [--quick] [--repeat 3] [--clients 1,16,64,256]
        [--journals disk,:memory:] [--sizes 1000,5000,20000] [--submit-only]

Every daemon is a real `schedd serve` subprocess and every measuring client is another
process (multiprocessing, spawn) using `grpc.aio`, so client and daemon do not share a GIL.
Each measurement runs on a fresh daemon, --repeat times; the table shows the median and
every run. What it measures (targets from the daemon issue):

1. Unary SubmitJob from N concurrent in-flight calls (N = 1, 16, 64, 256; --clients) on
   one channel while the daemon
   holds a 5,000-job queue under `easy`: `--clock lockstep --cluster nodes:64`, 5,000
   jobs of 64 nodes (walltime 10^7 s) loaded by one SubmitJobs stream, AdvanceClock(by=1)
   so one runs and 4,999 wait. Then warm-up, then a timed window; rate = calls completed
   in the window / window, latency (p50, p99, p999) per call with perf_counter. A call
   refused with RESOURCE_EXHAUSTED (back-pressure) is counted and retried after its
   `retry-after-ms` hint. Journal on disk (WAL, synchronous=FULL, the production setting)
   and `:memory:`. Target (issue 21) at N=64 on disk: >= 5,000/s, p99 < 10 ms.
2. SubmitJobs client streams of 1,000, 5,000 and 20,000 jobs (--sizes) on the same loaded
   daemon: jobs / (stream start to response). Target >= 50,000 jobs/s on disk.
3. GetJob latency while the `spin` test policy (tests/plugins/slow_policies.py) computes
   1 s per pass (`--budget 5 --clock accelerated --speedup 1`), a job submitted every 0.5 s
   to keep passes coming; sequential GetJob at ~200/s. Target p99 < 20 ms. A baseline with
   the same policy not spinning (`every=10^9`) is shown for comparison.

Issue 35 item 1, each on its own (no other row runs):
* `--vs-bare ROUNDS [--clients 64] [--baseline TREE]`: the daemon (journal on disk) and the
  bare grpc.aio server (same proto, SubmitJob answers at once) under the same closed-loop
  client, alternating, a fresh server each; per round rate, p99, server CPU and CPU per
  call, and the median of daemon / bare. `--baseline TREE` adds a daemon run from another
  source tree (PYTHONPATH) to the rotation: before and after in the same run.
  `SCHEDD_BENCH_UVLOOP=1` runs the bare server on uvloop.
* `--open-loop RATE`: SubmitJob sent at RATE/s for 10 s after 1 s at that rate, latency
  from each call's scheduled send time; the daemon, then the bare server.

Daemon-side figures (journal commits, jobs per commit, policy pass seconds) come from the
daemon's /metrics; CPU shares from /proc. Writes bench/results/daemon-latest.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SPIN_PLUGIN = ROOT / "tests" / "plugins" / "slow_policies.py"
QUEUE = 5_000
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _import_helpers() -> tuple[Any, Any]:
    """bench/run.py's calibration loop and tests/daemon_proc.py's DaemonProc."""
    for sub in ("bench", "tests"):
        if str(ROOT / sub) not in sys.path:
            sys.path.insert(0, str(ROOT / sub))
    from daemon_proc import DaemonProc
    from run import calibration

    return calibration, DaemonProc


# ---------------------------------------------------------------------- helpers (parent)
def machine_line() -> str:
    """The same machine description as bench/run.py prints."""
    return (f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.platform()}")


def fsync_ms(directory: str, rounds: int = 50) -> float:
    """Median wall ms of a 4 KiB write + fsync in `directory` (the journal's disk)."""
    path = os.path.join(directory, "fsync-probe")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    times = []
    try:
        for i in range(rounds):
            os.pwrite(fd, os.urandom(4096), (i % 8) * 4096)
            start = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        os.unlink(path)
    return statistics.median(times) * 1000


def scrape(port: int) -> dict[str, float]:
    """Flat {series{labels}: value} of the daemon's /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}"] = s.value
    return out


def delta(after: dict[str, float], before: dict[str, float], prefix: str) -> float:
    """Sum over the series starting with `prefix` (all label sets) of after - before."""
    return sum(v - before.get(k, 0.0) for k, v in after.items() if k.startswith(prefix))


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def in_client(fn: Any, *args: Any) -> Any:
    """Run `fn(*args)` in a fresh (spawned) client process and return its result."""
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


# ---------------------------------------------------------------------- clients (children)
def unary_client(address: str, daemon_pid: int, concurrency: int, warmup: float,
                 duration: float) -> dict[str, Any]:
    return asyncio.run(_unary(address, daemon_pid, concurrency, warmup, duration))


async def _unary(address: str, daemon_pid: int, concurrency: int, warmup: float,
                 duration: float) -> dict[str, Any]:
    import grpc

    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    lat: list[float] = []
    errors: list[str] = []
    refused = [0]  # RESOURCE_EXHAUSTED answers (back-pressure), retried after the hint
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), 10)
        stub = pb_grpc.SchedulerStub(channel)
        t0 = time.perf_counter() + warmup
        t1 = t0 + duration
        cpu: dict[str, float] = {}

        async def sampler() -> None:
            await asyncio.sleep(max(0.0, t0 - time.perf_counter()))
            cpu["client0"], cpu["daemon0"] = time.process_time(), cpu_seconds(daemon_pid)
            await asyncio.sleep(max(0.0, t1 - time.perf_counter()))
            cpu["client1"], cpu["daemon1"] = time.process_time(), cpu_seconds(daemon_pid)

        async def worker(k: int) -> None:
            i = k
            while True:
                start = time.perf_counter()
                if start >= t1:
                    return
                req = pb.SubmitJobRequest(nodes=1 + i % 64, walltime=3600.0)
                i += concurrency
                try:
                    await stub.SubmitJob(req, timeout=30)
                except grpc.aio.AioRpcError as err:
                    if err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                        refused[0] += 1
                        hint = dict(err.trailing_metadata() or ()).get("retry-after-ms", "10")
                        await asyncio.sleep(int(hint) / 1000)
                    else:
                        errors.append(f"{err.code().name}: {err.details()}")
                    continue
                end = time.perf_counter()
                if t0 <= end <= t1:
                    lat.append(end - start)

        await asyncio.gather(sampler(), *(worker(k) for k in range(concurrency)))
    return {"lat": lat, "window": duration, "errors": errors, "refused": refused[0],
            "client_cpu": (cpu["client1"] - cpu["client0"]) / duration,
            "daemon_cpu": (cpu["daemon1"] - cpu["daemon0"]) / duration}


def open_loop_client(address: str, daemon_pid: int, rate: float, warmup: float,
                     duration: float) -> dict[str, Any]:
    return asyncio.run(_open_loop(address, daemon_pid, rate, warmup, duration))


async def _open_loop(address: str, daemon_pid: int, rate: float, warmup: float,
                     duration: float) -> dict[str, Any]:
    """SubmitJob sent at a fixed rate whatever the answers do (open loop). A call's
    latency runs from its scheduled send time, so a stalled client or server counts
    against the figures instead of hiding (no coordinated omission)."""
    import grpc

    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    lat: list[float] = []
    errors: list[str] = []
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), 10)
        stub = pb_grpc.SchedulerStub(channel)
        t0 = time.perf_counter() + warmup
        start = time.perf_counter()
        total = int((warmup + duration) * rate)
        cpu0 = cpu_seconds(daemon_pid)

        async def call(k: int, due: float) -> None:
            req = pb.SubmitJobRequest(nodes=1 + k % 64, walltime=3600.0)
            try:
                await stub.SubmitJob(req, timeout=30)
            except grpc.aio.AioRpcError as err:
                if due >= t0:
                    errors.append(f"{err.code().name}: {err.details()}")
                return
            if due >= t0:
                lat.append(time.perf_counter() - due)

        tasks = []
        for k in range(total):
            due = start + k / rate
            now = time.perf_counter()
            if due > now:
                await asyncio.sleep(due - now)
            tasks.append(asyncio.ensure_future(call(k, due)))
        await asyncio.gather(*tasks)
        cpu1 = cpu_seconds(daemon_pid)
    return {"lat": lat, "errors": errors, "sent": total - int(warmup * rate),
            "daemon_cpu": (cpu1 - cpu0) / (warmup + duration)}


def stream_client(address: str, daemon_pid: int, metrics_port: int, sizes: list[int],
                  pause: float) -> list[dict[str, Any]]:
    return asyncio.run(_streams(address, daemon_pid, metrics_port, sizes, pause))


async def _streams(address: str, daemon_pid: int, metrics_port: int, sizes: list[int],
                   pause: float) -> list[dict[str, Any]]:
    import grpc

    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    out = []
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), 10)
        stub = pb_grpc.SchedulerStub(channel)
        for size in sizes:
            reqs = [pb.SubmitJobRequest(nodes=1 + i % 64, walltime=3600.0)
                    for i in range(size)]
            before = scrape(metrics_port) if metrics_port else {}
            cpu0, dcpu0 = time.process_time(), cpu_seconds(daemon_pid)
            start = time.perf_counter()
            r = await stub.SubmitJobs(iter([pb.SubmitJobsRequest(jobs=reqs)]), timeout=120)
            seconds = time.perf_counter() - start
            cpu1, dcpu1 = time.process_time(), cpu_seconds(daemon_pid)
            after = scrape(metrics_port) if metrics_port else {}
            out.append({"size": size, "seconds": seconds, "accepted": r.accepted,
                        "client_cpu": (cpu1 - cpu0) / seconds,
                        "daemon_cpu": (dcpu1 - dcpu0) / seconds,
                        "commit_s": delta(after, before, "schedd_journal_commit_seconds_sum")})
            await asyncio.sleep(pause)  # let the engine take the jobs in before the next
    return out


def getjob_client(address: str, metrics_port: int, job_id: int, rate: float, warmup: float,
                  duration: float) -> dict[str, Any]:
    return asyncio.run(_getjob(address, metrics_port, job_id, rate, warmup, duration))


async def _getjob(address: str, metrics_port: int, job_id: int, rate: float, warmup: float,
                  duration: float) -> dict[str, Any]:
    import grpc

    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    lat: list[float] = []
    errors: list[str] = []
    async with grpc.aio.insecure_channel(address) as channel:
        await asyncio.wait_for(channel.channel_ready(), 10)
        stub = pb_grpc.SchedulerStub(channel)
        req = pb.GetJobRequest(job_id=job_id)
        end_warmup = time.perf_counter() + warmup
        while time.perf_counter() < end_warmup:
            await stub.GetJob(req, timeout=30)
            await asyncio.sleep(1 / rate)
        before = scrape(metrics_port)
        t0 = time.perf_counter()
        t1 = t0 + duration
        k = 0
        while True:
            due = t0 + k / rate
            now = time.perf_counter()
            if due > now:
                await asyncio.sleep(due - now)
            start = time.perf_counter()
            if start >= t1:
                break
            try:
                await stub.GetJob(req, timeout=30)
                lat.append(time.perf_counter() - start)
            except grpc.aio.AioRpcError as err:
                errors.append(f"{err.code().name}: {err.details()}")
            k += 1
        window = time.perf_counter() - t0
        after = scrape(metrics_port)
    return {"lat": lat, "errors": errors, "window": window,
            "passes": delta(after, before, "schedd_policy_pass_seconds_count"),
            "pass_s": delta(after, before, "schedd_policy_pass_seconds_sum"),
            "overruns": delta(after, before, "schedd_budget_overruns_total")}


def bare_server(ports: Any) -> None:
    """A grpc.aio server with schedd's service and no schedd logic: SubmitJob answers at
    once, SubmitJobs counts the messages. The floor that gRPC Python itself sets.
    SCHEDD_BENCH_UVLOOP=1 runs it on uvloop's event loop (an experiment, issue 35)."""
    if os.environ.get("SCHEDD_BENCH_UVLOOP") == "1":
        import uvloop

        uvloop.run(_bare_server(ports))
        return
    asyncio.run(_bare_server(ports))


async def _bare_server(ports: Any) -> None:
    import grpc

    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    class Bare(pb_grpc.SchedulerServicer):
        n = 0

        async def SubmitJob(self, request: Any, context: Any) -> Any:  # noqa: N802
            self.n += 1
            return pb.SubmitJobResponse(job_id=self.n, submit_time=0.0, stimulus_id=self.n)

        async def SubmitJobs(self, request_iterator: Any, context: Any) -> Any:  # noqa: N802
            ids = []
            async for batch in request_iterator:
                for _ in batch.jobs:
                    self.n += 1
                    ids.append(self.n)
            return pb.SubmitJobsResponse(job_ids=ids, accepted=len(ids))

    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    pb_grpc.add_SchedulerServicer_to_server(Bare(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    ports.put(port)
    await server.wait_for_termination()


# ---------------------------------------------------------------------- scenarios (parent)
def serve_args(state_db: str) -> list[str]:
    return ["--clock", "lockstep", "--cluster", "nodes:64", "--policy", "easy",
            "--state-db", state_db, "--log-level", "warning"]


def loaded_daemon(DaemonProc: Any, state_db: str,  # noqa: N803 — a class
                  env: dict[str, str] | None = None) -> Any:
    """A daemon holding QUEUE jobs of 64 nodes on 64 nodes: one running, QUEUE-1 waiting."""
    from schedd.v1 import scheduler_pb2 as pb

    dp = DaemonProc(*serve_args(state_db), metrics=True, env=env)
    try:
        with dp.channel() as channel:
            from schedd.v1 import scheduler_pb2_grpc as pb_grpc

            stub = pb_grpc.SchedulerStub(channel)
            batch = pb.SubmitJobsRequest(jobs=[pb.SubmitJobRequest(nodes=64, walltime=1e7)
                                               for _ in range(QUEUE)])
            r = stub.SubmitJobs(iter([batch]), timeout=120)
            assert r.accepted == QUEUE, r
            stub.AdvanceClock(pb.AdvanceClockRequest(by=1), timeout=120)
            c = stub.GetCluster(pb.GetClusterRequest(), timeout=30)
            waiting = sum(q.jobs for q in c.queue_by_class)
            running = sum(q.jobs for q in c.running_by_class)
            assert (waiting, running) == (QUEUE - 1, 1), (waiting, running)
    except BaseException:
        dp.stop()
        raise
    return dp


def queue_length(dp: Any) -> int:
    from schedd.v1 import scheduler_pb2 as pb

    with dp.channel() as channel:
        from schedd.v1 import scheduler_pb2_grpc as pb_grpc

        c = pb_grpc.SchedulerStub(channel).GetCluster(pb.GetClusterRequest(), timeout=30)
    return sum(q.jobs for q in c.queue_by_class)


def stop(dp: Any) -> None:
    code = dp.stop()
    if code != 0:
        raise SystemExit(f"schedd serve exited with {code}:\n{dp.log()}")


def run_unary(DaemonProc: Any, tmp: str, journal: str, concurrency: int, warmup: float,  # noqa: N803
              duration: float, tag: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    state_db = os.path.join(tmp, f"unary-{tag}.sqlite") if journal == "disk" else ":memory:"
    dp = loaded_daemon(DaemonProc, state_db, env)
    try:
        before = scrape(dp.metrics_port)
        res = in_client(unary_client, dp.address, dp.proc.pid, concurrency, warmup, duration)
        after = scrape(dp.metrics_port)
        res["queue_end"] = queue_length(dp)
    finally:
        stop(dp)
    submitted = delta(after, before, "schedd_submissions_total")
    commits = delta(after, before, "schedd_journal_commit_seconds_count")
    res["rate"] = len(res["lat"]) / res["window"]
    res["p50"], res["p99"] = pct(res["lat"], 50) * 1e3, pct(res["lat"], 99) * 1e3
    res["p999"] = pct(res["lat"], 99.9) * 1e3
    res["per_commit"] = submitted / commits if commits else float("nan")
    res["commit_ms"] = (delta(after, before, "schedd_journal_commit_seconds_sum") / commits
                        * 1e3 if commits else float("nan"))
    res["iter_ms"] = (delta(after, before, "schedd_iteration_seconds_sum")
                      / max(1.0, delta(after, before, "schedd_iteration_seconds_count")) * 1e3)
    del res["lat"]
    return res


def run_streams(DaemonProc: Any, tmp: str, journal: str, sizes: list[int],  # noqa: N803
                tag: str) -> list[dict[str, Any]]:
    state_db = os.path.join(tmp, f"stream-{tag}.sqlite") if journal == "disk" else ":memory:"
    dp = loaded_daemon(DaemonProc, state_db)
    try:
        return in_client(stream_client, dp.address, dp.proc.pid, dp.metrics_port, sizes, 1.0)
    finally:
        stop(dp)


def run_bare(concurrencies: list[int], sizes: list[int], warmup: float,
             duration: float) -> dict[Any, Any]:
    """Unary and stream clients against `bare_server` (a fresh one per call)."""
    ctx = mp.get_context("spawn")
    ports = ctx.Queue()
    proc = ctx.Process(target=bare_server, args=(ports,), daemon=True)
    proc.start()
    try:
        address = f"127.0.0.1:{ports.get(timeout=30)}"
        out: dict[Any, Any] = {}
        for n in concurrencies:
            res = in_client(unary_client, address, proc.pid, n, warmup, duration)
            res["rate"] = len(res["lat"]) / res["window"]
            res["p50"], res["p99"] = pct(res["lat"], 50) * 1e3, pct(res["lat"], 99) * 1e3
            res["p999"] = pct(res["lat"], 99.9) * 1e3
            del res["lat"]
            out[n] = res
        for r in in_client(stream_client, address, proc.pid, 0, sizes, 0.2):
            r["rate"] = r["size"] / r["seconds"]
            out[("stream", r["size"])] = r
        return out
    finally:
        proc.terminate()
        proc.join(10)


def with_bare(fn: Any, *args: Any) -> Any:
    """`fn(address, server_pid, *args)` in a client process against a fresh bare server."""
    ctx = mp.get_context("spawn")
    ports = ctx.Queue()
    proc = ctx.Process(target=bare_server, args=(ports,), daemon=True)
    proc.start()
    try:
        return in_client(fn, f"127.0.0.1:{ports.get(timeout=30)}", proc.pid, *args)
    finally:
        proc.terminate()
        proc.join(10)


def summarise(res: dict[str, Any], window: float) -> dict[str, Any]:
    res["rate"] = len(res["lat"]) / window
    res["p50"], res["p99"] = pct(res["lat"], 50) * 1e3, pct(res["lat"], 99) * 1e3
    del res["lat"]
    return res


def vs_bare(DaemonProc: Any, tmp: str, rounds: int, n: int, warmup: float,  # noqa: N803
            window: float, baseline: str | None) -> None:
    """Issue 35 item 1: the daemon (journal on disk) against the bare server, the same
    closed-loop client of `n` callers, alternating (the order rotates each round), each
    on a fresh server; prints each round and the median of daemon / bare. `baseline`: a
    source tree (PYTHONPATH) whose daemon runs as a third contender, "base"."""
    names = ["daemon", "bare"] + (["base"] if baseline else [])
    ratios: dict[str, list[float]] = {name: [] for name in names if name != "bare"}
    for i in range(rounds):
        got: dict[str, dict[str, Any]] = {}
        for which in names[i % len(names):] + names[:i % len(names)]:
            if which == "bare":
                got[which] = summarise(with_bare(unary_client, n, warmup, window), window)
            else:
                env = {"PYTHONPATH": baseline} if which == "base" and baseline else None
                got[which] = run_unary(DaemonProc, tmp, "disk", n, warmup, window,
                                       f"vs-{which}-{i}", env)
        parts = []
        for which in names:
            r = got[which]
            us = r["daemon_cpu"] / r["rate"] * 1e6 if r["rate"] else float("nan")
            parts.append(f"{which} {r['rate']:,.0f}/s p99 {r['p99']:.1f} ms cpu "
                         f"{r['daemon_cpu']:.0%} {us:.0f} us/call"
                         + (f" {r['per_commit']:.1f}/commit" if "per_commit" in r else "")
                         + (f" {len(r['errors'])} errors" if r["errors"] else ""))
            if which != "bare":
                ratios[which].append(r["rate"] / got["bare"]["rate"])
        print(f"round {i + 1}: " + "; ".join(parts) + "; ratio "
              + " ".join(f"{k} {v[-1]:.2f}x" for k, v in ratios.items())
              + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    for which, values in ratios.items():
        print(f"{which} / bare, N={n}, median of {rounds}: {statistics.median(values):.2f}x "
              f"(rounds {fmt_runs(values, '.2f')})", flush=True)


def open_loop(DaemonProc: Any, tmp: str, rate: float, duration: float,  # noqa: N803
              who: str, baseline: str | None = None) -> None:
    """Issue 35 item 1: SubmitJob at `rate`/s for `duration` s (after 1 s at the same
    rate), journal on disk; p50/p99 from each call's scheduled send time."""
    if who == "bare":
        res = with_bare(open_loop_client, rate, 1.0, duration)
    else:
        env = {"PYTHONPATH": baseline} if who == "base" and baseline else None
        dp = loaded_daemon(DaemonProc, os.path.join(tmp, f"open-loop-{who}.sqlite"), env)
        try:
            res = in_client(open_loop_client, dp.address, dp.proc.pid, rate, 1.0, duration)
        finally:
            stop(dp)
    done, errors = len(res["lat"]), res["errors"]
    print(f"open loop {who}, {rate:,.0f}/s for {duration:g} s: {done:,} of {res['sent']:,} "
          f"answered, p50 {pct(res['lat'], 50) * 1e3:.1f} ms, p99 "
          f"{pct(res['lat'], 99) * 1e3:.1f} ms, max {max(res['lat'] or [0]) * 1e3:.1f} ms, "
          f"{len(errors)} errors{' (' + errors[0] + ')' if errors else ''}, cpu "
          f"{res['daemon_cpu']:.0%}; load {os.getloadavg()[0]:.2f}", flush=True)


def run_getjob(DaemonProc: Any, tmp: str, every: int, warmup: float, duration: float,  # noqa: N803
               tag: str) -> dict[str, Any]:
    from schedd.v1 import scheduler_pb2 as pb
    from schedd.v1 import scheduler_pb2_grpc as pb_grpc

    dp = DaemonProc("--plugin", str(SPIN_PLUGIN), "--policy", "spin", "--opt", "seconds=1",
                    "--opt", f"every={every}", "--budget", "5", "--clock", "accelerated",
                    "--speedup", "1", "--state-db", os.path.join(tmp, f"getjob-{tag}.sqlite"),
                    "--log-level", "warning", metrics=True)
    stopping = threading.Event()
    submitted = [0]

    def submitter(stub: Any) -> None:  # a job every 0.5 s keeps policy passes coming
        while not stopping.wait(0.5):
            stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=1e6), timeout=30)
            submitted[0] += 1

    try:
        with dp.channel() as channel:
            stub = pb_grpc.SchedulerStub(channel)
            job_id = stub.SubmitJob(pb.SubmitJobRequest(nodes=1, walltime=1e6),
                                    timeout=30).job_id
            thread = threading.Thread(target=submitter, args=(stub,), daemon=True)
            thread.start()
            try:
                res = in_client(getjob_client, dp.address, dp.metrics_port, job_id, 200.0,
                                warmup, duration)
            finally:
                stopping.set()
                thread.join(30)
    finally:
        stop(dp)
    lat = res.pop("lat")
    res["calls"] = len(lat)
    res["p50"], res["p99"] = pct(lat, 50) * 1e3, pct(lat, 99) * 1e3
    res["max"] = max(lat) * 1e3 if lat else float("nan")
    res["submitted"] = submitted[0]
    return res


# ---------------------------------------------------------------------- report
def med(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def fmt_runs(values: list[float], spec: str = ",.0f") -> str:
    return " / ".join(format(v, spec) for v in values)


def git_head() -> str:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (+ uncommitted changes)" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="short smoke run: one repeat, short windows, fewer cases")
    parser.add_argument("--repeat", type=int, default=None,
                        help="fresh-daemon runs per case (default 3; 1 with --quick)")
    parser.add_argument("--clients", default="1,16,64,256",
                        help="concurrent unary clients to measure (default 1,16,64,256)")
    parser.add_argument("--journals", default="disk,:memory:",
                        help="journals to measure: disk, :memory: (default both)")
    parser.add_argument("--sizes", default=None,
                        help="SubmitJobs stream sizes (default 1000,5000,20000; 1000,20000 "
                             "with --quick)")
    parser.add_argument("--submit-only", action="store_true",
                        help="skip the bare-server reference and the GetJob scenario")
    parser.add_argument("--vs-bare", type=int, default=0, metavar="ROUNDS",
                        help="only: the daemon (disk) against the bare server at the last "
                             "--clients value, ROUNDS alternating pairs, and the ratio")
    parser.add_argument("--open-loop", type=float, default=0, metavar="RATE",
                        help="only: SubmitJob at RATE/s for 10 s, daemon then bare server")
    parser.add_argument("--baseline", default=None, metavar="TREE",
                        help="with --vs-bare: also a daemon run from another source tree "
                             "(PYTHONPATH=TREE), for before/after in the same run")
    args = parser.parse_args()
    calibration, DaemonProc = _import_helpers()  # noqa: N806 — a class
    if args.vs_bare or args.open_loop:
        print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit {git_head()}; "
              f"{machine_line()}; load {os.getloadavg()[0]:.2f}; calibration loop "
              f"{calibration():.3f} s", flush=True)
        warmup, window = (0.5, 2.0) if args.quick else (1.0, 5.0)
        with tempfile.TemporaryDirectory(prefix="schedd-bench-") as tmp:
            if args.vs_bare:
                vs_bare(DaemonProc, tmp, args.vs_bare, int(args.clients.split(",")[-1]),
                        warmup, window, args.baseline)
            if args.open_loop:
                for who in ["daemon", "bare"] + (["base"] if args.baseline else []):
                    open_loop(DaemonProc, tmp, args.open_loop, 10.0, who, args.baseline)
        return
    repeat = args.repeat or (1 if args.quick else 3)
    warmup, window = (0.5, 2.0) if args.quick else (1.0, 5.0)
    concurrencies = [int(n) for n in args.clients.split(",")]
    journals = args.journals.split(",")
    sizes = [int(n) for n in (args.sizes or ("1000,20000" if args.quick
                                              else "1000,5000,20000")).split(",")]
    g_warmup, g_window = (1.0, 3.0) if args.quick else (2.0, 10.0)
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.UTC)
    load0 = os.getloadavg()[0]
    calib = calibration()
    rows: list[str] = []
    detail: list[str] = []
    sdetail: list[str] = []

    def row(metric: str, value: str, runs: str, target: str, ok: bool | None) -> None:
        verdict = "—" if ok is None else ("pass" if ok else "**FAIL**")
        rows.append(f"| {metric} | {value} | {runs} | {target} | {verdict} |")
        print(rows[-1], flush=True)

    with tempfile.TemporaryDirectory(prefix="schedd-bench-") as tmp:
        sync_ms = fsync_ms(tmp)
        for journal in journals:
            for n in concurrencies:
                runs = [run_unary(DaemonProc, tmp, journal, n, warmup, window, f"{n}-{i}")
                        for i in range(repeat)]
                errors = sum(len(r["errors"]) for r in runs)
                refused = sum(r["refused"] for r in runs)
                rate, p50, p99 = med(runs, "rate"), med(runs, "p50"), med(runs, "p99")
                target, ok = "(reference)", None
                if n == 64 and journal == "disk":
                    target, ok = ">= 5,000/s, p99 < 10 ms", rate >= 5000 and p99 < 10
                value = (f"{rate:,.0f}/s; p50 {p50:.1f} ms; p99 {p99:.1f} ms; "
                         f"p999 {med(runs, 'p999'):.1f} ms")
                if refused:
                    value += f"; {refused} RESOURCE_EXHAUSTED (retried after the hint)"
                if errors:
                    value += f"; {errors} errors ({runs[0]['errors'][:1]})"
                    ok = False
                row(f"SubmitJob unary, journal {journal}, N={n}", value,
                    f"{fmt_runs([r['rate'] for r in runs])} /s; p99 "
                    f"{fmt_runs([r['p99'] for r in runs], '.1f')} ms", target, ok)
                detail.append(
                    f"| unary {journal} N={n} | {med(runs, 'daemon_cpu'):.0%} | "
                    f"{med(runs, 'client_cpu'):.0%} | {med(runs, 'per_commit'):.1f} | "
                    f"{med(runs, 'commit_ms'):.2f} | {med(runs, 'iter_ms'):.2f} | "
                    f"{fmt_runs([r['queue_end'] for r in runs])} |")
        for journal in journals:
            streams = [run_streams(DaemonProc, tmp, journal, sizes, f"{i}")
                       for i in range(repeat)]
            for j, size in enumerate(sizes):
                runs = [s[j] for s in streams]
                for r in runs:
                    r["rate"] = size / r["seconds"]
                    r["commit_ms"] = r["commit_s"] * 1e3
                bad = [r["accepted"] for r in runs if r["accepted"] != size]
                rate = med(runs, "rate")
                ok = (rate >= 50_000 and not bad) if journal == "disk" else None
                row(f"SubmitJobs stream of {size:,}, journal {journal}",
                    f"{rate:,.0f} jobs/s" + (f"; accepted {bad} of {size}" if bad else ""),
                    f"{fmt_runs([r['rate'] for r in runs])} jobs/s",
                    ">= 50,000 jobs/s" if journal == "disk" else "(reference)", ok)
                sdetail.append(
                    f"| stream {size:,} {journal} | {med(runs, 'daemon_cpu'):.0%} | "
                    f"{med(runs, 'client_cpu'):.0%} | {med(runs, 'seconds') * 1e3:.0f} | "
                    f"{med(runs, 'commit_ms'):.1f} |")
        getjob: list[tuple[int, str]] = [(1, "1 s policy pass running"),
                                         (10**9, "baseline, no spin")]
        if args.submit_only:
            concurrencies, sizes, getjob = [], [], []
        bare = ([run_bare(concurrencies[-2:], sizes, warmup, window) for _ in range(repeat)]
                if concurrencies else [])
        for n in concurrencies[-2:]:
            runs = [b[n] for b in bare]
            errors = sum(len(r["errors"]) for r in runs)
            row(f"bare grpc.aio server (no schedd logic), unary N={n}",
                f"{med(runs, 'rate'):,.0f}/s; p50 {med(runs, 'p50'):.1f} ms; p99 "
                f"{med(runs, 'p99'):.1f} ms" + (f"; {errors} errors" if errors else ""),
                f"{fmt_runs([r['rate'] for r in runs])} /s", "(reference)", None)
            detail.append(f"| bare server N={n} | {med(runs, 'daemon_cpu'):.0%} | "
                          f"{med(runs, 'client_cpu'):.0%} | — | — | — | — |")
        for size in sizes:
            runs = [b[("stream", size)] for b in bare]
            row(f"bare grpc.aio server (no schedd logic), stream of {size:,}",
                f"{med(runs, 'rate'):,.0f} jobs/s", f"{fmt_runs([r['rate'] for r in runs])} "
                "jobs/s", "(reference)", None)
            sdetail.append(
                f"| bare server stream {size:,} | {med(runs, 'daemon_cpu'):.0%} | "
                f"{med(runs, 'client_cpu'):.0%} | {med(runs, 'seconds') * 1e3:.0f} | — |")
        for every, label in getjob:
            runs = [run_getjob(DaemonProc, tmp, every, g_warmup, g_window, f"{every}-{i}")
                    for i in range(repeat)]
            errors = sum(len(r["errors"]) for r in runs)
            p50, p99, worst = med(runs, "p50"), med(runs, "p99"), med(runs, "max")
            busy = statistics.median(min(1.0, r["pass_s"] / r["window"]) for r in runs)
            value = (f"p50 {p50:.1f} ms; p99 {p99:.1f} ms; max {worst:.1f} ms; "
                     f"{med(runs, 'calls'):,.0f} calls; policy busy {busy:.0%} of window")
            if errors:
                value += f"; {errors} errors"
            row(f"GetJob, {label}", value,
                f"p99 {fmt_runs([r['p99'] for r in runs], '.1f')} ms; passes "
                f"{fmt_runs([r['passes'] for r in runs])}, pass s "
                f"{fmt_runs([r['pass_s'] for r in runs], '.1f')}",
                "p99 < 20 ms" if every == 1 else "(reference)",
                (p99 < 20 and not errors) if every == 1 else None)
    load1 = os.getloadavg()[0]
    lines = [
        f"Date: {started:%Y-%m-%d %H:%M} UTC; commit: {git_head()}",
        f"Machine: {machine_line()}",
        f"Calibration loop: {calib:.3f} s; fsync of 4 KiB on the journal's disk: "
        f"{sync_ms:.2f} ms (median of 50); load average {load0:.2f} at start, "
        f"{load1:.2f} at end",
        f"Runs: {repeat} fresh daemons per row (value = median); unary window {window:g} s "
        f"after {warmup:g} s warm-up; GetJob window {g_window:g} s at ~200 calls/s"
        + ("; --quick" if args.quick else ""),
        "",
        "| metric | value (median) | runs | target | result |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "Daemon side of the unary runs (medians; CPU = share of one core over the window, "
        "commit = one journal group commit):",
        "",
        "| case | daemon CPU | client CPU | jobs per commit | commit ms | iteration ms "
        "| queue at end |",
        "|---|---|---|---|---|---|---|",
        *detail,
        "",
        "| stream case | daemon CPU | client CPU | stream ms | of which journal commit ms |",
        "|---|---|---|---|---|",
        *sdetail,
    ]
    text = "\n".join(lines) + "\n"
    (RESULTS / "daemon-latest.md").write_text(text)
    print()
    print(text)


if __name__ == "__main__":
    main()
