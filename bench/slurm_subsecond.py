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
    tick_drift: list[float] = field(default_factory=list)  # s per s, between passes
    # Jobs a background tick started: (end - start, whether the end came after the
    # tick of its second), and (end - start - sleep) where the workload gives the sleep.
    tick_ends: list[tuple[float, bool]] = field(default_factory=list)
    launch: dict[str, list[float]] = field(default_factory=dict)  # by starter

    def add(self, other: Subsecond) -> None:
        for mine, theirs in ((self.release_delay, other.release_delay),
                             (self.same_second, other.same_second),
                             (self.phases, other.phases)):
            for key, values in theirs.items():
                mine.setdefault(key, []).extend(values)  # type: ignore[arg-type]
        self.main_after_release += other.main_after_release
        self.tick_drift += other.tick_drift
        self.tick_ends += other.tick_ends
        for key, values in other.launch.items():
            self.launch.setdefault(key, []).extend(values)


def read_timeline(path: Path) -> list[tuple[float, str, str]]:
    """(time, event, job) rows of a timeline.tsv."""
    rows = []
    lines = path.read_text().splitlines()
    for line in lines[1:]:
        cells = line.split("\t")
        if len(cells) >= 3:
            rows.append((float(cells[0]), cells[1], cells[2]))
    return rows


def frac(at: float) -> float:
    return at - math.floor(at)


def tick_passes(starts: list[float], releases: list[float]) -> list[float]:
    """The background thread's passes that started jobs: main-scheduler starts not set
    off by a release (the epilog message's schedule() comes within tens of ms of it),
    one per pass."""
    out: list[float] = []
    for at in sorted(starts):
        if any(0 <= at - r < 0.06 for r in releases):
            continue
        if not out or at - out[-1] > 0.5:
            out.append(at)
    return out


def drift_between(passes: list[float]) -> list[float]:
    """How much later in its second the thread's tick came, per second, between two of
    its passes less than 40 s apart (and not across the second's wrap)."""
    out = []
    for a, b in zip(passes, passes[1:], strict=False):
        step = frac(b) - frac(a)
        if 0 < b - a < 40 and abs(step) < 0.3:
            out.append(step / (b - a))
    return out


def analyse(rows: list[tuple[float, str, str]],
            sleeps: dict[str, float] | None = None) -> Subsecond:
    """One timeline's figures; `sleeps` (Slurm job id -> the workload's sleep) adds
    each job's launch time, its end less its start less its sleep."""
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
    # Ends of the jobs a background tick started, against the tick of their last second:
    # its phase there from the nearest pass, moved by the median drift.
    passes = tick_passes(mains, releases)
    out.tick_drift = drift_between(passes)
    drift = statistics.median(out.tick_drift) if out.tick_drift else 0.0
    for (event, job), start in first.items():
        end = first.get(("end", job))
        if event not in ("start_main", "start_backfill") or end is None \
                or ("timeout", job) in first:
            continue
        by_tick = event == "start_main" and any(abs(start - t) < 0.05 for t in passes)
        if sleeps is not None and job in sleeps:
            starter = "tick" if by_tick else event.removeprefix("start_")
            out.launch.setdefault(starter, []).append(end - start - sleeps[job])
        if by_tick and passes:
            near = min(passes, key=lambda t: abs(t - end))
            out.tick_ends.append((end - start, frac(end) > frac(near + (end - near) * drift)))
    return out


def workload_sleeps(run: Path) -> dict[str, float] | None:
    """Slurm job id -> the sleep its workload line asked for, where run.json names a
    workload file of bench/slurm_harness and the run has its jobmap.tsv."""
    import csv
    import json

    try:
        name = json.loads((run / "run.json").read_text())["workload"]
        harness = Path(__file__).resolve().parent / "slurm_harness" / name
        with harness.open() as f:
            sleep = {row["job"]: float(row["sleep"]) for row in csv.DictReader(f, delimiter="\t")}
        with (run / "jobmap.tsv").open() as f:
            return {row["slurm_id"]: sleep[row["job"]]
                    for row in csv.DictReader(f, delimiter="\t") if row["job"] in sleep}
    except (OSError, KeyError, ValueError):
        return None


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
    lines.append("background tick's drift, ms per s: "
                 f"{quantiles([d * 1000 for d in s.tick_drift])}")
    for starter in sorted(s.launch):
        lines.append(f"launch (end - start - sleep), jobs started by {starter}: "
                     f"{quantiles(s.launch[starter])}")
    for name, part in (("under 20 s", [a for r, a in s.tick_ends if r < 20]),
                       ("20 s or more", [a for r, a in s.tick_ends if r >= 20])):
        lines.append(f"jobs a background tick started, running {name}: {sum(part)}/"
                     f"{len(part)} ended after the tick of their last second")
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
        s = analyse(read_timeline(run / "timeline.tsv"), workload_sleeps(run))
        everything.add(s)
        print("\n".join(report(f"{run.parent.name}/{run.name}", s)) + "\n")
    if len(runs) > 1:
        print("\n".join(report("all runs", everything)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
