"""Real-time decision time (`wcjs`, `rt-preempt`, `rt-hpq`): one scheduling pass at each of
six instants on a busy Mira (issue 21: a median decision within 2 milliseconds; the
papers: within 10).

    .venv/bin/python bench/wcjs.py [--repeat 50] [--queues 300,1000] [--trace PATH]

For each cluster (`mira`, aligned, 96 midplanes; `mira-blocks`, the real 294-block list)
and each policy (`wcjs` and `rt-preempt`, ckpt=jit and ckpt=app; `rt-hpq`; `easy-wfp2`
and `easy` as references), a real `Engine` with the periodic checkpoints the policy's
scheme assumes (ckpt=app: APP-CKPT 10%; otherwise none; eq. 34 checkpoint times: 512 s up
to 4,096 nodes, 607 s at 8,192) is driven through one seeded scenario (the same for every
policy):

* 0-9 h: 60 jobs start one after the other, largest first, on the whole machine: 56 batch
  jobs (one of 8,192 nodes, one of 4,096, two of 2,048, four of 1,024, 48 of 512) and four
  real-time jobs (RTJs: 2,048, 1,024, 512, 512 nodes, walltimes 1-3 h past T0 = 12 h);
  batch walltimes drawn from the Mira trace's among those that keep the job running past
  T0 + 30 min, except five that end 7-25 min after T0 (W_done = 5 in the measured
  window); eight end between 9 h and T0 - 10 min (their partitions go to waiting jobs,
  which, having waited, are then mostly above their batch slowdown threshold: not
  preemptible), four cannot checkpoint;
* 9 h - T0: QUEUE jobs arrive (sizes, walltimes and runtimes drawn from the Mira trace
  ../shared/traces/mira_2018_wk1_cobalt2swf.swf, or, without it, from a seeded synthetic
  mix with the trace's size shares and common walltimes; 5% cannot checkpoint) and wait,
  except those that start on freed partitions: at the measured instants about 60 jobs
  run, the machine is full or nearly so, and QUEUE waiting jobs (minus those started) wait;
* a 2,048-node batch job that cannot checkpoint ends at T0 - 2 min; RTJs to come: 512 nodes
  (walltime 600 s, submitted T0 - 60 s, narrow-short threshold 1.1: high priority at T0),
  4,096 nodes (1,800 s, T0 - 60 s: high priority at T0 + 2 min), 8,192 nodes (1,800 s,
  T0 - 26 min, wide-short threshold 2.0: high priority at T0 + 4 min);
* the measured passes, each the first pass at its instant (the engine is woken then for
  every policy), after the engine has handled the instant's events:
  - low-priority: T0 - 2 min, the 2,048-node job has ended: no RTJ is high priority, the
                  default algorithm (EASY over wfp2; `easy`: over FCFS) plans the queue;
  - RTJ submit:   T0 - 1 min, the 512- and 4,096-node RTJs are submitted: `rt-preempt`
                  and `rt-hpq` serve an RTJ as it arrives (no threshold), so this is their
                  preemption pass (the 8,192-node RTJ, submitted at T0 - 26 min, was
                  served before the measurements); for `wcjs` both are low priority;
  - RTJ 512:      T0, the 512-node RTJ crosses its threshold on a full machine: wcjs picks
                  the cheapest eligible midplane and preempts (jit: its jobs start writing
                  a checkpoint and the RTJ claims the partition; app: killed, RTJ starts);
  - JIT claim:    T0 + 1 min, with ckpt=jit the claim is still outstanding (checkpoints
                  take 512 s): the claimed partition is held back from EASY;
  - RTJ 4096:     T0 + 2 min, the 4,096-node RTJ crosses: 12 (mira-blocks: 33) partitions
                  of 4,096 nodes to price;
  - RTJ 8192:     T0 + 4 min, the 8,192-node RTJ crosses: 6 (mira-blocks: 9) partitions.

At each measured pass the policy object is deep-copied --repeat times and only the copy's
`schedule(view)` is timed (wall and CPU time, garbage collector off during the call; see
decision_probe.py); the decisions are not applied, so every repetition sees the same
engine state; then the real pass runs and the scenario goes on. Reports the wall median,
the wall 95th percentile and the CPU median in ms, PASS/MISS against the 2 ms median and
the papers' 10 ms (the simulator never reads a clock: this is a benchmark, not a test),
and what each pass saw and decided. Prints Markdown tables and writes them to
bench/results/wcjs.md.

The state is busier than the trace's own: in the Mira week 15-25 jobs run and 10-50 wait
at a typical instant; here about 60 run and 300 (or 1,000) wait, so the passes price more partitions
and order a longer queue than Mira ever asked of Cobalt.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# bench/ is on sys.path when run
from decision_probe import CELL_LEGEND, VERDICT_HEADERS, Probe, timing_cells  # noqa: E402

from schedd.core.checkpoint import CheckpointPolicy  # noqa: E402
from schedd.core.cluster_spec import parse_cluster  # noqa: E402
from schedd.core.engine import Engine, EngineOptions  # noqa: E402
from schedd.core.job import JobClass, JobSpec  # noqa: E402
from schedd.core.view import View  # noqa: E402
from schedd.policies import make_policy  # noqa: E402

CLUSTERS = ("mira", "mira-blocks")
T0 = 12 * 3600.0
FILL_END = T0 - 3 * 3600.0  # the running jobs start in [0, FILL_END)
# measured instants, in scenario order
EVENTS: tuple[tuple[str, float], ...] = (
    ("low-priority", T0 - 120.0), ("RTJ submit", T0 - 60.0), ("RTJ 512", T0),
    ("JIT claim", T0 + 60.0), ("RTJ 4096", T0 + 120.0), ("RTJ 8192", T0 + 240.0))
POLICIES: tuple[tuple[str, str, list[str]], ...] = (
    ("wcjs ckpt=jit", "wcjs", ["ckpt=jit"]), ("wcjs ckpt=app", "wcjs", ["ckpt=app"]),
    ("rt-preempt ckpt=jit", "rt-preempt", ["ckpt=jit"]),
    ("rt-preempt ckpt=app", "rt-preempt", ["ckpt=app"]), ("rt-hpq", "rt-hpq", []),
    ("easy-wfp2", "easy-wfp2", []), ("easy", "easy", []))
TRACE = ROOT.parent / "shared" / "traces" / "mira_2018_wk1_cobalt2swf.swf"
RESULTS = ROOT / "bench" / "results"
# Running at T0: batch sizes (largest first) and the RTJs among them.
RUNNING_BATCH = (8192,) + (4096,) + (2048,) * 2 + (1024,) * 4 + (512,) * 48
RUNNING_RT = (2048, 1024, 512, 512)
NEAR_END = 5  # batch jobs ending 7-25 min after T0
TURNOVER = 8  # batch jobs ending in [FILL_END, T0 - 10 min)
NO_CKPT = 4  # running batch jobs that cannot checkpoint (besides the releaser)
QUEUE_NO_CKPT = 0.05
# Synthetic fallback: job counts of the Mira trace week by size, and its common walltimes.
SYNTH_SIZES = {512: 692, 1024: 948, 2048: 211, 4096: 150, 8192: 111, 12288: 7,
               16384: 10, 32768: 18}
SYNTH_WALLTIMES = {300: 54, 600: 52, 1800: 68, 3600: 156, 5400: 807, 7200: 140,
                   14400: 60, 18000: 103, 21600: 345, 43200: 106, 86400: 20}
# job ids
RELEASER = 1  # 2,048-node batch job without checkpoints, ends at T0 - 2 min
RT512, RT4096, RT8192 = 900_001, 900_002, 900_003
QUEUED_BASE = 100_000


@dataclass
class Workload:
    """(nodes, walltime, runtime) rows to draw the waiting jobs and walltimes from."""

    nodes: np.ndarray
    walltime: np.ndarray
    runtime: np.ndarray
    source: str


def load_workload(path: Path, rng: np.random.Generator) -> Workload:
    """The Mira trace's jobs (SWF fields 4, 5, 8, 9), or a seeded synthetic mix."""
    if path.is_file():
        cols = np.loadtxt(path, comments=";", usecols=(3, 4, 7, 8), ndmin=2)
        runtime, procs, req_procs, req_time = cols.T
        nodes = np.where(req_procs > 0, req_procs, procs)
        walltime = np.where(req_time > 0, req_time, runtime)
        keep = (runtime > 0) & (nodes >= 1) & (nodes <= 49152)
        return Workload(nodes[keep].astype(int), walltime[keep], runtime[keep],
                        f"{path.name} ({int(keep.sum())} jobs)")
    n = 2000
    sizes, counts = zip(*SYNTH_SIZES.items(), strict=True)
    walls, wcounts = zip(*SYNTH_WALLTIMES.items(), strict=True)
    nodes = rng.choice(sizes, n, p=np.array(counts) / sum(counts))
    walltime = rng.choice(walls, n, p=np.array(wcounts) / sum(wcounts)).astype(float)
    runtime = np.maximum(np.floor(walltime * rng.uniform(0.05, 1.0, n)), 30.0)
    return Workload(nodes.astype(int), walltime, runtime,
                    f"synthetic mix ({path} not found; the trace's size shares and walltimes)")


