"""What writing a run's text files costs (jobs.swf, jobs.csv, segments.csv, timeseries.csv),
before and after a change to the writers, measured in one sitting.

    .venv/bin/python bench/writers.py [--base REV] [--rounds 5] [--trace PATH]

Two source trees run side by side: this one, and a copy of it whose writer modules
(WRITERS) are as at REV (default: HEAD, so that a change not yet committed is measured
against what it changes; a REV far back may not run with today's engine). The copy keeps this tree's
compiled modules, so the two differ in the writers alone. Every round, in alternating
order so that a shared machine's drift hits both alike, each tree
  * runs the simulation once in a fresh interpreter and times each writer on its result
    (CPU time, best of --repeat calls), and
  * runs the whole `schedd simulate --policy easy` process (CPU time, user + system, and
    wall time).
A writer's figure depends a little on the allocator's state (a run of big arrays can leave
glibc mapping fresh pages for each); the whole process is what a user waits for.
Reported: the median over rounds of each figure, per tree, and their ratio; "segments
tables" and "timeseries table" are the parts of those writers before any text (the
segment table with its node placement, the time-series table), the same in both trees.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.swf"
WRITERS = ("schedd/sim.py", "schedd/run_files.py", "schedd/text_columns.py",
           "schedd/row_text.py")
TIMED = ("jobs.swf", "jobs.csv", "segments.csv", "timeseries.csv")


def child(trace: str, repeat: int) -> None:
    """In a fresh interpreter whose sys.path starts at the tree under test: simulate once,
    then time each writer; prints {file: best CPU seconds} as JSON."""
    from schedd.core.cluster import NodePool
    from schedd.policies import make_policy
    from schedd.run_files import (
        pool_placement,
        segment_table,
        timeseries_table,
        write_segments_csv,
        write_timeseries_csv,
    )
    from schedd.sim import simulate, write_jobs_csv, write_jobs_swf
    from schedd.traces import normalize, read_trace

    assert Path(sys.modules["schedd"].__file__ or "").is_relative_to(Path.cwd())
    trace_data = normalize(read_trace(trace))
    cluster = NodePool(trace_data.max_nodes)
    run = simulate(trace_data, cluster, make_policy("easy", [], cluster), record=True)
    rec, res = run.recorder, run.results
    assert rec is not None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        writers = {
            "jobs.swf": lambda: write_jobs_swf(out / "jobs.swf", trace_data, res, ["x"]),
            "jobs.csv": lambda: write_jobs_csv(out / "jobs.csv", res),
            "segments.csv": lambda: write_segments_csv(out / "segments.csv", rec, cluster,
                                                       res, Path(trace).name),
            "timeseries.csv": lambda: write_timeseries_csv(out / "timeseries.csv", rec),
            # What the two run files cost before any text: not the formatting.
            "segments tables": lambda: pool_placement(*(segment_table(rec, cluster, res)[c]
                                                        for c in ("start", "end", "nodes")),
                                                      cluster.total_nodes),
            "timeseries table": lambda: timeseries_table(rec),
        }
        best = {}
        for name, write in writers.items():
            times = []
            for _ in range(repeat):
                start = time.process_time()
                write()
                times.append(time.process_time() - start)
            best[name] = min(times)
    print(json.dumps(best))


def base_tree(rev: str, into: Path) -> None:
    """This tree's schedd package and compiled modules, with the writers as at `rev`."""
    shutil.copytree(ROOT / "schedd", into / "schedd",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for built in ROOT.glob("*__mypyc*.so"):  # mypyc's shared module lives at the top
        shutil.copy2(built, into / built.name)
    for path in WRITERS:
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT,
                               capture_output=True)
        if shown.returncode == 0:
            (into / path).write_bytes(shown.stdout)
        else:  # not in that revision
            (into / path).unlink(missing_ok=True)


def writers_once(tree: Path, trace: str, repeat: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                           "--trace", trace, "--repeat", str(repeat)], cwd=tree,
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    return json.loads(done.stdout.splitlines()[-1])


def process_once(tree: Path, trace: str, out: Path) -> tuple[float, float]:
    """CPU (user + system) and wall seconds of one whole `schedd simulate` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "schedd", "simulate", "--trace", trace,
                    "--policy", "easy", "--out", str(out), "--quiet", "--no-progress"],
                   cwd=tree, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="HEAD", help="revision of the writers to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5, help="writer calls per round (best)")
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.trace, args.repeat)
        return 0
    base = args.base
    figures: dict[str, dict[str, list[float]]] = {"base": {}, "now": {}}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"base": Path(tmp) / "base", "now": ROOT}
        base_tree(base, trees["base"])
        for r in range(args.rounds):
            for name in (("base", "now") if r % 2 == 0 else ("now", "base")):
                got = figures[name]
                for file, seconds in writers_once(trees[name], args.trace,
                                                  args.repeat).items():
                    got.setdefault(file, []).append(seconds)
                cpu, wall = process_once(trees[name], args.trace, Path(tmp) / f"out-{name}")
                got.setdefault("process cpu", []).append(cpu)
                got.setdefault("process wall", []).append(wall)
    print(f"{Path(args.trace).name}: writers at {base} (base) against this tree (now); "
          f"median of {args.rounds} alternating rounds")
    print(f"{'':21} {'base':>8} {'now':>8} {'base/now':>8}")
    for tree in figures.values():
        tree["writers total"] = [sum(vals) for vals in zip(*(tree[f] for f in TIMED),
                                                           strict=True)]
    for row in [*TIMED, "writers total", "segments tables", "timeseries table", "process cpu",
                "process wall"]:
        b, n = (statistics.median(figures[t][row]) for t in ("base", "now"))
        unit, scale = ("s", 1.0) if row.startswith("process") else ("ms", 1000.0)
        print(f"{row + f' ({unit})':21} {b * scale:8.3g} {n * scale:8.3g} {b / n:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
