"""Streams and watchers (issue 35, item 2): three figures, each in one run.

    nice -n 10 .venv/bin/python bench/watchers.py [--jobs 10000] [--watchers 100]
        [--rounds 2] [--speedup 1000000] [--only ratio,watchers,stalled]

1. **Stream / unary.** One daemon (`--clock lockstep --cluster nodes:64 --policy easy`,
   journal on disk) holding 5,000 waiting jobs, as in bench/daemon.py; then, alternating
   `--rounds` times on it, unary SubmitJob from 64 concurrent callers for 3 s and a
   SubmitJobs stream of 5,000 jobs (one message), each from its own client process.
   Figure: stream jobs/s / unary calls/s (goal >= 2).
2. **100 watchers.** A Lublin workload of `--jobs` jobs replayed by `schedd-replay` in its
   accelerated mode into `schedd serve --clock accelerated --speedup K --cluster
   nodes:320 --policy easy` (journal on disk), alternating rounds without and with
   `--watchers` WatchEvents streams from the first event (one client process, grpc.aio,
   one channel). Each watcher checks that its sequence numbers are 1, 2, 3, ... without a
   gap and digests what it got; afterwards the whole stream is read once more and every
   watcher's count and digest must equal it. Figure: median replay wall time with
   watchers / without (goal < 1.10), and every watcher complete and in order.
3. **A watcher that stops reading.** The same replay with `SCHEDD_WATCH_BACKLOG_BYTES`
   small (`--backlog`, default 256 KiB) and one stream on its own connection (64 KiB
   flow-control window) that reads one event and stops; the daemon's RSS sampled every
   0.2 s. Figures: the status the stream ends with, how many events it got, the daemon's
   RSS against the same replay with no stalled stream, and whether the daemon serves on.

Prints one table (markdown) and writes it to bench/results/watchers-latest.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _sub in ("bench", "tests"):
    if str(ROOT / _sub) not in sys.path:
        sys.path.insert(0, str(ROOT / _sub))

from daemon_proc import DaemonProc, rss_kb  # noqa: E402

from schedd.v1 import scheduler_pb2 as pb  # noqa: E402
from schedd.v1 import scheduler_pb2_grpc as pb_grpc  # noqa: E402

RESULTS = ROOT / "bench" / "results"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def lublin(path: Path, jobs: int, seed: int) -> Path:
    if not path.exists():
        subprocess.run([sys.executable, "-m", "schedd", "workload", "lublin", "--jobs",
                        str(jobs), "--seed", str(seed), "-o", str(path)], check=True,
                       capture_output=True)
    return path


LOCKSTEP = False  # --lockstep: the daemon's clock and the replay in lockstep


def replay(address: str, trace: Path, out: Path) -> float:
    """Wall seconds of an accelerated `schedd-replay` (from start to exit)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "schedd_clients.replay", str(trace), "--server",
                    address, "--no-progress", "--no-compare", "-o", str(out),
                    *(["--lockstep"] if LOCKSTEP else [])], check=True,
                   capture_output=True, timeout=1800)
    return time.perf_counter() - start


def digest_event(h: Any, e: Any) -> None:
    h.update(f"{e.seq} {e.time!r} {e.kind} {e.job_id} {e.state} {e.cause} {e.nodes}\n"
             .encode())


# ---------------------------------------------------------------------- 1. stream / unary
def stream_vs_unary(rounds: int, tmp: Path) -> dict[str, Any]:
    import daemon as bench_daemon  # bench/daemon.py: its clients and its loaded daemon

    dp = bench_daemon.loaded_daemon(DaemonProc, str(tmp / "ratio.sqlite"))
    unary: list[float] = []
    stream: list[float] = []
    try:
        for _ in range(rounds):
            u = bench_daemon.in_client(bench_daemon.unary_client, dp.address, dp.proc.pid,
                                       64, 1.0, 3.0)
            unary.append(len(u["lat"]) / u["window"])
            s = bench_daemon.in_client(bench_daemon.stream_client, dp.address, dp.proc.pid,
                                       0, [5000], 0.5)
            stream.append(s[0]["size"] / s[0]["seconds"])
    finally:
        bench_daemon.stop(dp)
    ratio = statistics.median(stream) / statistics.median(unary)
    return {"unary": unary, "stream": stream, "ratio": ratio}


