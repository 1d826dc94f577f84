"""Where one whole `schedd simulate` process spends its time, phase by phase (issue 21).

    .venv/bin/python bench/phases.py [--trace PATH] [--repeat 5] [--policy easy] [-- ARGS]

Each repeat is a fresh interpreter running `schedd simulate --policy POLICY --no-progress
--quiet` (ARGS after `--` are added, e.g. `-- --no-run-files`) with timers around its
phases: NumPy's import, the rest of the imports the command makes, reading and
normalising the trace, the simulation (the plain-EASY fast path or the general engine),
the metrics, and the writing of the result files (the job files on the main thread, the
run files on a second one). Page faults are the process's `ru_minflt` across each phase
(both threads count during the writing). The interpreter's start-up is a separate `python
-c pass`; the teardown is the time from the end of the command to the parent seeing the
process exit. Reported: the median of each over the repeats, and the naive loop's whole
process (`bench/naive_easy.py`, also a median) beside the whole schedd process.

The timers replace module attributes (schedd.sim.write_jobs_csv and the like); if one of
them is renamed, the script stops and says which, rather than leaving a phase out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.swf"

# (module, attribute, phase): what the child times. Phases of one name add up.
TIMED = (
    ("schedd.traces", "read_trace", "read and normalise the trace"),
    ("schedd.traces", "normalize", "read and normalise the trace"),
    ("schedd.sim", "run_plain_easy", "simulate"),
    ("schedd.sim", "_run_engine", "simulate"),
    ("schedd.sim", "summarize", "metrics"),
    ("schedd.sim", "write_outputs", "write every file (wall)"),
    ("schedd.sim", "write_results", "  jobs.swf, jobs.csv, summary.json (main thread)"),
    ("schedd.sim", "write_run_files", "  segments.csv, timeseries.csv (second thread)"),
)

CHILD = r"""
import json, os, resource, sys, time
start = time.perf_counter()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as schedd.cli sets it
import numpy
numpy_done, numpy_faults = time.perf_counter(), faults()
import importlib
import schedd.cli as cli
from schedd import heap
heap.raise_thresholds(os.environ.get(heap.ENV, ""))
for name in ("schedd.simulate_cli", "schedd.sim", "schedd.traces", "schedd.policies",
             "schedd.metrics", "schedd.run_files", "schedd.policies.easy_plain"):
    importlib.import_module(name)
imports_done, imports_faults = time.perf_counter(), faults()
spent, spent_faults = {}, {}
def timed(fn, phase):
    def run(*args, **kwargs):
        t, f = time.perf_counter(), faults()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - t
            spent_faults[phase] = spent_faults.get(phase, 0) + faults() - f
    return run
for module, attribute, phase in TIMED:
    mod = importlib.import_module(module)
    if not hasattr(mod, attribute):
        sys.exit(f"bench/phases.py: {module}.{attribute} is gone; update TIMED")
    setattr(mod, attribute, timed(getattr(mod, attribute), phase))
sys.argv = ["schedd", "simulate", *ARGS]
command = time.perf_counter()
code = cli.main()
end = time.perf_counter()
print(json.dumps({"numpy": numpy_done - start, "numpy_faults": numpy_faults,
                  "imports": imports_done - numpy_done,
                  "imports_faults": imports_faults - numpy_faults,
                  "spent": spent, "spent_faults": spent_faults,
                  "command": end - command, "code": code, "end_wall": time.time()}))
sys.stdout.flush()
"""


def wall_of(cmd: list[str]) -> float:
    """Wall seconds of one whole process (bench/run.py's measure, which stops on failure)."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    from run import run_process

    return run_process(cmd)[0]


def child_run(args: list[str]) -> tuple[dict, float, float]:
    """One instrumented process: its report, its whole wall time, and its teardown."""
    code = f"TIMED = {TIMED!r}\nARGS = {args!r}\n" + CHILD
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    wall = time.perf_counter() - start
    seen_exit = time.time()
    if proc.returncode != 0:
        raise SystemExit(f"the instrumented run failed ({proc.returncode}):\n{proc.stderr}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if report["code"] != 0:
        raise SystemExit(f"schedd simulate exited with {report['code']}:\n{proc.stderr}")
    return report, wall, seen_exit - report["end_wall"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=TRACE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--policy", default="easy")
    parser.add_argument("extra", nargs="*", help="more `schedd simulate` arguments, after --")
    args = parser.parse_args()
    if not args.trace.is_file():
        raise SystemExit(f"no trace at {args.trace}")
    out = ROOT / "bench" / "results" / "phases-out"
    out.parent.mkdir(parents=True, exist_ok=True)  # bench/run.py's processes run in it
    sim_args = ["--trace", str(args.trace), "--policy", args.policy, "--out", str(out),
                "--no-progress", "--quiet", *args.extra]
    naive = [sys.executable, str(ROOT / "bench" / "naive_easy.py"), str(args.trace),
             "--waits", str(ROOT / "bench" / "results" / "naive-waits.txt")]
    rows: dict[str, list[float]] = {}
    faults: dict[str, list[int]] = {}

    def add(phase: str, seconds: float, fault_count: int | None = None) -> None:
        rows.setdefault(phase, []).append(seconds)
        if fault_count is not None:
            faults.setdefault(phase, []).append(fault_count)

    for _ in range(args.repeat):  # alternately, so that a shared machine's drift hits all
        add("interpreter start-up (`python -c pass`)", wall_of([sys.executable, "-c", "pass"]))
        report, wall, teardown = child_run(sim_args)
        add("import NumPy", report["numpy"], report["numpy_faults"])
        add("the other imports", report["imports"], report["imports_faults"])
        for phase in dict.fromkeys(phase for _, _, phase in TIMED):
            if phase in report["spent"]:  # the fast path or the engine, not both
                add(phase, report["spent"][phase], report["spent_faults"][phase])
        add("the command, all of it", report["command"])
        add("teardown (end of the command to the exit seen)", teardown)
        add("**whole process (instrumented)**", wall)
        add("**naive loop, whole process**", wall_of(naive))
    print(f"`schedd simulate {' '.join(sim_args)}`, {args.repeat} runs, medians\n")
    print("| phase | ms | page faults |\n|---|---|---|")
    for phase, values in rows.items():
        count = faults.get(phase)
        shown = f"{statistics.median(count):,.0f}" if count else ""
        print(f"| {phase} | {1e3 * statistics.median(values):.1f} | {shown} |")


if __name__ == "__main__":
    main()
