"""How close a simulation is to what a real Slurm did, job by job.

A reference run (bench/slurm_reference/runs/WORKLOAD/rK/) holds a real Slurm's
`sacct.txt`, the `slurm.conf` and `assoc.txt` it ran with and `jobmap.tsv` (workload job
number -> Slurm job id). `simulate_run` imports the sacct output, simulates it with the
`slurm` policy on that slurm.conf, and pairs each job's real wait with its simulated one;
`between_runs` pairs two real runs of the same workload — Slurm's agreement with itself,
the ceiling any emulation is measured against. `Agreement` says how close a pairing is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.engine import EngineOptions
from ..policies import make_policy
from ..policies.base import parse_options
from ..sim import simulate
from ..traces import normalize
from .importers import import_log
from .machine import SlurmSetup
from .policy import SlurmOptions, SlurmPolicy
from .second_order import read_orders


@dataclass(frozen=True)
class Paired:
    """One job's wait in two schedules (a real one first), and who started it."""

    job: int  # the workload's job number (or the Slurm job id)
    submit: float
    wait_a: float
    wait_b: float
    how_a: str = ""
    how_b: str = ""


@dataclass(frozen=True)
class Agreement:
    jobs: int
    within0: float  # fraction of jobs whose waits differ by at most 0, 2, 10 s
    within2: float
    within10: float
    total_a: float
    total_b: float
    first_diverging: Paired | None

    @property
    def total_diff(self) -> float:
        """(total wait b - total wait a) / total wait a."""
        return (self.total_b - self.total_a) / self.total_a if self.total_a else 0.0


def agreement(pairs: list[Paired], tolerance: float = 2.0) -> Agreement:
    both = [p for p in pairs if math.isfinite(p.wait_a) and math.isfinite(p.wait_b)]
    n = len(both)
    diff = [abs(p.wait_b - p.wait_a) for p in both]
    first = next((p for p in sorted(both, key=lambda p: (p.submit, p.job))
                  if abs(p.wait_b - p.wait_a) > tolerance), None)
    return Agreement(
        n, sum(d == 0 for d in diff) / n if n else 0.0,
        sum(d <= tolerance for d in diff) / n if n else 0.0,
        sum(d <= 10 for d in diff) / n if n else 0.0,
        float(sum(p.wait_a for p in both)), float(sum(p.wait_b for p in both)), first)


def first_apart(pairs: list[Paired]) -> Paired | None:
    """Where two schedules first part: of the jobs whose start or starting thread
    differs, the one that started earliest in either (the root of what follows, where
    `Agreement.first_diverging` is the first by submission past the tolerance)."""
    apart = [p for p in pairs if math.isfinite(p.wait_a) and math.isfinite(p.wait_b)
             and (p.wait_a != p.wait_b or p.how_a != p.how_b)]
    if not apart:
        return None
    return min(apart, key=lambda p: (p.submit + min(p.wait_a, p.wait_b), p.submit, p.job))


_HOW = {1: "submit", 2: "main", 3: "backfill"}


def _workload_ids(run: Path) -> dict[int, int]:
    """Slurm job id -> workload job number, from jobmap.tsv (identity without it)."""
    path = run / "jobmap.tsv"
    out: dict[int, int] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) >= 2 and cells[0].isdigit() and cells[1].isdigit():
            out[int(cells[1])] = int(cells[0])
    return out


@lru_cache(maxsize=64)  # every pairing and simulation of a run reads it; never mutated
def real_waits(run: Path) -> dict[int, tuple[float, float, str]]:
    """workload job -> (submit, wait, who started it) of a real run; wait inf for a job
    that never started."""
    imported = import_log("slurm", str(run / "sacct.txt"))
    cols = imported.trace.columns
    ids = _workload_ids(run)
    out = {}
    for i in range(len(cols["job_id"])):
        jid = int(cols["job_id"][i])
        wait = float(cols["wait"][i])
        out[ids.get(jid, jid)] = (float(cols["submit"][i]), wait if wait >= 0 else math.inf,
                                  _HOW.get(int(cols["started_by"][i]), ""))
    return out


@dataclass
class Simulated:
    pairs: list[Paired]
    policy: Any
    seconds: float  # CPU time of the simulation itself


def decay_phase(run: Path, calc_period: float, max_age: float,
                weight_age: float) -> float | None:
    """When in each PriorityCalcPeriod the run's decay thread recomputed priorities, read
    off its sprio snapshots (sprio.tsv, bench/slurm_reference.py): a pending job's age
    factor is (that instant - its eligible time) / PriorityMaxAge, and sprio shows it
    times PriorityWeightAge. None without them."""
    path = run / "sprio.tsv"
    if not path.exists() or max_age <= 0 or weight_age <= 0:
        return None
    real = {}
    imported = import_log("slurm", str(run / "sacct.txt"))
    cols = imported.trace.columns
    for i in range(len(cols["job_id"])):
        eligible = float(cols["eligible"][i])
        real[int(cols["job_id"][i])] = eligible if eligible >= 0 else float(cols["submit"][i])
    lines = path.read_text().splitlines()
    if not lines:
        return None
    head = lines[0].split("\t")
    where = {name: k for k, name in enumerate(head)}
    if not {"JOBID", "AGE"} <= where.keys():
        return None
    counts: dict[int, int] = {}
    for line in lines[1:]:
        cells = line.split("\t")
        try:
            jid = int(cells[where["JOBID"]])
            age = float(cells[where["AGE"]]) / weight_age
        except (ValueError, IndexError):
            continue
        if 0 < age < 1 and jid in real:
            tick = real[jid] + age * max_age
            phase = int(round(tick)) % int(calc_period)
            counts[phase] = counts.get(phase, 0) + 1
    if not counts:
        return None
    return float(max(counts, key=lambda k: (counts[k], -k)))


