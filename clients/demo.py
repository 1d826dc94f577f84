"""`make demo`: start the daemon on embedded defaults, replay the bundled workload at a high
speed-up, print the results and where to look.

The daemon runs with an on-disk journal (out/demo/journal.sqlite) and Prometheus metrics,
without a broker. It is stopped at the end unless `--linger S` keeps it up for a look.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SERVING = re.compile(r"schedd: serving \S+ on [\d.]+:(\d+)")


def _free(port: int) -> int:
    """`port` if nothing listens there, else any free port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="schedd-demo", description=__doc__)
    p.add_argument("--out", default="out/demo", help="output directory (default out/demo)")
    p.add_argument("--speedup", type=float, default=30_000.0,
                   help="virtual seconds per wall second (default 30,000: ~30 s)")
    p.add_argument("--linger", type=float, default=0.0, metavar="S",
                   help="keep the daemon up S seconds after the replay")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    journal = out / "journal.sqlite"
    for stale in out.glob("journal.sqlite*"):
        stale.unlink()  # a fresh run each time (the journal refuses other settings)
    metrics_port = _free(9464)
    cmd = [sys.executable, "-m", "schedd", "serve", "--listen", "127.0.0.1:0",
           "--clock", "accelerated", "--speedup", str(args.speedup), "--cluster", "nodes:256",
           "--policy", "easy", "--state-db", str(journal), "--metrics-port", str(metrics_port),
           "--tick", "0.05", "--log-format", "json", "--log-level", "warning"]
    print("$ " + " ".join(cmd[2:]))
    daemon = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    assert daemon.stderr is not None
    port = 0
    for line in daemon.stderr:
        m = SERVING.search(line)
        if m:
            port = int(m.group(1))
            break
    if not port:
        print("schedd-demo: the daemon did not start", file=sys.stderr)
        return 1
    server = f"127.0.0.1:{port}"
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        from .replay import main as replay

        print(f"$ schedd-replay --server {server} --out {out}   (bundled Lublin excerpt, "
              f"1,000 jobs, {args.speedup:g}x)")
        code = replay(["--server", server, "--out", str(out)])
        if code != 0:
            return code
        scrape = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
        shown = shown_metrics(scrape)
        from schedd.sim import format_brief

        summary = json.loads((out / "summary.json").read_text())
        print()
        print(format_brief(summary))
        print()
        print(f"metrics (scraped from {metrics_url} after the replay: counters cover "
              "the run, gauges the idle daemon now):")
        for line in shown:
            print("  " + line)
        print(f"\nresults: {out}/jobs.swf, {out}/jobs.csv, {out}/summary.json "
              f"(replay section: divergence from schedd simulate)")
        print(f"journal: {journal} (restart the daemon on it to recover)")
        if args.linger > 0:
            print(f"the daemon stays up for {args.linger:g} s: {metrics_url}, "
                  f"schedctl --server {server} cluster")
            time.sleep(args.linger)
        return 0
    finally:
        daemon.terminate()
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()


def shown_metrics(scrape: str) -> list[str]:
    """The scraped series the demo prints: labelled series exist from the start at 0, so
    those that moved, and each gauge said for what it is: the utilisation gauge is the
    busy share now, 0 once the replay has drained the queue, not the run's utilisation
    the summary above gives."""
    shown = []
    for line in scrape.splitlines():
        if not line.startswith(("schedd_completions_total", "schedd_utilization_ratio",
                                "schedd_clock_lag_seconds ", "schedd_iteration_seconds_count",
                                "schedd_budget_overruns_total")):
            continue
        if line.endswith(" 0.0") and "{" in line:
            continue
        if line.startswith("schedd_utilization_ratio"):
            line += "   # busy nodes now / nodes up (the run's is under utilisation)"
        shown.append(line)
    return shown


if __name__ == "__main__":
    sys.exit(main())