# ---------------------------------------------------------------------- 2. watchers (child)
def watchers_client(address: str, n: int, batch: bool, opened: Any, target: Any,
                    results: Any) -> None:
    results.put(asyncio.run(_watchers(address, n, batch, opened, target)))


async def _watchers(address: str, n: int, batch: bool, opened: Any,
                    target: Any) -> list[dict[str, Any]]:
    """n streams from the first event; each ends once it has read event `target` (set by
    the parent when the replay is over), or 300 s after that if it never does."""
    import grpc

    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.SchedulerStub(channel)
        states = [{"count": 0, "last": 0, "gaps": 0, "status": "open", "messages": 0}
                  for _ in range(n)]
        calls = [stub.WatchEvents(pb.WatchEventsRequest(from_seq=1, batch=batch))
                 for _ in range(n)]

        async def one(k: int) -> str:
            st, call, h = states[k], calls[k], hashlib.sha256()
            with opened.get_lock():
                opened.value += 1
            try:
                async for message in call:
                    st["messages"] += 1
                    for e in (message, *message.more):
                        if e.seq != st["last"] + 1:
                            st["gaps"] += 1
                        st["last"] = e.seq
                        st["count"] += 1
                        digest_event(h, e)
                st["status"] = "ended by the daemon with OK"
            except grpc.aio.AioRpcError as err:
                st["status"] = f"{err.code().name}: {err.details()}"
            except asyncio.CancelledError:
                st["status"] = "complete" if st["last"] >= target.value else "given up"
            return h.hexdigest()

        async def monitor() -> None:
            while not target.value:
                await asyncio.sleep(0.1)
            deadline = time.monotonic() + 300
            while True:
                left = [k for k in range(n) if not calls[k].done()]
                for k in left:
                    if states[k]["last"] >= target.value or time.monotonic() > deadline:
                        calls[k].cancel()
                if not left:
                    return
                await asyncio.sleep(0.1)

        tasks = [asyncio.create_task(one(k)) for k in range(n)]
        await monitor()
        digests = await asyncio.gather(*tasks)
    return [{**st, "digest": d} for st, d in zip(states, digests, strict=True)]


def read_all(address: str, last: int) -> str:
    """The digest of events 1..last as one more watcher reads them afterwards."""
    import grpc

    h = hashlib.sha256()
    with grpc.insecure_channel(address) as ch:
        call = pb_grpc.SchedulerStub(ch).WatchEvents(pb.WatchEventsRequest(from_seq=1),
                                                      timeout=600)
        for e in call:
            digest_event(h, e)
            if e.seq >= last:
                break
        call.cancel()
    return h.hexdigest()


def metric(port: int, name: str) -> float:
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    for line in text.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def serve_args(tmp: Path, tag: str, speedup: float) -> list[str]:
    clock = ["--clock", "lockstep"] if LOCKSTEP else ["--clock", "accelerated", "--speedup",
                                                      f"{speedup:g}"]
    return [*clock, "--cluster", "nodes:320",
            "--policy", "easy", "--state-db", str(tmp / f"{tag}.sqlite"), "--log-level",
            "warning"]


def watched_replay(trace: Path, tmp: Path, tag: str, watchers: int,
                   speedup: float, batch: bool = False) -> dict[str, Any]:
    env = {"SCHEDD_WATCH_STREAMS_PER_USER": str(watchers + 8)}
    ctx = mp.get_context("spawn")
    with DaemonProc(*serve_args(tmp, tag, speedup), metrics=True, env=env, timeout=60) as d:
        proc = None
        if watchers:
            opened, target, results = ctx.Value("i", 0), ctx.Value("q", 0), ctx.Queue()
            proc = ctx.Process(target=watchers_client,
                               args=(d.address, watchers, batch, opened, target, results))
            proc.start()
            deadline = time.monotonic() + 120
            while metric(d.metrics_port, "schedd_watch_streams") < watchers:
                if time.monotonic() > deadline:
                    raise SystemExit("the watchers did not open their streams")
                time.sleep(0.1)
        cpu0 = cpu_seconds(d.proc.pid)
        wcpu0 = cpu_seconds(proc.pid) if proc is not None else 0.0
        wall = replay(d.address, trace, tmp / f"{tag}-out")
        ended = time.perf_counter()
        cpu = cpu_seconds(d.proc.pid) - cpu0
        wcpu = cpu_seconds(proc.pid) - wcpu0 if proc is not None else 0.0
        lag = 0.0
        count = int(metric(d.metrics_port, "schedd_event_seq"))
        got: list[dict[str, Any]] = []
        if proc is not None:
            target.value = count
            got = results.get(timeout=900)
            lag = time.perf_counter() - ended
            proc.join(60)
        digest = read_all(d.address, count)
    complete = sum(1 for g in got if g["count"] == count and g["last"] == count
                   and g["gaps"] == 0 and g["digest"] == digest)
    return {"wall": wall, "daemon_cpu": cpu, "events": count, "watchers": len(got),
            "lag": lag, "messages": sum(g["messages"] for g in got), "watchers_cpu": wcpu,
            "complete": complete, "statuses": sorted({g["status"] for g in got})}