def simulate_run(run: Path, policy_name: str = "slurm", record_plans: bool = False,
                 read_order: bool = True, **options: str) -> Simulated:
    """Simulate a reference run's sacct output with its slurm.conf and associations (the
    decay thread's phase from the run's sprio snapshots where it has them). Another
    `policy_name` runs that policy on the same machine and jobs instead (a baseline).
    `record_plans` keeps the slurm policy's backfill reservations (`plans`);
    `read_order` False leaves the order of cycle, tick and decay unread (second_order)."""
    import time

    imported = import_log("slurm", str(run / "sacct.txt"))
    trace = normalize(imported.trace, procs_per_node=1, max_nodes=10**9)
    assoc = run / "assoc.txt"
    setup = SlurmSetup.read(str(run / "slurm.conf"), str(assoc) if assoc.exists() else None)
    trace, jobs = setup.prepare(trace)
    if policy_name == "slurm":
        prio = setup.conf.priority
        if prio.multifactor and "decay_phase" not in options:
            phase = decay_phase(run, prio.calc_period, prio.max_age, prio.weight_age)
            if phase is not None:
                options = {**options, "decay_phase": str(phase)}
        policy: Any = SlurmPolicy(parse_options("slurm", SlurmOptions,
                                                [f"{k}={v}" for k, v in options.items()]),
                                  setup.cluster)
        said = setup.bind(policy, jobs, trace.header.unix_start_time, trace)
        if read_order:
            read_orders(setup, policy, trace, said)
        if record_plans:
            policy.plans = []
        engine_options = EngineOptions(**policy.engine_overrides())
    else:
        policy = make_policy(policy_name, [f"{k}={v}" for k, v in options.items()],
                             setup.cluster)
        engine_options = EngineOptions()
    started = time.process_time()
    result = simulate(trace, setup.cluster, policy, engine_options=engine_options)
    seconds = time.process_time() - started
    ids = _workload_ids(run)
    real = real_waits(run)
    res = result.results
    started_by = getattr(policy, "started_by", {})
    pairs = []
    for i in range(len(res["id"])):
        jid = int(res["id"][i])
        key = ids.get(jid, jid)
        submit, wait, how = real[key]
        start = float(res["first_start"][i])
        # Recorded as sacct records it: in whole seconds.
        sim_wait = math.floor(start) - float(res["submit"][i]) if start >= 0 else math.inf
        pairs.append(Paired(key, submit, wait, sim_wait, how, started_by.get(jid, "")))
    return Simulated(pairs, policy, seconds)


def simulate_runs(runs: list[Path], policy_name: str = "slurm") -> list[Simulated]:
    """`simulate_run` of each run, in order."""
    return [simulate_run(run, policy_name) for run in runs]


def pooled(sims: list[Simulated]) -> Agreement:
    """The agreement of several runs' simulations taken as one set of jobs."""
    return agreement([pair for sim in sims for pair in sim.pairs])


def between_runs(a: Path, b: Path) -> list[Paired]:
    """The same workload's jobs in two real runs, paired by workload job number."""
    ra, rb = real_waits(a), real_waits(b)
    return [Paired(k, ra[k][0], ra[k][1], rb[k][1], ra[k][2], rb[k][2])
            for k in sorted(ra) if k in rb]


def consensus(runs: list[Path], tolerance: float = 2.0) -> set[int]:
    """The workload's jobs on which every real run agrees: each started in all of them,
    with waits no more than `tolerance` s apart. There Slurm repeats itself, so an
    emulation's miss is its own error, not Slurm's noise."""
    reals = [real_waits(run) for run in runs]
    if not reals:
        return set()
    out = set()
    for job in set.intersection(*(set(real) for real in reals)):
        waits = [real[job][1] for real in reals]
        if all(math.isfinite(w) for w in waits) and max(waits) - min(waits) <= tolerance:
            out.add(job)
    return out


def on_jobs(sims: list[Simulated], jobs: set[int]) -> Agreement:
    """`pooled`, over only the given workload jobs of each run."""
    return agreement([pair for sim in sims for pair in sim.pairs if pair.job in jobs])


def runs_of(root: Path) -> dict[str, list[Path]]:
    """workload -> its run directories (each with a sacct.txt), sorted; a run still
    going (RUN.partial) or failed (RUN.failed) is not one."""
    out: dict[str, list[Path]] = {}
    for workload in sorted(p for p in root.iterdir() if p.is_dir()):
        runs = sorted(r for r in workload.iterdir()
                      if (r / "sacct.txt").exists() and "." not in r.name)
        if runs:
            out[workload.name] = runs
    return out


def mean_between(runs: list[Path]) -> Agreement | None:
    """Slurm against itself: the pairing of every two runs, pooled."""
    pairs = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            pairs += between_runs(runs[i], runs[j])
    return agreement(pairs) if pairs else None


def each_pair(runs: list[Path]) -> list[Agreement]:
    """Slurm against itself, pair by pair of real runs: how far its agreement with
    itself spreads from one pairing to another."""
    return [agreement(between_runs(runs[i], runs[j]))
            for i in range(len(runs)) for j in range(i + 1, len(runs))]
