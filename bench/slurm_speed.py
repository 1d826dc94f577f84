"""The `slurm` policy's speed beside `easy` on the same traces (issue 33: within 3x).

    .venv/bin/python bench/slurm_speed.py [--repeat 3] [--kth PATH] [--python PY ...]

Each trace is simulated by `schedd simulate` as a user runs it, with --slurm-conf (a
slurm.conf of the trace's machine: one CPU per node, sched/backfill and priority/basic
on Slurm's defaults) and without it (EASY), alternately, --repeat times; the figure is
the child process's user CPU time, which a loaded machine inflates less than wall time.
With several --python (each a virtualenv's python, e.g. an older checkout's), every one
runs in the same alternation, so their ratios compare within one run. Each child runs in
a temporary directory, so each python runs its own checkout's schedd (from a checkout's
directory, `python -m schedd` would run that checkout's, whichever virtualenv).

Traces: the bundled 1,000-job Lublin sample (256 nodes) and, when present, the shared
KTH-SP2 log (100 nodes, 28,489 jobs).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KTH = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.swf"
LUBLIN = ROOT / "schedd" / "data" / "sample-lublin256-1000.swf"


def conf_text(nodes: int) -> str:
    return ("SchedulerType=sched/backfill\nPriorityType=priority/basic\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
            f"NodeName=n[1-{nodes}] CPUs=1\n"
            "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")


def user_cpu(cmd: list[str], cwd: str) -> float:
    """User CPU seconds of one child run of `cmd` in directory `cwd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=cwd)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kth", type=Path, default=KTH, help="the KTH-SP2 log (skipped if absent)")
    ap.add_argument("--python", action="append", default=[],
                    help="a virtualenv's python to measure (default: this one); repeatable")
    args = ap.parse_args()
    pythons = args.python or [sys.executable]
    traces = [("lublin_256 sample", LUBLIN, 256)]
    if args.kth.exists():
        traces.append(("KTH-SP2", args.kth, 100))
    print("| trace | python | slurm (user CPU s) | easy | ratio |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, trace, nodes in traces:
            conf = Path(tmp) / f"{nodes}.conf"
            conf.write_text(conf_text(nodes))
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.repeat):
                for py in pythons:
                    base = [str(Path(py).absolute()), "-m", "schedd", "simulate",
                            "--trace", str(trace), "--quiet", "--out", str(Path(tmp) / "out")]
                    # In a directory of its own: `python -m` puts the working directory
                    # first on sys.path, so that from a checkout every python would run
                    # that checkout's schedd, not its own virtualenv's.
                    times.setdefault((py, "slurm"), []).append(
                        user_cpu(base + ["--slurm-conf", str(conf)], tmp))
                    times.setdefault((py, "easy"), []).append(user_cpu(base, tmp))
            for py in pythons:
                slurm, easy = times[(py, "slurm")], times[(py, "easy")]
                ratios = [s / e for s, e in zip(slurm, easy, strict=True)]
                print(f"| {name} | {py} | {span(slurm)} | {span(easy)} | "
                      f"{min(ratios):.1f}-{max(ratios):.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