def engine_options(policy: Any) -> EngineOptions:
    """The periodic checkpoints the policy's scheme assumes (what `schedd simulate` sets)."""
    return EngineOptions(checkpoint=CheckpointPolicy(
        periodic=policy.periodic_checkpoints() or "none"))


def walltime_at_least(rng: np.random.Generator, work: Workload, low: float) -> float:
    """A walltime drawn from the workload's walltimes that are >= low (low if none is)."""
    ok = work.walltime[work.walltime >= low]
    return float(rng.choice(ok)) if ok.size else float(np.ceil(low / 1800.0) * 1800.0)


def _reached(t: float) -> Callable[[View], bool]:
    return lambda view: view.now >= t


def scenario(policy: Any, work: Workload, queue: int, repeat: int, seed: int = 1) -> Probe:
    """Drive an engine with `policy` through the scenario; the probe holds the timings."""
    rng = np.random.default_rng(seed)
    events = [(name, _reached(t)) for name, t in EVENTS]
    probe = Probe(policy, events, repeat)
    engine = Engine(policy.cluster, probe, options=engine_options(policy))
    # Running at T0: largest first, one after the other; RTJs in their size's place.
    order = sorted([(n, False) for n in RUNNING_BATCH] + [(n, True) for n in RUNNING_RT],
                   key=lambda t: -t[0])
    batch_ids = [i for i, (_, rt) in enumerate(order) if not rt]
    special = rng.permutation([i for i in batch_ids if order[i][0] <= 1024])
    near_end = set(special[:NEAR_END].tolist())
    turnover = set(special[NEAR_END:NEAR_END + TURNOVER].tolist())
    no_ckpt = set(special[NEAR_END + TURNOVER:NEAR_END + TURNOVER + NO_CKPT].tolist())
    releaser = next(i for i in batch_ids if order[i][0] == 2048)
    for i, (nodes, rt) in enumerate(order):
        start = i * FILL_END / len(order)
        elapsed = T0 - start
        jid = RELEASER if i == releaser else 1000 + i
        if rt:
            walltime = elapsed + float(rng.uniform(3600.0, 3 * 3600.0))
            engine.submit(JobSpec(jid, start, walltime, nodes, walltime,
                                  job_class=JobClass.REALTIME))
            continue
        if i == releaser:
            walltime = walltime_at_least(rng, work, elapsed + 1800.0)
            engine.submit(JobSpec(jid, start, elapsed - 120.0, nodes, walltime,
                                  checkpointable=False))
            continue
        if i in near_end:
            walltime = elapsed + float(rng.uniform(420.0, 1500.0))
        else:
            walltime = walltime_at_least(rng, work, elapsed + 1800.0)
        runtime = walltime
        if i in turnover:  # ends in [FILL_END, T0 - 10 min)
            runtime = max(float(rng.uniform(FILL_END, T0 - 600.0)) - start, 60.0)
        engine.submit(JobSpec(jid, start, runtime, nodes, walltime,
                              checkpointable=i not in no_ckpt))
    # The queue: trace jobs arriving between FILL_END and T0 - 150 s.
    rows = rng.integers(0, work.nodes.size, queue)
    submits = np.sort(rng.uniform(FILL_END, T0 - 150.0, queue))
    for k, (r, submit) in enumerate(zip(rows.tolist(), submits.tolist(), strict=True)):
        walltime = float(work.walltime[r])
        engine.submit(JobSpec(QUEUED_BASE + k, float(np.floor(submit)),
                              float(min(work.runtime[r], walltime)), int(work.nodes[r]),
                              walltime, checkpointable=bool(rng.random() >= QUEUE_NO_CKPT)))
    # The RTJs measured: high priority at T0, T0 + 2 min and T0 + 4 min.
    engine.submit(JobSpec(RT512, T0 - 60.0, 500.0, 512, 600.0, job_class=JobClass.REALTIME))
    engine.submit(JobSpec(RT4096, T0 - 60.0, 1500.0, 4096, 1800.0,
                          job_class=JobClass.REALTIME))
    engine.submit(JobSpec(RT8192, T0 - 1560.0, 1500.0, 8192, 1800.0,
                          job_class=JobClass.REALTIME))
    for _, t in EVENTS:
        engine.wake_at(t)
    probe.drive(engine)
    return probe


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50, help="timed passes per case")
    ap.add_argument("--queues", default="300,1000",
                    help="jobs arriving in the queue before T0, comma-separated (default "
                    "300,1000)")
    ap.add_argument("--trace", type=Path, default=TRACE,
                    help="Mira trace to draw the jobs from (default ../shared/traces/"
                    "mira_2018_wk1_cobalt2swf.swf; missing: a seeded synthetic mix)")
    args = ap.parse_args()
    queues = [int(q) for q in args.queues.split(",")]
    if args.repeat < 1 or any(q < 0 for q in queues):
        ap.error("--repeat must be at least 1 and the queues at least 0")
    started = time.perf_counter()
    load = os.getloadavg()[0]
    work = load_workload(args.trace, np.random.default_rng(7))
    names = [name for name, _ in EVENTS]
    lines = [f"machine: {cpu_model()}, {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, {platform.platform()}; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
             f"{load:.2f} at start", "",
             f"Jobs drawn from: {work.source}.", "",
             f"{args.repeat} passes per cell: {CELL_LEGEND}.", "",
             "| cluster | waiting (low-priority) | policy | "
             + " | ".join(names + list(VERDICT_HEADERS)) + " |",
             "|---" * (len(names) + 5) + "|"]
    print("\n".join(lines), flush=True)
    details: dict[tuple[str, int], dict[str, Probe]] = {}
    for cluster_name in CLUSTERS:
        for queue in queues:
            details[cluster_name, queue] = {}
            for label, name, opts in POLICIES:
                policy = make_policy(name, opts, parse_cluster(cluster_name))
                probe = scenario(policy, work, queue, args.repeat)
                details[cluster_name, queue][label] = probe
                waiting = probe.cases["low-priority"].waiting
                lines.append(f"| {cluster_name} | {waiting} | {label} | "
                             + " | ".join(timing_cells(probe, names)) + " |")
                print(lines[-1], flush=True)
    shown = len(lines)
    for (cluster_name, queue), probes in details.items():
        lines += ["", f"What each measured pass saw and decided on {cluster_name} ({queue} "
                      "queued from 9 h; running / waiting jobs, free nodes; JIT claims the "
                      "policy held before and after the pass; its decisions, not applied):",
                  "", "| policy | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for label, probe in probes.items():
            lines.append(f"| {label} | " + " | ".join(probe.detail_cells(names, T0)) + " |")
    lines += ["", f"({time.perf_counter() - started:.0f} s)"]
    print("\n".join(lines[shown:]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "wcjs.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
