"""bench/slurm_reservations.py: the emulation's backfill reservations against the ones
Slurm's cycles logged in the committed reference runs (timeline.tsv `reserve` rows), while
the two schedules agree. No Slurm needed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import slurm_reservations  # noqa: E402

RUNS = ROOT / "bench" / "slurm_reference" / "runs"
# partitions/r9's cycle at 42 s: Slurm planned job 5 at 150 s on n[5-12] (the will-run
# test's walk over every running job, docs/slurm.md "Backfill"); walking only the jobs on
# the partition's nodes gives 90 s on n[6-13].
CYCLE_42 = "1795944005.786\treserve\t5\tn[5-12]\t1795944113"


def test_every_plan_compared_is_slurms_own() -> None:
    runs = slurm_reservations.runs_with_plans()
    assert len(runs) >= 3
    compared = 0
    for run in runs:
        c = slurm_reservations.compare(run)
        assert not c.differ, (c.run, c.differ)
        compared += c.plans
    assert compared >= 10


def test_a_plan_that_differs_from_slurms_is_reported(tmp_path: Path) -> None:
    run = tmp_path / "partitions" / "r9"
    shutil.copytree(RUNS / "partitions" / "r9", run)
    timeline = run / "timeline.tsv"
    text = timeline.read_text()
    assert CYCLE_42 in text
    timeline.write_text(text.replace(CYCLE_42,
                                     "1795944005.786\treserve\t5\tn[6-13]\t1795944053"))
    c = slurm_reservations.compare(run)
    assert c.cycles >= 3 and c.until == 53.0
    assert [(second, job) for second, job, _, _ in c.differ] == [(42, 5)]
    (_, _, theirs, ours), = c.differ
    assert theirs == (90.0, frozenset(f"n{i}" for i in range(6, 14)))
    assert ours == (150.0, frozenset(f"n{i}" for i in range(5, 13)))
    assert slurm_reservations.main([str(run)]) == 0


def test_slurms_cycles_replayed_from_its_own_state_start_and_plan_as_slurm() -> None:
    # bench/slurm_cycles.py: each cycle Slurm logged, run on the emulation's cycle from
    # the state the log gives at that instant: every start and every plan the same
    # (basic-bf2/r9: 3,964 plans in 295 cycles; partitions/r9: 2,120 in 265, since
    # running jobs that end in the same second are walked in submission order).
    import slurm_cycles

    basic = slurm_cycles.replay(RUNS / "basic-bf2" / "r9")
    assert basic.cycles >= 250 and basic.plans_agree >= 3000
    assert basic.starts_agree == basic.cycles and not basic.differ, basic.differ[:3]
    parts = slurm_cycles.replay(RUNS / "partitions" / "r9")
    assert parts.cycles >= 250 and parts.plans_agree >= 2000
    assert parts.starts_agree == parts.cycles and not parts.differ, parts.differ[:3]
    # Multifactor priorities move between the log's records: not replayed.
    mf = slurm_cycles.replay(RUNS / "multifactor-fs" / "r9")
    assert mf.cycles == 0 and mf.skipped
