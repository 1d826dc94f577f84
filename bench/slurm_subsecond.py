"""What happens inside Slurm's seconds: the instants a whole-second sacct log cannot carry,
from the reference runs' timeline.tsv (slurmctld's log to the millisecond,
bench/slurm_reference.py).

    .venv/bin/python bench/slurm_subsecond.py [RUN_DIR ...]   # default: every run with one

For each run: how long after a job's end its nodes were released (2-7 ms for a job that
exits by itself; for a killed one, or with an Epilog script, the emulation's option
`epilog`), split by the scheduler that started the job; how often that release fell in
the second the job ended in; how long after a release the main scheduler's next start
came (the background thread's next pass: docs/slurm.md, What runs when); and where in
the second submissions, backfill cycles, starts, ends and releases fall.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

RUNS = Path(__file__).resolve().parent / "slurm_reference" / "runs"


@dataclass
class Subsecond:
    """One run's (or several runs') sub-second figures."""

    release_delay: dict[str, list[float]] = field(default_factory=dict)  # by starter
    same_second: dict[str, list[bool]] = field(default_factory=dict)  # by starter
    main_after_release: list[float] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=dict)  # event -> fractions

    def add(self, other: Subsecond) -> None:
        for mine, theirs in ((self.release_delay, other.release_delay),
                             (self.same_second, other.same_second),
                             (self.phases, other.phases)):
            for key, values in theirs.items():
                mine.setdefault(key, []).extend(values)  # type: ignore[arg-type]
        self.main_after_release += other.main_after_release


def read_timeline(path: Path) -> list[tuple[float, str, str]]:
    """(time, event, job) rows of a timeline.tsv."""
    rows = []
    lines = path.read_text().splitlines()
    for line in lines[1:]:
        cells = line.split("\t")
        if len(cells) >= 3:
            rows.append((float(cells[0]), cells[1], cells[2]))
    return rows


def analyse(rows: list[tuple[float, str, str]]) -> Subsecond:
    out = Subsecond()
    first: dict[tuple[str, str], float] = {}
    for at, event, job in rows:
        first.setdefault((event, job), at)
        out.phases.setdefault(event, []).append(at - math.floor(at))
    releases = sorted(at for (event, _), at in first.items() if event == "release")
    for (event, job), end in first.items():
        if event != "end" or ("release", job) not in first:
            continue
        starter = ("backfill" if ("start_backfill", job) in first
                   else "main" if ("start_main", job) in first else "other")
        release = first[("release", job)]
        out.release_delay.setdefault(starter, []).append(release - end)
        out.same_second.setdefault(starter, []).append(math.floor(release) == math.floor(end))
    # The main scheduler's starts that a release set off: the first start_main within a
    # second after each release.
    mains = sorted(at for (event, _), at in first.items() if event == "start_main")
    k = 0
    for release in releases:
        while k < len(mains) and mains[k] < release:
            k += 1
        if k < len(mains) and mains[k] - release < 1.0:
            out.main_after_release.append(mains[k] - release)
    return out


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    q = (statistics.quantiles(ordered, n=4) if len(ordered) > 1
         else [ordered[0]] * 3)
    return (f"n={len(ordered)} min {ordered[0]:.3f} q1 {q[0]:.3f} median {q[1]:.3f} "
            f"q3 {q[2]:.3f} max {ordered[-1]:.3f}")


def deciles(fractions: list[float]) -> str:
    """How many instants fall in each tenth of the second."""
    counts = [0] * 10
    for f in fractions:
        counts[min(int(f * 10), 9)] += 1
    return " ".join(f"{c:3d}" for c in counts)


def report(name: str, s: Subsecond) -> list[str]:
    lines = [f"## {name}"]
    for starter in sorted(s.release_delay):
        same = s.same_second[starter]
        lines.append(f"release - end, jobs started by {starter}: "
                     f"{quantiles(s.release_delay[starter])}; "
                     f"in the end's second: {sum(same)}/{len(same)}")
    lines.append(f"main scheduler's start after a release: {quantiles(s.main_after_release)}")
    lines.append("tenths of the second:         .0  .1  .2  .3  .4  .5  .6  .7  .8  .9")
    for event in ("submit", "backfill_cycle", "start_backfill", "start_main", "end",
                  "release", "timeout"):
        if event in s.phases:
            lines.append(f"  {event:27s} {deciles(s.phases[event])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path,
                        help="run directories (default: every committed run with a "
                             "timeline.tsv)")
    args = parser.parse_args(argv)
    runs = args.runs or sorted(p.parent for p in RUNS.glob("*/*/timeline.tsv"))
    if not runs:
        print("no run with a timeline.tsv (bench/slurm_reference.py writes one)",
              file=sys.stderr)
        return 1
    everything = Subsecond()
    for run in runs:
        s = analyse(read_timeline(run / "timeline.tsv"))
        everything.add(s)
        print("\n".join(report(f"{run.parent.name}/{run.name}", s)) + "\n")
    if len(runs) > 1:
        print("\n".join(report("all runs", everything)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
