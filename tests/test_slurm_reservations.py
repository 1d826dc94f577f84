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
    # (basic-bf2/r9: 3,918 plans in 293 cycles; partitions/r9: 2,088 in 264, since
    # running jobs that end in the same second are walked in submission order).
    import slurm_cycles

    basic = slurm_cycles.replay(RUNS / "basic-bf2" / "r9")
    assert basic.cycles >= 250 and basic.plans_agree >= 3000
    assert basic.starts_agree == basic.cycles and not basic.differ, basic.differ[:3]
    parts = slurm_cycles.replay(RUNS / "partitions" / "r9")
    assert parts.cycles >= 250 and parts.plans_agree >= 2000
    assert parts.starts_agree == parts.cycles and not parts.differ, parts.differ[:3]
    # Multifactor: the priorities each cycle saw, from the sprio snapshots between the
    # decay thread's recomputations (1,550 plans in 139 cycles, 2026-11-29).
    mf = slurm_cycles.replay(RUNS / "multifactor-fs" / "r9")
    assert mf.cycles >= 100 and mf.plans_agree >= 1000
    assert mf.starts_agree == mf.cycles and not mf.differ, mf.differ[:3]


def test_a_cycles_priorities_come_from_snapshots_between_its_recomputations(
        tmp_path: Path) -> None:
    # Recomputations every 60 s, 20 s past each minute after time 0 (Unix 1000): at
    # 1020, 1080, 1140. A cycle at 1050.4 saw what snapshots in (1020, 1080) show: job 7
    # as 1025 shows it (500; the 1015 snapshot is from before 1020's recomputation),
    # job 8 as 1070 shows it (submitted after 1025). A cycle in 1080's own second may
    # come before or after that recomputation; a waiting job no snapshot in its window
    # shows is not known.
    import slurm_cycles

    path = tmp_path / "sprio.tsv"
    path.write_text("TIME\tJOBID\tAGE\tFAIRSHARE\tJOBSIZE\tPARTITION\tPRIORITY\n"
                    "1015\t7\t0\t0\t0\t0\t400\n"
                    "1025\t7\t0\t0\t0\t0\t500\n"
                    "1070\t8\t0\t0\t0\t0\t900\n"
                    "1085\t7\t0\t0\t0\t0\t600\n")
    snaps = slurm_cycles.Snapshots(path, 20.0, 60.0, 1000.0)
    assert snaps.at(1050.4, [7, 8]) == ({7: 500, 8: 900}, "")
    assert snaps.at(1080.2, [7])[0] is None
    assert snaps.at(1090.0, [7, 8]) == (None, "a waiting job in no snapshot between "
                                              "recomputations")
    assert snaps.at(1090.0, [7]) == ({7: 600}, "")


def test_the_check_runs_cycles_are_slurms_too() -> None:
    # Runs of workloads and configurations nothing was tuned on (other seeds, 18-20
    # nodes, other backfill parameters, multifactor with a partition factor): every
    # cycle replayed starts and plans as Slurm's (docs/slurm.md, "Check runs").
    import slurm_cycles

    runs = slurm_reservations.runs_with_plans((slurm_reservations.CHECKS,))
    assert len(runs) >= 4
    plans = 0
    for run in runs:
        r = slurm_cycles.replay(run)
        assert r.cycles >= 50, (r.run, r.skipped)
        assert r.starts_agree == r.cycles and not r.differ, (r.run, r.differ[:3])
        plans += r.plans_agree
    assert plans >= 4000


def test_on_the_check_runs_the_emulation_is_closer_to_slurm_than_easy() -> None:
    # The same measure as the committed workloads' (bench/slurm_fidelity.py), pooled
    # over each check workload's runs: more jobs within 2 s of Slurm's wait, and a
    # total wait nearer Slurm's, than EASY on the same machine and jobs.
    from schedd.slurm.fidelity import pooled, runs_of, simulate_runs

    workloads = runs_of(slurm_reservations.CHECKS)
    assert len(workloads) >= 3
    for name, runs in workloads.items():
        ours = pooled(simulate_runs(runs))
        easy = pooled(simulate_runs(runs, "easy"))
        assert ours.within2 > easy.within2, name
        assert abs(ours.total_diff) < abs(easy.total_diff), name
