"""Where a unary SubmitJob's time goes: py-spy on a loaded `schedd serve` under 64 callers.

    .venv/bin/pip install py-spy      # a profiling tool, not a dependency of schedd
    .venv/bin/python bench/daemon_profile.py OUT.txt [--clients 64] [--seconds 8]
    .venv/bin/python bench/daemon_profile.py --layers OUT.txt [MORE.txt ...]

The daemon and the closed-loop client are bench/daemon.py's (5,000 queued jobs, journal on
disk). `py-spy record --gil --threads` samples whichever thread holds the GIL (raw
folded stacks in OUT.txt); `--layers` sorts each sample into one layer of the submission
path by the first rule that matches its stack (issue 35, docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import daemon as bench  # noqa: E402

LAYERS = [
    ("journal writer thread (rows, INSERT, COMMIT, fsync)",
     lambda s: "schedd-journal" in s.split(";")[0]),
    ("engine thread", lambda s: "schedd-engine" in s.split(";")[0]),
    ("metrics (prometheus_client)", lambda s: "prometheus_client" in s),
    ("validation and id allocation", lambda s: "_new_spec" in s or "spec_body" in s),
    ("journal hand-off on the loop (append, group flush, executor hop)",
     lambda s: "Journal.append" in s or "Journal._flush" in s or "_commit (" in s),
    ("engine hand-off and event publishing on the loop",
     lambda s: "EngineHost" in s or "EventLog" in s),
    ("handler: idempotency, response, log context", lambda s: "SchedulerService" in s),
    ("interceptor / auth / size checks",
     lambda s: any(k in s for k in ("Interceptor", "_guard.<locals>", "oversized",
                                    "structlog"))),
    ("grpc.aio and the event loop", lambda s: True),
]


def layers(path: str) -> None:
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        stack, n = line.rstrip().rsplit(" ", 1)
        total += int(n)
        counts[next(name for name, rule in LAYERS if rule(stack))] += int(n)
    print(f"{path}: {total} samples")
    for name, _ in LAYERS:
        print(f"  {100 * counts[name] / max(1, total):5.1f}%  {name}")


def record(out: str, clients: int, seconds: float) -> None:
    spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or "py-spy"
    _, DaemonProc = bench._import_helpers()  # noqa: N806 — a class
    with tempfile.TemporaryDirectory() as tmp:
        dp = bench.loaded_daemon(DaemonProc, os.path.join(tmp, "journal.sqlite"))
        try:
            proc = subprocess.Popen([spy, "record", "-p", str(dp.proc.pid), "-d",
                                     str(int(seconds)), "-r", "200", "-f", "raw", "-o", out,
                                     "--gil", "--threads"], stdout=subprocess.DEVNULL)
            res = bench.in_client(bench.unary_client, dp.address, dp.proc.pid, clients, 1.0,
                                  seconds)
            proc.wait()
        finally:
            bench.stop(dp)
    print(f"{len(res['lat']) / seconds:,.0f} SubmitJob/s, daemon CPU {res['daemon_cpu']:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--layers", action="store_true")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    if not args.layers:
        record(args.files[0], args.clients, args.seconds)
    for path in args.files:
        layers(path)


if __name__ == "__main__":
    main()
