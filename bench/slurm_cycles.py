"""Every backfill cycle Slurm logged, replayed on the emulation's cycle from Slurm's own
state at that instant: does it plan and start what Slurm did?

    .venv/bin/python bench/slurm_cycles.py [RUN_DIR ...]   # default: every run whose
                                                          # timeline has reservations

bench/slurm_reservations.py compares the two schedulers only while their schedules agree,
the first minute or so of a run. This one rebuilds, at each of Slurm's cycles, what its
log says the machine held: the running jobs (their nodes from the log, their CPUs from
sacct, their expected ends from their start and time limit), and the waiting jobs (sacct's
priority, partition and eligible time, in Slurm's queue order). It runs the emulation's
cycle on that state at that second and compares the jobs it starts and the expected
start and nodes of each job it plans with the `start_backfill` and `reserve` rows Slurm
logged in that cycle. The log's instants are to the millisecond, so a submission, start
or end in the cycle's own second falls on the side of the cycle it fell on in Slurm.
sacct gives a per-core job's CPUs but not how many on each node: one spread over several
nodes is split as the emulation's node choice splits it on the nodes Slurm took, from the
machine's state at its start, walking the log's starts and releases in order
(`allocations`); the same walk checks every main-scheduler start against the node choice
on that state.
Under priority/multifactor, priorities move between cycles and sacct keeps only the
last: they are read from the run's sprio snapshots taken between the decay thread's two
recomputations around the cycle (`Snapshots`). A cycle is skipped where the log cannot
give the state exactly: a job ended but not yet released (its epilog running), a
per-core job over several nodes whose split that choice does not give, a job whose
dependency was met or that was cancelled while it waited in the cycle's own second
(sacct's Eligible and End are whole seconds), and, under multifactor, a cycle in the
second of a recomputation or with a waiting job no snapshot between the two
recomputations shows.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from schedd.slurm.backfill import Candidate, backfill_cycle  # noqa: E402
from schedd.slurm.fidelity import decay_phase  # noqa: E402
from schedd.slurm.hostlist import expand  # noqa: E402
from schedd.slurm.importers import import_log  # noqa: E402
from schedd.slurm.machine import SlurmSetup  # noqa: E402
from schedd.slurm.policy import YEAR, SlurmPolicy, guess_job_end  # noqa: E402
from schedd.slurm.select import Nodes, Placement, Running, eval_nodes  # noqa: E402
from schedd.traces import normalize  # noqa: E402

RUNS = ROOT / "bench" / "slurm_reference" / "runs"

Plan = tuple[float, frozenset[str]]


@dataclass
class Instants:
    """One job's instants in slurmctld's log (Unix time), and its nodes."""

    submit: float = math.inf
    start: float = math.inf
    nodes: str = ""
    end: float = math.inf
    release: float = math.inf


@dataclass
class Replay:
    run: str
    cycles: int = 0  # cycles replayed
    skipped: dict[str, int] = field(default_factory=dict)
    starts_agree: int = 0
    plans_agree: int = 0
    differ: list[str] = field(default_factory=list)
    main_starts: int = 0  # main-scheduler starts whose node choice was checked
    main_same: int = 0  # ... on the nodes Slurm took
    # Cycles in the second of a priority recomputation, replayed with the priorities
    # before it and after it: (the cycle's instant within its second, which of the two
    # gave Slurm's starts and plans: "before", "after", "both" or "neither").
    decay_sides: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class Allocations:
    """Where each job of a run held its CPUs: the log names a job's nodes, sacct its CPUs;
    a per-core job over several nodes is split as the emulation's node choice splits it
    on the nodes Slurm took, from the machine's state at its start (None where that
    choice does not give those nodes, or the state is not known)."""

    placements: dict[int, Placement | None] = field(default_factory=dict)
    main_starts: int = 0
    main_same: int = 0
    main_early_nodes: int = 0  # main starts on nodes whose release the log writes later
    differ: list[str] = field(default_factory=list)


def allocations(run: Path, conf: Any, jobs: dict[int, Any], rows: dict[int, dict[str, str]],
                masks: list[int]) -> Allocations:
    """Walk the log's starts and releases in order on a model of the nodes' free CPUs.
    Each main-scheduler start is also checked against the emulation's node choice on
    that state (`Nodes.place` over the job's partition): the main scheduler takes the
    nodes cons_tres picks on what is free, where a backfill start also avoids nodes
    reserved for others (those are checked by the cycle replay)."""
    out = Allocations()
    names = {name: i for i, name in enumerate(conf.node_names)}
    nodes = Nodes(list(conf.node_cpus))
    unknown: set[int] = set()  # jobs holding CPUs the model cannot place
    for line in (run / "timeline.tsv").read_text().splitlines()[1:]:
        cells = line.split("\t") + [""] * 5
        event = cells[1]
        if event not in ("start_main", "start_backfill", "release") or not cells[2]:
            continue
        job = int(cells[2])
        if job not in jobs or job not in rows:
            continue
        if event == "release":
            if job in out.placements:
                place = out.placements[job]
                if place is not None:
                    nodes.give(place)
                unknown.discard(job)
                out.placements[job] = place  # kept for the cycles that saw it run
            continue
        if job in out.placements:
            continue  # a requeued job's second start: not in these runs
        sj = jobs[job]
        picked = [names[n] for n in expand(cells[3])]
        theirs = sum(1 << i for i in picked)
        req = SlurmPolicy._request(sj)
        free = nodes.idle if sj.exclusive else nodes.some
        if event == "start_main" and theirs & ~free:
            # Slurm took nodes whose job's release the log writes later: a job killed
            # with others gets each node back with that node's epilog-complete message,
            # the log's line comes with the last one, and the first message runs the
            # main scheduler. Not a choice the state before it can check.
            out.main_early_nodes += 1
        elif event == "start_main" and not unknown:
            ours = nodes.place(req, masks[sj.partition])
            if ours is None or ours.mask != theirs:
                # A job ahead of it in the pass that could not start closes its
                # partition's nodes to every later job (`_schedule`'s failed
                # partitions; partitions-mf-s73's job 8 went to n[14-17] past the 13
                # nodes of job 7's partition): the choice on what the waiting jobs of
                # other partitions left open.
                at = float(cells[0])
                closed = 0
                for other, row in rows.items():
                    if other == job or other not in jobs or \
                            jobs[other].partition == sj.partition:
                        continue
                    began = row["Start"]
                    began_at = math.inf if began in ("None", "Unknown", "") else \
                        _unix(began)
                    if _unix(row["Submit"]) <= at < began_at:
                        closed |= masks[jobs[other].partition]
                if closed:
                    ours = nodes.place(req, masks[sj.partition] & ~closed) or ours
            out.main_starts += 1
            if ours is not None and ours.mask == theirs:
                out.main_same += 1
            else:
                got = "none" if ours is None else ",".join(
                    n for n, i in names.items() if ours.mask >> i & 1)
                out.differ.append(f"main start of job {job} at {cells[0]}: Slurm on "
                                  f"{cells[3]}, the emulation's choice {got}")
        place: Placement | None
        if sj.exclusive:
            place = Placement(theirs)
        elif len(picked) == 1:
            place = Placement(0, ((picked[0], int(rows[job]["NCPUS"])),))
        elif unknown:
            place = None
        else:
            place = eval_nodes(nodes, theirs & nodes.some, req) if not theirs & ~free \
                else None
            if place is not None and place.mask != theirs:
                place = None
        if place is None or theirs & ~free:
            unknown.add(job)  # the model's free CPUs are not known until it ends
        if place is not None:
            nodes.take(place)
        out.placements[job] = place
    return out


def _unix(text: str) -> float:
    return datetime.datetime.fromisoformat(text).timestamp()


def read_log(run: Path) -> tuple[dict[int, Instants], list[tuple[float, dict[int, Plan],
                                                                   dict[int, frozenset[str]]]]]:
    """Each job's instants, and each cycle: (instant, its plans, its starts)."""
    jobs: dict[int, Instants] = {}
    cycles: list[tuple[float, dict[int, Plan], dict[int, frozenset[str]]]] = []
    for line in (run / "timeline.tsv").read_text().splitlines()[1:]:
        cells = line.split("\t") + [""] * 5
        at, event = float(cells[0]), cells[1]
        if event == "backfill_cycle":
            cycles.append((at, {}, {}))
            continue
        job = int(cells[2])
        inst = jobs.setdefault(job, Instants())
        if event == "submit":
            inst.submit = min(inst.submit, at)
        elif event in ("start_main", "start_backfill") and inst.start == math.inf:
            inst.start, inst.nodes = at, cells[3]
            if event == "start_backfill" and cycles:
                cycles[-1][2][job] = frozenset(expand(cells[3]))
        elif event == "end":
            inst.end = min(inst.end, at)
        elif event == "release":
            inst.release = min(inst.release, at)
        elif event == "reserve" and cycles and cells[4]:
            cycles[-1][1][job] = (float(cells[4]), frozenset(expand(cells[3])))
    return jobs, cycles


class Snapshots:
    """Pending jobs' priorities from a run's sprio snapshots (sprio.tsv, a few seconds
    apart). Under priority/multifactor a job's priority is set at its submission and
    recomputed only by the decay thread, once every PriorityCalcPeriod at `phase` s
    past a multiple of it after Unix time `epoch` (read off the same snapshots): every
    snapshot between two recomputations gives the priorities a cycle between them saw."""

    def __init__(self, path: Path, phase: float, period: float, epoch: float) -> None:
        self.phase, self.period, self.epoch = phase, period, epoch
        self.by_time: dict[int, dict[int, int]] = {}
        lines = path.read_text().splitlines()
        where = {name: k for k, name in enumerate(lines[0].split("\t"))}
        for line in lines[1:]:
            cells = line.split("\t")
            self.by_time.setdefault(int(cells[where["TIME"]]), {})[
                int(cells[where["JOBID"]])] = int(cells[where["PRIORITY"]])

    def at(self, at: float, jobs: list[int]) -> tuple[dict[int, int] | None, str]:
        """The priorities of `jobs` at Unix time `at`, or None and why not."""
        second = math.floor(at)
        last = second - (second - self.epoch - self.phase) % self.period  # the last one
        if last == second:
            return None, RECOMPUTED
        return self.between(last, jobs)

    def around(self, at: float, jobs: list[int]) -> tuple[dict[int, int] | None, ...]:
        """For a cycle in the second of a recomputation: the priorities of `jobs` the
        snapshots give before it and after it (None where they do not give them all)."""
        second = math.floor(at)
        return (self.between(second - self.period, jobs)[0],
                self.between(second, jobs)[0])

    def between(self, last: float, jobs: list[int]) -> tuple[dict[int, int] | None, str]:
        """The priorities of `jobs` from the snapshots after the recomputation at
        `last` and before the next."""
        found: dict[int, int] = {}
        for when, prios in self.by_time.items():
            if last < when < last + self.period:
                for job in jobs:
                    if job in prios:
                        found.setdefault(job, prios[job])
        if len(found) < len(jobs):
            return None, "a waiting job in no snapshot between recomputations"
        return found, ""


RECOMPUTED = "priorities recomputed in the cycle's second"


def replay(run: Path) -> Replay:
    out = Replay(f"{run.parent.name}/{run.name}")
    setup = SlurmSetup.read(str(run / "slurm.conf"),
                            str(run / "assoc.txt") if (run / "assoc.txt").exists() else None)
    conf = setup.conf
    priorities = None
    phase = None
    if conf.priority.multifactor:
        prio = conf.priority
        phase = decay_phase(run, prio.calc_period, prio.max_age, prio.weight_age)
        if phase is None:
            out.skipped["priorities move (multifactor) and no sprio snapshots say how"] = 1
            return out
    imported = import_log("slurm", str(run / "sacct.txt"))
    if phase is not None:  # decay_phase's phase is after the trace's time 0
        priorities = Snapshots(run / "sprio.tsv", phase, max(prio.calc_period, 1.0),
                               imported.trace.header.unix_start_time)
    trace = normalize(imported.trace, procs_per_node=1, max_nodes=10**9)
    _, table = setup.prepare(trace)
    with open(run / "sacct.txt", newline="") as f:
        rows = {int(r["JobIDRaw"]): r for r in csv.DictReader(f, delimiter="|")}
    log, cycles = read_log(run)
    names = list(conf.node_names)
    masks = []
    for part in conf.partitions:
        mask = 0
        for node in part.nodes:
            mask |= 1 << node
        masks.append(mask)
    split = allocations(run, conf, table.jobs, rows, masks)
    out.main_starts, out.main_same = split.main_starts, split.main_same
    if split.main_early_nodes:
        out.skipped["a main start on nodes whose release the log writes later"] = \
            split.main_early_nodes
    out.differ += split.differ
    all_mask = (1 << len(names)) - 1
    sched = conf.sched

    def limit_of(job: int) -> float:
        sj = table.jobs[job]
        limit = min(sj.time_limit, conf.partitions[sj.partition].max_time)
        return YEAR if limit == math.inf else limit

    def guess(job: int, end: float, now: float) -> float:
        return guess_job_end(conf, table.jobs[job], end, now)

    for at, plans, starts in cycles:
        now = float(math.floor(at))
        why = ""
        nodes = Nodes(list(conf.node_cpus))
        running: list[tuple[float, float, int, Running]] = []
        waiting = []
        for job, inst in log.items():
            if job not in table.jobs or job not in rows:
                continue
            if inst.start < at <= inst.release:
                if inst.end <= at:  # ended (its log line before the cycle's)
                    why = "a job's epilog running"
                    break
                place = split.placements.get(job)
                if place is None:
                    why = "a per-core job on several nodes, its CPUs on each unknown"
                    break
                nodes.take(place)
                end = math.floor(inst.start) + limit_of(job)
                running.append((end, inst.start, job,
                                Running(end, place, guess(job, end, now), job)))
            elif inst.submit < at <= inst.start or (
                    inst.submit < at and inst.start == math.inf and inst.end > at):
                row = rows[job]
                if row["Start"] in ("None", "Unknown", "") and row["End"] not in (
                        "None", "Unknown", ""):
                    if _unix(row["End"]) < now:
                        continue  # cancelled while it waited (sacct's End)
                    if _unix(row["End"]) == now:
                        # cancelled in the cycle's own second: before it or after?
                        # (partitions-s73's job 118, cancelled at 341.27 s, still held
                        # its reservation in the cycle at 341.098 s)
                        why = "a waiting job cancelled in the cycle's second"
                        break
                eligible = row["Eligible"]
                if eligible in ("Unknown", "None", "") or _unix(eligible) > now:
                    continue
                if _unix(eligible) == now and eligible != row["Submit"]:
                    # its dependency met in the cycle's own second: before it or after?
                    why = "a job eligible in the cycle's second"
                    break
                waiting.append(job)
        if why:
            out.skipped[why] = out.skipped.get(why, 0) + 1
            continue
        # slurmctld's job list is in submission order, which Slurm's ids follow
        running.sort(key=lambda r: (r[0], r[2]))
        tier = {job: conf.partitions[table.jobs[job].partition].priority_tier
                for job in waiting}
        def run_cycle(prio_of: dict[int, int], now: float = now, at: float = at,
                      waiting: list[int] = waiting, tier: dict[int, int] = tier,
                      running: list[tuple[float, float, int, Running]] = running,
                      starts: dict[int, frozenset[str]] = starts, state: Nodes = nodes
                      ) -> tuple[dict[int, frozenset[str]], list[tuple[float, int, float, int]]]:
            """The emulation's cycle on this state with these priorities: the jobs it
            starts (on which nodes) and its reservations."""
            order = sorted(waiting, key=lambda j: (-tier[j], -prio_of[j],
                                                   _unix(rows[j]["Submit"]), j))
            candidates = [Candidate(j, masks[table.jobs[j].partition], limit_of(j),
                                    SlurmPolicy._request(table.jobs[j]), False)
                          for j in order]
            machine = state.copy()
            started: dict[int, frozenset[str]] = {}

            def start(cand: Candidate, placed: Placement) -> Running:
                machine.take(placed)  # as the policy's start does
                started[cand.id] = frozenset(names[i] for i in range(len(names))
                                             if placed.mask >> i & 1)
                # Slurm reads its clock again after each test: a cycle begun at .999 s
                # starts its jobs in the next second, as the log's instant of the start
                # says.
                begun = math.floor(log[cand.id].start) if cand.id in starts else now
                end = begun + cand.limit
                return Running(end, placed, guess(cand.id, end, now), cand.id)

            mine: list[tuple[float, int, float, int]] = []
            backfill_cycle(now, candidates, machine, [r[3] for r in running], all_mask,
                           max(sched.bf_resolution, 1), float(sched.bf_window),
                           sched.bf_max_job_test, sched.bf_max_job_start,
                           sched.bf_window_scale, 0.0, start, False, False, mine)
            return started, mine

        def differences(started: dict[int, frozenset[str]],
                        mine: list[tuple[float, int, float, int]], at: float = at,
                        starts: dict[int, frozenset[str]] = starts,
                        plans: dict[int, tuple[float, frozenset[str]]] = plans
                        ) -> tuple[int, list[str]]:
            """(plans as Slurm's, what differs) of one replayed cycle."""
            stamp = f"cycle at {at - log_start(log):.3f} s"
            agree, differ = 0, []
            if started != starts:
                differ.append(f"{stamp}: Slurm started {_fmt_starts(starts)}, "
                              f"schedd {_fmt_starts(started)}")
            for _, job, when, mask in mine:
                if job not in plans:
                    continue
                theirs = plans[job]
                ours = (when, frozenset(names[i] for i in range(len(names))
                                        if mask >> i & 1))
                if abs(theirs[0] - ours[0]) <= 1 and theirs[1] == ours[1]:
                    agree += 1
                else:
                    differ.append(
                        f"{stamp}, job {job}: Slurm {theirs[0] - log_start(log):.0f} s "
                        f"on {','.join(sorted(theirs[1]))}; schedd "
                        f"{ours[0] - log_start(log):.0f} s on {','.join(sorted(ours[1]))}")
            return agree, differ

        if priorities is None:
            prio_of = {job: int(rows[job]["Priority"]) for job in waiting}
        else:
            found, why = priorities.at(at, waiting)
            if found is None:
                out.skipped[why] = out.skipped.get(why, 0) + 1
                if why == RECOMPUTED:
                    # Which side of the recomputation the cycle fell on, if one says.
                    sides = [p is not None and not differences(*run_cycle(p))[1]
                             for p in priorities.around(at, waiting)]
                    out.decay_sides.append((at % 1, {(True, False): "before",
                                                     (False, True): "after",
                                                     (True, True): "both"}.get(
                                                         (sides[0], sides[1]), "neither")))
                continue
            prio_of = found
        started, mine = run_cycle(prio_of)
        out.cycles += 1
        if started == starts:
            out.starts_agree += 1
        agree, differ = differences(started, mine)
        out.plans_agree += agree
        out.differ += differ
    return out


def log_start(log: dict[int, Instants]) -> float:
    return math.floor(min(inst.submit for inst in log.values()))


def _fmt_starts(starts: dict[int, frozenset[str]]) -> str:
    if not starts:
        return "none"
    return "; ".join(f"{job} on {','.join(sorted(nodes))}" for job, nodes in sorted(starts.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path,
                        help="run directories (default: every committed run, check runs "
                             "too, whose timeline.tsv has reserve rows)")
    parser.add_argument("--show", type=int, default=10, help="differences to print per run")
    args = parser.parse_args(argv)
    from slurm_reservations import CHECKS, RUNS, runs_with_plans

    runs = args.runs or runs_with_plans((RUNS, CHECKS))
    for run in runs:
        r = replay(run)
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(r.skipped.items())) or "none"
        print(f"{r.run}: {r.cycles} cycles replayed; starts as Slurm's in "
              f"{r.starts_agree}; {r.plans_agree} plans as Slurm's, "
              f"{len(r.differ)} differences; skipped: {skipped}; main-scheduler starts "
              f"on the nodes the emulation picks: {r.main_same} of {r.main_starts}")
        if r.decay_sides:
            said = {side: sorted(round(f, 3) for f, s in r.decay_sides if s == side)
                    for side in ("before", "after", "both", "neither")}
            print("  cycles in a recomputation's second, as Slurm's with the priorities "
                  "before it / after it / either / neither (each at its instant within "
                  "the second): " + "; ".join(f"{k} {len(v)} {v}" for k, v in said.items()))
        for line in r.differ[:args.show]:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
