"""The emulation's backfill reservations against the ones Slurm's own cycles logged, cycle
by cycle, while the two have run the same schedule.

    .venv/bin/python bench/slurm_reservations.py [RUN_DIR ...]   # default: every run whose
                                                               # timeline has reservations

slurmctld logs, with DebugFlags=Backfill, the expected start and nodes each cycle planned
for every job it could not start (`_dump_job_sched`); bench/slurm_reference.py keeps them
in timeline.tsv as `reserve` rows. For each run the emulation simulates the run's sacct
log and records its own plans. A cycle is compared where both ran one in the same second,
before the first job whose start differs between the two schedules, and in a second in
which no job ended in Slurm's log (where the cycle and an end came in an order the
emulation cannot know). Jobs the emulation did not plan (its cycles stop after the last
job that could start now: what comes after changes nothing) are not compared. A plan
agrees when both have the job start within 1 s and on the same nodes.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from schedd.slurm.fidelity import simulate_run  # noqa: E402
from schedd.slurm.importers import import_log  # noqa: E402

RUNS = ROOT / "bench" / "slurm_reference" / "runs"
# Runs of workloads and configurations the emulation was not tuned on (docs/slurm.md,
# "Check runs"): the same files, kept apart from the runs the fidelity tests pool.
CHECKS = ROOT / "bench" / "slurm_reference" / "checks"

Plan = tuple[float, frozenset[str]]  # expected start (s after time 0), node names


@dataclass
class Comparison:
    run: str
    cycles: int = 0  # cycles compared
    until: float = math.inf  # the first diverging start (s after time 0)
    agree: int = 0
    differ: list[tuple[int, int, Plan, Plan]] = field(default_factory=list)  # cycle, job

    @property
    def plans(self) -> int:
        return self.agree + len(self.differ)


def runs_with_plans(roots: tuple[Path, ...] = (RUNS,)) -> list[Path]:
    """Every committed run under `roots` whose timeline.tsv has the cycles'
    reservations."""
    return sorted(p.parent for root in roots for p in root.glob("*/*/timeline.tsv")
                  if "\treserve\t" in p.read_text())


def slurms_plans(run: Path, epoch: float) -> tuple[dict[int, dict[int, Plan]], set[int]]:
    """second -> {job: plan} of each logged cycle, and the seconds in which a job ended
    (`slurm_cycles.read_log`'s instants, as seconds after time 0)."""
    from slurm_cycles import read_log

    jobs, logged = read_log(run)
    cycles = {math.floor(at - epoch): {job: (start - epoch, nodes)
                                      for job, (start, nodes) in plans.items()}
              for at, plans, _ in logged}
    ends = {math.floor(inst.end - epoch) for inst in jobs.values() if inst.end < math.inf}
    return cycles, ends


def compare(run: Path, read_order: bool = True) -> Comparison:
    """`read_order`: as simulate_run's (False: the order of cycle and tick left unread)."""
    epoch = import_log("slurm", str(run / "sacct.txt")).trace.header.unix_start_time
    real, ends = slurms_plans(run, epoch)
    sim = simulate_run(run, record_plans=True, read_order=read_order)
    policy = sim.policy
    names = policy.conf.node_names
    out = Comparison(f"{run.parent.name}/{run.name}")
    for pair in sim.pairs:
        if math.isfinite(pair.wait_a) and math.isfinite(pair.wait_b) \
                and pair.wait_a != pair.wait_b:
            out.until = min(out.until, pair.submit + min(pair.wait_a, pair.wait_b))
    mine: dict[int, dict[int, Plan]] = {}
    for now, job, start, mask in policy.plans:
        nodes = frozenset(names[i] for i in range(len(names)) if mask >> i & 1)
        mine.setdefault(math.floor(now), {})[job] = (start, nodes)
    for second in sorted(set(real) & set(mine)):
        if second >= out.until or second in ends:
            continue
        out.cycles += 1
        theirs, ours = real[second], mine[second]
        for job, plan in sorted(ours.items()):
            if job not in theirs:
                continue
            other = theirs[job]
            if abs(other[0] - plan[0]) <= 1 and other[1] == plan[1]:
                out.agree += 1
            else:
                out.differ.append((second, job, other, plan))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path,
                        help="run directories (default: every committed run whose "
                             "timeline.tsv has reserve rows)")
    args = parser.parse_args(argv)
    runs = args.runs or runs_with_plans()
    if not runs:
        print("no run with reservations in its timeline.tsv", file=sys.stderr)
        return 1
    for run in runs:
        c = compare(run)
        print(f"{c.run}: {c.cycles} cycles compared (before the first diverging start, "
              f"{c.until:.0f} s), {c.agree} of {c.plans} plans agree")
        for second, job, theirs, ours in c.differ:
            print(f"  cycle {second} s, job {job}: Slurm {theirs[0]:.0f} s on "
                  f"{','.join(sorted(theirs[1]))}; schedd {ours[0]:.0f} s on "
                  f"{','.join(sorted(ours[1]))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
