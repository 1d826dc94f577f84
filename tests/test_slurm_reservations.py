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
    # The tick first (the order left unread: read off its first 30 jobs, partitions/r9
    # has the cycle first by one job, and the schedules part at 29 s).
    c = slurm_reservations.compare(run, read_order=False)
    assert c.cycles >= 3 and c.until == 53.0
    assert [(second, job) for second, job, _, _ in c.differ] == [(42, 5)]
    (_, _, theirs, ours), = c.differ
    assert theirs == (90.0, frozenset(f"n{i}" for i in range(6, 14)))
    assert ours == (150.0, frozenset(f"n{i}" for i in range(5, 13)))
    assert slurm_reservations.main([str(run)]) == 0  # reports, does not fail


def test_slurms_cycles_replayed_from_its_own_state_start_and_plan_as_slurm() -> None:
    # bench/slurm_cycles.py: each cycle Slurm logged, run on the emulation's cycle from
    # the state the log gives at that instant: every start and every plan the same
    # (basic-bf2/r9: 5,214 plans in 383 cycles; partitions/r9: 3,502 in 333, since
    # per-core jobs over several nodes are split as the node choice splits them), and
    # every main-scheduler start on the nodes the emulation's choice takes.
    import slurm_cycles

    basic = slurm_cycles.replay(RUNS / "basic-bf2" / "r9")
    assert basic.cycles >= 350 and basic.plans_agree >= 5000
    assert basic.starts_agree == basic.cycles and not basic.differ, basic.differ[:3]
    parts = slurm_cycles.replay(RUNS / "partitions" / "r9")
    assert parts.cycles >= 300 and parts.plans_agree >= 3000
    assert parts.starts_agree == parts.cycles and not parts.differ, parts.differ[:3]
    # Multifactor: the priorities each cycle saw, from the sprio snapshots between the
    # decay thread's recomputations (2,286 plans in 173 cycles, 2026-11-29).
    mf = slurm_cycles.replay(RUNS / "multifactor-fs" / "r9")
    assert mf.cycles >= 150 and mf.plans_agree >= 2000
    assert mf.starts_agree == mf.cycles and not mf.differ, mf.differ[:3]
    for r in (basic, parts, mf):
        assert r.main_starts >= 25 and r.main_same == r.main_starts, r.run


def test_per_core_jobs_over_several_nodes_are_split_from_the_state_at_their_start(
        tmp_path: Path) -> None:
    # Three nodes of 4 CPUs; job 5 holds n3 (exclusive). Job 1 takes 3 CPUs of n1 (one
    # node: sacct's NCPUS says how many). Job 2 asks for 6 CPUs and the log puts it on
    # n[1-2], where the model has 1 + 4 free: that split is not known, and nothing is
    # checked or split until job 2 is gone. Job 3 (5 CPUs on n[1-2] once jobs 1 and 2
    # are released) is split as the node choice splits it: n1 whole and 1 CPU of n2.
    # Job 4, exclusive, is started by the main scheduler on n3 before the log's release
    # of job 5 (a job killed with others gets each node back with that node's own
    # epilog-complete message, the log's line comes with the last): counted, not
    # checked. Job 6's main start, 2 CPUs on n2, is the emulation's choice: the node
    # with the fewest free CPUs that holds it.
    import slurm_cycles

    from schedd.slurm.conf import read_slurm_conf
    from schedd.slurm.jobs import SlurmJob

    conf_path = tmp_path / "slurm.conf"
    conf_path.write_text("NodeName=n[1-3] CPUs=4\nPartitionName=p Nodes=ALL Default=YES\n")
    conf = read_slurm_conf(conf_path)

    def job(cpus: int, nodes: int = 1, exclusive: bool = False) -> SlurmJob:
        return SlurmJob(cpus=cpus, min_nodes=nodes, max_nodes=nodes if exclusive else 3,
                        exclusive=exclusive, partition=0, user="u", account="a",
                        qos="normal", time_limit=600.0)

    jobs = {1: job(3), 2: job(6), 3: job(5), 4: job(4, exclusive=True),
            5: job(4, exclusive=True), 6: job(2)}
    ncpus = {1: 3, 2: 6, 3: 5, 4: 4, 5: 4, 6: 2}
    rows = {j: {"NCPUS": str(n)} for j, n in ncpus.items()}
    (tmp_path / "timeline.tsv").write_text(
        "time\tevent\tjob\tnodes\texpected_start\n"
        "10.0\tstart_backfill\t5\tn3\t\n"
        "11.0\tstart_main\t1\tn1\t\n"
        "12.0\tstart_backfill\t2\tn[1-2]\t\n"
        "13.0\trelease\t2\t\t\n"
        "14.0\trelease\t1\t\t\n"
        "15.0\tstart_main\t3\tn[1-2]\t\n"
        "16.0\tstart_main\t4\tn3\t\n"
        "16.1\trelease\t5\t\t\n"
        "17.0\trelease\t4\t\t\n"
        "18.0\tstart_main\t6\tn2\t\n")
    out = slurm_cycles.allocations(tmp_path, conf, jobs, rows, [0b111])
    assert out.placements[1] is not None and out.placements[1].partial == ((0, 3),)
    assert out.placements[2] is None  # 1 + 4 CPUs free on n[1-2]: not 6
    assert out.placements[3] is not None
    assert sorted(out.placements[3].place([4, 4, 4])) == [(0, 4), (1, 1)]
    assert out.placements[4] is not None and out.placements[4].full == 0b100
    assert out.main_early_nodes == 1
    # Checked: jobs 1, 3 and 6.
    assert (out.main_starts, out.main_same) == (3, 3), out.differ


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
        assert r.main_same == r.main_starts, (r.run, r.differ[:3])
        plans += r.plans_agree
    assert plans >= 12000


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