# ---------------------------------------------------------------------- 3. a stalled watcher
def stalled_replay(trace: Path, tmp: Path, tag: str, backlog: int, speedup: float,
                   stall: bool) -> dict[str, Any]:
    import grpc

    env = {"SCHEDD_WATCH_BACKLOG_BYTES": str(backlog)}
    peak = [0]
    with DaemonProc(*serve_args(tmp, tag, speedup), metrics=True, env=env, timeout=60) as d:
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kb(d.proc.pid))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        base = rss_kb(d.proc.pid)
        channel = call = None
        if stall:
            channel = grpc.insecure_channel(d.address, options=[
                ("grpc.use_local_subchannel_pool", 1), ("grpc.http2.bdp_probe", 0)])
            call = pb_grpc.SchedulerStub(channel).WatchEvents(
                pb.WatchEventsRequest(from_seq=1), timeout=1800)
            deadline = time.monotonic() + 60
            while metric(d.metrics_port, "schedd_watch_streams") < 1:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        wall = replay(d.address, trace, tmp / f"{tag}-out")
        end_rss = rss_kb(d.proc.pid)
        stop.set()
        sampler.join()
        out: dict[str, Any] = {"wall": wall, "base_mib": base / 1024,
                               "peak_mib": peak[0] / 1024, "end_mib": end_rss / 1024}
        if call is not None:
            got, last, status = 0, 0, "no status"
            cut_before = metric(d.metrics_port, "schedd_watch_cutoffs_total")
            try:
                for e in call:  # read again: what was on the way, then the status
                    got += 1
                    last = e.seq
            except grpc.RpcError as err:
                status = f"{err.code().name}: {err.details()}"
            out.update(got=got, last=last, status=status, cut_before_reading=cut_before,
                       streams_after=metric(d.metrics_port, "schedd_watch_streams"))
            assert channel is not None
            channel.close()
            # Still serving: a fresh call answers.
            out["serving"] = d.stub().GetCluster(pb.GetClusterRequest(), timeout=30).finished
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--watchers", type=int, default=100)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--speedup", type=float, default=1e6)
    p.add_argument("--backlog", type=int, default=256 * 1024)
    p.add_argument("--only", default="ratio,watchers,stalled")
    p.add_argument("--modes", default="event,batch",
                   help="watchers one event a message (event), batched (batch), or both")
    p.add_argument("--lockstep", action="store_true",
                   help="the daemon and the replay in lockstep: as fast as they go (the "
                   "accelerated replay is paced by the virtual clock)")
    p.add_argument("--out", default=str(RESULTS / "watchers-latest.md"))
    a = p.parse_args()
    global LOCKSTEP
    LOCKSTEP = a.lockstep
    parts = set(a.only.split(","))
    lines = [f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, "
             f"{platform.node()}: {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; load average at start {loadavg()}", ""]
    rows = ["| figure | value | runs | goal | met |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="schedd-watchers-") as tmpdir:
        tmp = Path(tmpdir)
        if "ratio" in parts:
            r = stream_vs_unary(a.rounds, tmp)
            rows.append(
                f"| SubmitJobs stream (5,000 jobs) / unary SubmitJob (64 callers), same "
                f"daemon | {r['ratio']:.1f}x ({statistics.median(r['stream']):,.0f} jobs/s "
                f"/ {statistics.median(r['unary']):,.0f} calls/s) | stream "
                f"{' / '.join(f'{x:,.0f}' for x in r['stream'])}; unary "
                f"{' / '.join(f'{x:,.0f}' for x in r['unary'])} | >= 2x | "
                f"{'yes' if r['ratio'] >= 2 else 'no'} |")
            print(rows[-1], flush=True)
        trace = lublin(tmp / "lublin.swf", a.jobs, 1)
        if "watchers" in parts:
            modes = a.modes.split(",")
            bare: list[dict[str, Any]] = []
            watched: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
            for k in range(a.rounds):
                bare.append(watched_replay(trace, tmp, f"bare{k}", 0, a.speedup))
                print("without watchers:", bare[-1], flush=True)
                for mode in modes:
                    watched[mode].append(watched_replay(trace, tmp, f"{mode}{k}",
                                                        a.watchers, a.speedup,
                                                        batch=mode == "batch"))
                    print(f"with {a.watchers} watchers ({mode}):", watched[mode][-1],
                          flush=True)
            bw = " / ".join(f"{b['wall']:.1f}" for b in bare)
            bc = " / ".join(f"{b['daemon_cpu']:.1f}" for b in bare)
            for mode in modes:
                runs = watched[mode]
                slow = (statistics.median(w["wall"] for w in runs)
                        / statistics.median(b["wall"] for b in bare))
                complete = all(w["complete"] == a.watchers for w in runs)
                ww = " / ".join(f"{w['wall']:.1f}" for w in runs)
                wc = " / ".join(f"{w['daemon_cpu']:.1f}" for w in runs)
                cc = " / ".join(f"{w['watchers_cpu']:.1f}" for w in runs)
                label = ("batched (`batch: true`)" if mode == "batch"
                         else "one event a message")
                kind = "lockstep" if LOCKSTEP else "accelerated"
                rows.append(
                    f"| {a.jobs:,}-job {kind} replay with {a.watchers} watchers, "
                    f"{label} / without | {slow:.3f}x "
                    f"({statistics.median(w['wall'] for w in runs):.1f} s / "
                    f"{statistics.median(b['wall'] for b in bare):.1f} s) | with {ww} s, "
                    f"without {bw} s; daemon CPU with {wc} s, without {bc} s; the watchers' "
                    f"process CPU meanwhile {cc} s | < 1.10x | "
                    f"{'yes' if slow < 1.10 else 'no'} |")
                lags = " / ".join(f"{w['lag']:.1f}" for w in runs)
                msgs = " / ".join(f"{w['messages']:,}" for w in runs)
                rows.append(
                    f"| {label}: watchers that got every event ({runs[0]['events']:,}) in "
                    f"order | {' / '.join(str(w['complete']) for w in runs)} of "
                    f"{a.watchers} | statuses {runs[0]['statuses']}; messages {msgs}; the "
                    f"last watcher done {lags} s after the replay ended | all | "
                    f"{'yes' if complete else 'no'} |")
                print("\n".join(rows[-2:]), flush=True)
        if "stalled" in parts:
            free = stalled_replay(trace, tmp, "free", a.backlog, a.speedup, False)
            held = stalled_replay(trace, tmp, "stalled", a.backlog, a.speedup, True)
            print("no stalled stream:", free, "\nstalled stream:", held, flush=True)
            ok = held["status"].startswith("RESOURCE_EXHAUSTED") and held["serving"]
            rows.append(
                f"| a stream that stops reading (backlog bound {a.backlog:,} bytes) | "
                f"{held['status']!r} after {held['got']:,} events (last seq "
                f"{held['last']:,}); cut off before it read again: "
                f"{held['cut_before_reading']:.0f}; streams open after: "
                f"{held['streams_after']:.0f} | daemon RSS peak {held['peak_mib']:.0f} MiB, "
                f"end {held['end_mib']:.0f} MiB; the same replay unwatched: peak "
                f"{free['peak_mib']:.0f}, end {free['end_mib']:.0f} MiB | RESOURCE_EXHAUSTED "
                f"with a sentence, RSS as unwatched | {'yes' if ok else 'no'} |")
            print(rows[-1], flush=True)
    lines += rows + ["", f"load average at end {loadavg()}"]
    RESULTS.mkdir(exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
