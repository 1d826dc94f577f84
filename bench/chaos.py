"""Chaos run: many kill -9 cycles of `schedd serve` and restarts of its MQTT broker during
a lockstep replay, with watchers on WatchEvents and on MQTT.

    nice -n 10 .venv/bin/python bench/chaos.py [--jobs 20000] [--cycles 40] [--seed 1]

A private broker (mosquitto if installed, else the embedded amqtt of the tests) on a free
port — the system broker is never touched. The workload is bench/daemon_memory.py's
generator; `schedd simulate` on the same trace and policy gives the expected jobs.swf.
Each cycle waits a seeded random 0.2-1.0 s, then either restarts the broker (one cycle in
four) or kills the daemon with SIGKILL and restarts it on the same journal, checking at
once that no job seen finished by a watcher is unfinished and that the clock is not
behind any reading or event time seen. The replay client retries through every outage.
Counts: acknowledged jobs lost or duplicated (final jobs.swf against the trace),
regressions, jobs announced finished twice, events after a finish, and whether jobs.swf
equals simulate's. Writes bench/results/chaos-latest.md (or --out) and prints it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from daemon_memory import write_trace  # noqa: E402
from daemon_proc import DaemonProc, free_port  # noqa: E402
from event_watch import (  # noqa: E402
    MqttWatcher,
    Watcher,
    after_final,
    announced_twice,
    final_seen,
    regressions,
)
from mqtt_broker import _start_any  # noqa: E402

from schedd.v1 import scheduler_pb2 as pb  # noqa: E402

CLUSTER = "nodes:256"


def swf_ids(path: Path) -> list[int]:
    return [int(line.split()[0]) for line in path.read_text().splitlines()
            if line.strip() and not line.startswith(";")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--snapshot-every", type=int, default=2_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "chaos-latest.md"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="schedd-chaos-"))
    trace, db = work / "trace.swf", work / "journal.sqlite"
    write_trace(trace, args.jobs, args.seed)
    subprocess.run([sys.executable, "-m", "schedd", "simulate", "--trace", str(trace),
                    "--cluster", CLUSTER, "--policy", "easy", "--out", str(work / "sim"),
                    "--no-progress"], check=True, capture_output=True)
    broker = _start_any(work)
    if broker is None:
        print("chaos: neither mosquitto nor amqtt is available", file=sys.stderr)
        return 2
    name = f"chaos{os.getpid()}"
    port = free_port()
    dargs = ("--listen", f"127.0.0.1:{port}", "--clock", "lockstep", "--cluster", CLUSTER,
             "--policy", "easy", "--state-db", str(db), "--name", name,
             "--mqtt", f"{broker.host}:{broker.port}")
    env = {"SCHEDD_SNAPSHOT_EVERY": str(args.snapshot_every)}
    d = DaemonProc(*dargs, env=env, timeout=120)
    watcher = Watcher(f"127.0.0.1:{port}")
    mqtt = MqttWatcher(broker.host, broker.port, name)
    watcher.start()
    mqtt.start()
    start = time.perf_counter()
    replay = subprocess.Popen(
        [sys.executable, "-m", "schedd_clients.replay", str(trace), "--out", str(work / "r"),
         "--server", f"127.0.0.1:{port}", "--no-progress", "--lockstep", "--no-compare",
         "--retry-timeout", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kills = broker_restarts = 0
    regressed: set[int] = set()
    clock_back = 0
    restart_s: list[float] = []
    try:
        for _ in range(args.cycles):
            time.sleep(rng.uniform(0.2, 1.0))
            if replay.poll() is not None:
                break
            if rng.random() < 0.25:
                broker.stop()
                time.sleep(rng.uniform(0.1, 0.5))
                broker.start()
                broker_restarts += 1
                continue
            clock_seen = d.stub().GetClock(pb.GetClockRequest(), timeout=30).now
            seen = watcher.seen() + mqtt.seen()
            d.kill()
            kills += 1
            t0 = time.perf_counter()
            d = DaemonProc(*dargs, env=env, timeout=120)
            restart_s.append(time.perf_counter() - t0)
            back, behind = regressions(d.stub(), seen, clock_seen)
            regressed.update(back)
            clock_back += behind is not None
        _, stderr = replay.communicate(timeout=3600)
        wall = time.perf_counter() - start
        watcher.drain()  # it may be thousands of events behind on a loaded machine
    finally:
        watcher.done.set()
        mqtt.done.set()
        replay.kill()
        d.stop()
        broker.stop()
    if replay.returncode != 0:
        print(stderr[-3000:], file=sys.stderr)
        return 1
    ids = swf_ids(work / "r" / "jobs.swf")
    expected = set(swf_ids(work / "sim" / "jobs.swf"))
    lost = len(expected - set(ids))
    duplicated = len(ids) - len(set(ids))
    identical = (work / "r" / "jobs.swf").read_bytes() == (work / "sim" / "jobs.swf").read_bytes()
    grpc_seen, mqtt_seen = watcher.seen(), mqtt.seen()
    rows = [
        ("jobs replayed", f"{args.jobs:,} in {wall:,.0f} s"),
        ("daemon kill -9 cycles", f"{kills}"),
        ("broker restarts", f"{broker_restarts}"),
        ("restart to serving, median / max",
         f"{statistics.median(restart_s):.2f} s / {max(restart_s):.2f} s" if restart_s
         else "-"),
        ("acknowledged jobs lost", f"{lost}"),
        ("acknowledged jobs duplicated", f"{duplicated}"),
        ("jobs seen finished, unfinished after a restart", f"{len(regressed)}"),
        ("restarts with the clock behind a reading seen", f"{clock_back}"),
        ("jobs announced finished twice (WatchEvents / MQTT)",
         f"{len(announced_twice(grpc_seen))} / {len(announced_twice(mqtt_seen))}"),
        ("jobs with events after their finish (WatchEvents / MQTT)",
         f"{len(after_final(grpc_seen))} / {len(after_final(mqtt_seen))}"),
        ("finishes seen (WatchEvents / MQTT)",
         f"{len(final_seen(grpc_seen)):,} / {len(final_seen(mqtt_seen)):,}"),
        ("jobs.swf identical to schedd simulate", "yes" if identical else "NO"),
    ]
    lines = [f"# Chaos: {kills} kill -9 cycles and {broker_restarts} broker restarts",
             "", f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
             f"{os.cpu_count()} CPUs, {broker.kind} broker; "
             f"`{' '.join(['bench/chaos.py', *sys.argv[1:]])}`", "",
             "| figure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    bad = lost or duplicated or regressed or clock_back or not identical
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
