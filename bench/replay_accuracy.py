"""How exact an accelerated replay stays: starts that differ from `schedd simulate`.

    .venv/bin/python bench/replay_accuracy.py [--jobs 3000] [--speedups 1e4 1e5 1e6]
                                              [--burners 0 1 4] [--lead S]

For every speed-up x load cell: a fresh `schedd serve --clock accelerated --speedup K
--cluster nodes:4360 --policy easy` (journal in memory), N CPU-bound processes started by
the benchmark beside it (a pure-Python busy loop each, N = 0, 1, 4), and `schedd-replay`
of the first --jobs jobs of ../shared/traces/theta_2023.swf into it. The replay's own
in-process `schedd simulate` run is the reference (summary.json -> replay.divergence).
Reported per cell: share of jobs whose first start differs from simulate, late
submissions (jobs the daemon stamped later than their trace time), the largest
submission lag the client saw, the largest clock lag (virtual seconds the daemon's engine
was behind its clock), and the wall time. Writes bench/results/replay_accuracy-latest.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "theta_2023.swf"
RESULTS = ROOT / "bench" / "results"


def burn(stop: Any) -> None:
    """A CPU-bound process: pure-Python arithmetic until told to stop."""
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x = (x + i * i) % 1_000_003


def cell(speedup: float, burners: int, jobs: int, lead: float | None,
         workdir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from daemon_proc import DaemonProc

    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=burn, args=(stop,), daemon=True) for _ in range(burners)]
    for p in procs:
        p.start()
    out = workdir / f"x{speedup:g}-b{burners}"
    try:
        with DaemonProc("--clock", "accelerated", "--speedup", f"{speedup:g}", "--cluster",
                        "nodes:4360", "--policy", "easy", timeout=60) as d:
            cmd = [sys.executable, "-m", "schedd_clients.replay", str(TRACE), "--server",
                   d.address, "--limit", str(jobs), "--no-progress", "--status-every", "0",
                   "--out", str(out)]
            if lead is not None:
                cmd += ["--lead", f"{lead:g}"]
            start = time.monotonic()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=7200)
            wall = time.monotonic() - start
            if proc.returncode != 0:
                raise SystemExit(f"replay failed: {proc.stderr}\n{d.log()[-2000:]}")
    finally:
        stop.set()
        for p in procs:
            p.join(10)
    replay = json.loads((out / "summary.json").read_text())["replay"]
    div = replay["divergence"]
    return {"speedup": speedup, "burners": burners, "jobs": div["jobs"],
            "differ": 1.0 - div["identical_start_frac"],
            "late": replay["late_submissions"], "max_submit_lag": replay["max_submit_lag_s"],
            "max_clock_lag": replay["max_clock_lag_s"],
            "mean_abs_wait_diff": div["mean_abs_wait_diff_s"], "wall": wall}


def row(r: dict[str, Any]) -> str:
    return (f"| {r['speedup']:,.0f}x | {r['burners']} | {r['jobs']:,} | "
            f"{r['differ']:.1%} ({round(r['differ'] * r['jobs']):,}) | {r['late']:,} | "
            f"{r['max_submit_lag']:,.0f} | {r['max_clock_lag']:,.0f} | "
            f"{r['mean_abs_wait_diff']:,.1f} | {r['wall']:,.0f} |")


HEADER = ("| speed-up | CPU-bound processes beside | jobs | starts differing from simulate "
          "| late submissions | max submission lag (virtual s) | max clock lag (virtual s) "
          "| mean \\|wait diff\\| (s) | wall (s) |\n|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=3000)
    p.add_argument("--speedups", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    p.add_argument("--burners", type=int, nargs="+", default=[0, 1, 4])
    p.add_argument("--lead", type=float, default=None,
                   help="schedd-replay --lead (default: the replay's default)")
    args = p.parse_args(argv)
    if not TRACE.exists():
        raise SystemExit(f"{TRACE} not found")
    RESULTS.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    lines = [f"# replay accuracy, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
             f"{platform.node()}: {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; load average at start {load[0]:.1f}",
             "command: .venv/bin/python bench/replay_accuracy.py " + " ".join(
                 sys.argv[1:] if argv is None else argv), "", HEADER]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for speedup in args.speedups:
            for burners in args.burners:
                r = cell(speedup, burners, args.jobs, args.lead, Path(tmp))
                lines.append(row(r))
                print(lines[-1], flush=True)
    lines.append(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    (RESULTS / "replay_accuracy-latest.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
