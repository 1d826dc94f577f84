"""The offline MILP of the real-time paper (schedd/milp, docs/milp.md).

The MILP is checked against an exhaustive brute force on tiny random instances (with and
without a binding RTJ threshold, many where the optimum preempts), under both resume modes
(a preempted BJ resumes on the same block, or on any block of its size), against
hand-worked cases, and end to end through the CLI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedd.core.bgq import BgqCluster
from schedd.core.cluster import CheckpointModel
from schedd.milp import (
    MilpError,
    MilpJob,
    SolveOptions,
    check_schedule,
    make_instance,
    solve,
    solve_at,
)
from schedd.milp.brute import brute_force, interleavings
from schedd.milp.instances import TABLE3_SIZES, table3_jobs, write_table3
from schedd.traces import normalize, read_trace

TOL = 1e-6
OPTS = SolveOptions(time_limit=60.0)


def bj(i: int, submit: float, runtime: float, nodes: int = 512, **kw) -> MilpJob:
    return MilpJob(i, submit, runtime, nodes, **kw)


def rtj(i: int, submit: float, runtime: float, nodes: int = 512) -> MilpJob:
    return MilpJob(i, submit, runtime, nodes, realtime=True)


# ----------------------------------------------------------------------------- eq. 34


@pytest.mark.parametrize("nodes, seconds", [(512, 512.0), (1024, 512.0), (2048, 512.0),
                                            (4096, 512.0), (8192, 607.0)])
def test_eq34_overhead_is_the_engines_checkpoint_time(nodes, seconds):
    # 16 GB x N / min(N / 128 x 4 GB/s, 216 GB/s), rounded up: 8192 -> 606.8 -> 607
    assert CheckpointModel().seconds(nodes) == seconds
    cluster = BgqCluster(16)
    inst = make_instance([bj(1, 0, 1000, nodes), rtj(2, 0, 1000, nodes)], cluster)
    assert inst.overhead == (seconds, 0.0)  # RTJs are never preempted: no overhead
    assert inst.overhead[0] == cluster.checkpoint_model.seconds(nodes)


def test_overhead_uses_the_partition_size_and_the_jobs_checkpoint_size():
    cluster = BgqCluster(4)
    inst = make_instance([bj(1, 0, 100, 600), bj(2, 0, 100, 512, ckpt_gb=1.0)], cluster)
    assert inst.overhead == (512.0, 32.0)  # 600 nodes hold a 1,024-node partition
    assert [len(b) for b in inst.blocks] == [2, 4]


# ----------------------------------------------------------------------------- hand cases


def test_two_jobs_in_sequence_on_one_midplane():
    # A (0, 100 s), B (10, 50 s): B first gives SDs 1.6 and 1.0 -> 1.3 (A first: 1.9);
    # a 512 s checkpoint makes preemption pointless.
    inst = make_instance([bj(1, 0, 100), bj(2, 10, 50)], BgqCluster(1))
    r = solve_at(inst, None, OPTS)
    assert r.status == "optimal" and r.mean_bj_sd == pytest.approx(1.3, abs=TOL)
    a, b = r.jobs
    assert b.pieces == [pytest.approx((10.0, 60.0))] and a.pieces == [pytest.approx((60, 160))]
    assert not a.preempted and not b.preempted and check_schedule(inst, r.jobs) == []


def test_a_1024_node_job_blocks_both_512_node_jobs():
    # all submitted at 0, 1000 s each: the two 512s side by side, then the 1024 -> 4/3
    inst = make_instance([bj(1, 0, 1000, 1024), bj(2, 0, 1000), bj(3, 0, 1000)],
                         BgqCluster(2))
    r = solve_at(inst, None, OPTS)
    assert r.mean_bj_sd == pytest.approx(4 / 3, abs=TOL)
    big, s1, s2 = r.jobs
    assert big.block == "M00-M01" and big.pieces[0][0] == pytest.approx(1000.0)
    assert {s1.block, s2.block} == {"M00", "M01"}
    assert s1.pieces[0][0] == pytest.approx(0.0) and s2.pieces[0][0] == pytest.approx(0.0)
    assert check_schedule(inst, r.jobs) == []
    assert brute_force(inst).objective == pytest.approx(4 / 3, abs=TOL)


def test_preemption_strictly_helps_and_pays_the_overhead_twice():
    # One midplane; BJ A (submit 0, 4000 s); RTJ R (submit 2000, 1000 s); threshold 1.0:
    # R must run 2000-3000. A runs first, writes its checkpoint (512 s) by 2000, so it did
    # 2000 - 512 = 1488 s of work; it resumes at 3000, reads the checkpoint (512 s) and
    # does the other 2512 s: it ends at 3000 + 512 + 2512 = 6024 -> SD 1.506. Without
    # preemption A waits for R: SD 7000 / 4000 = 1.75.
    c = 512.0
    inst = make_instance([bj(1, 0, 4000), rtj(2, 2000, 1000)], BgqCluster(1))
    r = solve_at(inst, 1.0, OPTS)
    end = 3000 + c + (4000 - (2000 - c))
    assert end == 6024.0
    assert r.status == "optimal" and r.mean_bj_sd == pytest.approx(end / 4000, abs=TOL)
    a, rt = r.jobs
    assert a.preempted and a.pieces == [pytest.approx((0, 2000)), pytest.approx((3000, end))]
    assert a.work == [pytest.approx(2000 - c), pytest.approx(4000 - 2000 + c)]
    assert rt.pieces == [pytest.approx((2000, 3000))] and rt.slowdown == pytest.approx(1.0)
    assert check_schedule(inst, r.jobs, threshold=1.0) == []
    assert brute_force(inst, 1.0).objective == pytest.approx(end / 4000, abs=TOL)
    no_pre = make_instance(inst.jobs, BgqCluster(1), preemption=False)
    assert solve_at(no_pre, 1.0, OPTS).mean_bj_sd == pytest.approx(1.75, abs=TOL)
    # without the threshold A simply runs first: SD 1 (and R waits: SD 3)
    free = solve_at(inst, None, OPTS)
    assert free.mean_bj_sd == pytest.approx(1.0, abs=TOL)
    assert free.mean_rtj_sd == pytest.approx(3.0, abs=TOL)


def test_each_piece_does_at_least_the_minimum_share_of_the_work():
    # BJ A (0, 10000 s), RTJ R (1200, 1000 s), threshold 1: a first piece would need
    # >= 1000 s of work + 512 s of checkpoint by 1200, so A waits: SD 12200 / 10000.
    # With no minimum (eq. 51 off) A does 688 s first and ends at 2200 + 512 + 9312.
    jobs = [bj(1, 0, 10000), rtj(2, 1200, 1000)]
    strict = make_instance(jobs, BgqCluster(1))
    r = solve_at(strict, 1.0, OPTS)
    assert r.mean_bj_sd == pytest.approx(1.22, abs=TOL) and not r.jobs[0].preempted
    loose = make_instance(jobs, BgqCluster(1), min_fraction=0.0)
    r0 = solve_at(loose, 1.0, OPTS)
    assert r0.mean_bj_sd == pytest.approx((2200 + 512 + 9312) / 10000, abs=TOL)
    assert r0.jobs[0].work[0] == pytest.approx(688.0)
    assert brute_force(loose, 1.0).objective == pytest.approx(r0.mean_bj_sd, abs=TOL)


def test_a_bj_may_preempt_another_bj_offline():
    # long BJ A (0, 6000), short BJ B (1000, 1000) with 32 s checkpoints on one midplane:
    # A 0-1000 (968 s of work + write), B 1000-2000, A 2000-7064 (read + 5032 s): SDs
    # 7064/6000 and 1 (without preemption the best is B then A: (8000/6000 + 1) / 2)
    inst = make_instance([bj(1, 0, 6000, ckpt_gb=1.0), bj(2, 1000, 1000)], BgqCluster(1))
    r = solve_at(inst, None, OPTS)
    assert r.jobs[0].preempted and r.jobs[0].work[0] == pytest.approx(968.0)
    assert r.mean_bj_sd == pytest.approx((7064 / 6000 + 1.0) / 2, abs=TOL)
    no_pre = make_instance(inst.jobs, BgqCluster(1), preemption=False)
    assert solve_at(no_pre, None, OPTS).mean_bj_sd == pytest.approx((8000 / 6000 + 1) / 2)
    assert brute_force(inst).objective == pytest.approx(r.mean_bj_sd, abs=TOL)


def test_check_schedule_catches_an_overlap():
    inst = make_instance([bj(1, 0, 100), bj(2, 10, 50)], BgqCluster(1))
    r = solve_at(inst, None, OPTS)
    r.jobs[0].pieces = [(0.0, 100.0)]
    r.jobs[0].slowdown = 1.0
    assert any("overlap" in p for p in check_schedule(inst, r.jobs))


# ----------------------------------------------------------------------------- brute force


def tiny(seed: int, resume: str = "same") -> tuple:
    """A random tiny instance: 3-4 jobs on bgq:1/2/4, at most 2 preemptable BJs."""
    rng = np.random.default_rng([7, seed])
    cluster = BgqCluster(int(rng.choice([1, 2, 4])), checkpoint_model=CheckpointModel(
        gb_per_node=float(rng.choice([1.0, 4.0, 16.0]))))
    n = int(rng.integers(3, 5))
    n_rt = int(rng.integers(0, 3))
    jobs, preemptable = [], 0
    for k in range(n):
        rt = k < n_rt
        can = not rt and preemptable < 2
        preemptable += can
        jobs.append(MilpJob(k + 1, float(rng.integers(0, 1500)), float(rng.integers(200, 3000)),
                            int(rng.choice(cluster.sizes)), realtime=rt, preemptable=can))
    return make_instance(jobs, cluster, resume=resume), rng


def contended(seed: int, resume: str = "same") -> tuple:
    """Long early BJs and short later RTJs on 1-2 midplanes: preemption often pays."""
    rng = np.random.default_rng([11, seed])
    cluster = BgqCluster(int(rng.choice([1, 2])), checkpoint_model=CheckpointModel(
        gb_per_node=float(rng.choice([1.0, 4.0]))))
    n = int(rng.integers(3, 5))
    n_rt = int(rng.integers(1, 3))
    jobs = []
    for k in range(n):
        if k >= n - n_rt:
            jobs.append(MilpJob(k + 1, float(rng.integers(300, 2000)),
                                float(rng.integers(200, 800)), int(rng.choice(cluster.sizes)),
                                realtime=True))
        else:
            jobs.append(MilpJob(k + 1, float(rng.integers(0, 300)),
                                float(rng.integers(1500, 5000)),
                                int(rng.choice(cluster.sizes)), preemptable=k < 2))
    return make_instance(jobs, cluster, resume=resume), rng


def migrating(seed: int, resume: str = "same") -> tuple:
    """Long early BJs and later RTJs of 1-2 midplanes on bgq:2/4, small checkpoints: a BJ
    preempted for an RTJ may find another block free before its own."""
    rng = np.random.default_rng([13, seed])
    cluster = BgqCluster(int(rng.choice([2, 4])), checkpoint_model=CheckpointModel(
        gb_per_node=float(rng.choice([1.0, 4.0]))))
    n = int(rng.integers(3, 5))
    n_rt = int(rng.integers(1, 3))
    jobs = []
    for k in range(n):
        if k >= n - n_rt:
            jobs.append(MilpJob(k + 1, float(rng.integers(300, 1500)),
                                float(rng.integers(500, 4000)),
                                int(rng.choice(cluster.sizes[:2])), realtime=True))
        else:
            jobs.append(MilpJob(k + 1, float(rng.integers(0, 300)),
                                float(rng.integers(1500, 5000)),
                                int(rng.choice(cluster.sizes[:2])), preemptable=k < 2))
    return make_instance(jobs, cluster, resume=resume), rng


def agree(inst, threshold):
    """MILP optimum == brute-force optimum, and the MILP schedule obeys every rule."""
    b = brute_force(inst, threshold)
    m = solve_at(inst, threshold, OPTS)
    if b.objective is None:
        assert not m.feasible and m.status == "infeasible"
        return b, m
    assert m.status == "optimal"
    assert m.mean_bj_sd == pytest.approx(b.objective, abs=TOL)
    assert check_schedule(inst, m.jobs, threshold=threshold) == []
    return b, m


@pytest.mark.parametrize("seed", range(12))
def test_milp_equals_brute_force_on_tiny_instances(seed):
    inst, _ = tiny(seed)
    free, _ = agree(inst, None)
    if inst.realtime and inst.batch:
        least = brute_force(inst, objective="rtj").objective
        binding = 0.5 * (least + free.mean_rtj_sd)  # between the least and the free optimum
        agree(inst, binding)


PREEMPTING: list[int] = []


@pytest.mark.parametrize("seed", range(10))
def test_milp_equals_brute_force_under_a_tight_threshold(seed):
    inst, _ = contended(seed)
    least = brute_force(inst, objective="rtj").objective
    free, _ = agree(inst, None)
    b, m = agree(inst, least + 1e-4)
    assert b.objective >= free.objective - TOL
    if any(j.preempted for j in m.jobs):
        PREEMPTING.append(seed)


def test_several_tight_instances_need_preemption():
    # runs after the parametrised test above (file order): the optimum preempted in some
    if not PREEMPTING:
        for seed in range(10):
            inst, _ = contended(seed)
            least = brute_force(inst, objective="rtj").objective
            if any(solve_at(inst, least + 1e-4, OPTS).jobs[k].preempted
                   for k in range(len(inst.jobs))):
                PREEMPTING.append(seed)
    assert len(set(PREEMPTING)) >= 4


def test_interleavings_keep_each_jobs_pieces_in_order():
    seqs = list(interleavings([2, 1, 2]))
    assert len(seqs) == 5 * 4 * 3 * 2 // (2 * 2)  # 5! / (2! 2!) = 30
    for s in seqs:
        assert s.index((0, 0)) < s.index((0, 1)) and s.index((2, 0)) < s.index((2, 1))


# ----------------------------------------------------------------------------- resume "any"


def test_resuming_on_another_block_strictly_helps():
    # bgq:2, threshold 1.0 (RTJs start at submission). BJ A (0, 4000 s), RTJ R1 (0, 3000 s)
    # and RTJ R2 (2000, 5000 s), all 512 nodes. R1 holds one midplane 0-3000, so R2 takes
    # the other from 2000 to 7000; A must leave it by 2000. Resume "same": A's block is
    # busy until 7000 (A ends at 7000 + 512 + 2512), so A rather waits for R1's midplane:
    # 3000-7000, SD 1.75. Resume "any": A runs 0-2000 (1488 s of work + the 512 s write)
    # and resumes on R1's midplane at 3000: read 512 s + 2512 s -> ends 6024, SD 1.506.
    c = 512.0
    jobs = [bj(1, 0, 4000), rtj(2, 0, 3000), rtj(3, 2000, 5000)]
    same = make_instance(jobs, BgqCluster(2))
    anywhere = make_instance(jobs, BgqCluster(2), resume="any")
    assert same.resume == "same" and anywhere.resume == "any"
    end = 3000 + c + (4000 - (2000 - c))
    assert end == 6024.0
    r_same = solve_at(same, 1.0, OPTS)
    assert r_same.status == "optimal" and r_same.mean_bj_sd == pytest.approx(1.75, abs=TOL)
    assert not r_same.jobs[0].preempted
    r_any = solve_at(anywhere, 1.0, OPTS)
    assert r_any.status == "optimal"
    assert r_any.mean_bj_sd == pytest.approx(end / 4000, abs=TOL)
    a, r1, r2 = r_any.jobs
    assert a.preempted and a.pieces == [pytest.approx((0, 2000)), pytest.approx((3000, end))]
    assert a.work == [pytest.approx(2000 - c), pytest.approx(4000 - 2000 + c)]
    # piece 1 shares R2's midplane, piece 2 R1's
    assert a.blocks == [r2.block, r1.block] and r1.block != r2.block and a.block == r2.block
    assert check_schedule(anywhere, r_any.jobs, threshold=1.0) == []
    # the same schedule breaks the paper's rule
    assert any("resumes on" in msg for msg in check_schedule(same, r_any.jobs))
    b_any, b_same = brute_force(anywhere, 1.0), brute_force(same, 1.0)
    assert b_any.objective == pytest.approx(end / 4000, abs=TOL)
    assert b_same.objective == pytest.approx(1.75, abs=TOL)
    assert b_any.resume_blocks[0] is not None and b_any.resume_blocks[0] != b_any.blocks[0]
    assert b_same.resume_blocks == (None, None, None)
    # an 8,192-node-like job (one block) cannot move: "any" changes nothing on bgq:1
    one = [bj(1, 0, 4000), rtj(2, 2000, 1000)]
    assert solve_at(make_instance(one, BgqCluster(1), resume="any"), 1.0, OPTS).mean_bj_sd \
        == pytest.approx(1.506, abs=TOL)


def test_resume_must_be_same_or_any():
    with pytest.raises(MilpError, match="resume must be one of same, any"):
        make_instance([bj(1, 0, 100)], BgqCluster(1), resume="elsewhere")


STRICTLY_BETTER: list[tuple[str, int]] = []
GENERATORS = {"tiny": (tiny, 12), "contended": (contended, 10), "migrating": (migrating, 12)}


@pytest.mark.parametrize("gen, seed", [(g, s) for g, (_, n) in GENERATORS.items()
                                       for s in range(n)])
def test_resume_any_equals_brute_force_and_is_never_worse_than_same(gen, seed):
    make = GENERATORS[gen][0]
    same, _ = make(seed)
    anywhere, _ = make(seed, resume="any")
    thresholds: list[float | None] = [None]
    if anywhere.realtime and anywhere.batch:
        least = brute_force(anywhere, objective="rtj").objective
        # "any" holds every "same" schedule: its least threshold is no larger
        assert least <= brute_force(same, objective="rtj").objective + TOL
        free = brute_force(anywhere).mean_rtj_sd
        thresholds += [least + 1e-4, 0.5 * (least + free)]
    for threshold in thresholds:
        b_any, m_any = agree(anywhere, threshold)
        b_same = brute_force(same, threshold)
        if b_same.objective is None:
            continue
        assert b_any.objective is not None
        assert b_any.objective <= b_same.objective + TOL  # never worse than "same"
        if b_any.objective < b_same.objective - TOL:
            STRICTLY_BETTER.append((gen, seed))
            # then every optimum of "any" resumes some BJ on another block
            assert any(len(set(j.blocks)) == 2 for j in m_any.jobs)


def test_resuming_elsewhere_strictly_helps_on_several_tiny_instances():
    # runs after the parametrised test above (file order)
    if not STRICTLY_BETTER:
        for seed in range(GENERATORS["migrating"][1]):
            same, _ = migrating(seed)
            anywhere, _ = migrating(seed, resume="any")
            least = brute_force(anywhere, objective="rtj").objective
            if brute_force(anywhere, least + 1e-4).objective < \
                    brute_force(same, least + 1e-4).objective - TOL:
                STRICTLY_BETTER.append(("migrating", seed))
    assert len(set(STRICTLY_BETTER)) >= 4


# ----------------------------------------------------------------------------- threshold


def test_an_infeasible_threshold_is_searched_upward():
    # two RTJs (0, 1000 s) on one midplane: one waits, mean RTJ SD >= (1 + 2) / 2 = 1.5
    inst = make_instance([rtj(1, 0, 1000), rtj(2, 0, 1000), bj(3, 0, 500)], BgqCluster(1))
    r = solve(inst, 1.2, tolerance=0.01, options=OPTS)
    assert r.feasible and r.status == "optimal" and r.threshold_proven
    assert r.threshold_requested == 1.2
    assert 1.2 <= r.threshold_lower < 1.5 <= r.threshold + 1e-9
    assert r.threshold - r.threshold_lower <= 0.01
    assert r.mean_rtj_sd <= r.threshold + TOL and r.solves > 2
    # the BJ then goes first or last, whatever keeps the RTJ mean at 1.5 + at most 0.01
    assert r.mean_bj_sd == pytest.approx(brute_force(inst, r.threshold).objective, abs=TOL)


@pytest.mark.parametrize("seed", [0, 1, 3, 5])
def test_search_brackets_the_least_feasible_threshold(seed):
    inst, _ = contended(seed)
    least = brute_force(inst, objective="rtj").objective
    r = solve(inst, 0.9, tolerance=0.01, options=OPTS)  # SD < 1 never fits
    assert r.threshold_lower < least <= r.threshold + 1e-7
    assert r.threshold - r.threshold_lower <= 0.01 and r.threshold_proven
    lex = solve(inst, lexicographic=True, options=OPTS)
    assert lex.mean_rtj_sd == pytest.approx(least, abs=1e-5)
    assert lex.mean_bj_sd == pytest.approx(
        brute_force(inst, least + 1e-6).objective, abs=1e-5)


def test_a_feasible_threshold_is_kept():
    inst = make_instance([bj(1, 0, 4000), rtj(2, 2000, 1000)], BgqCluster(1))
    r = solve(inst, 1.2, options=OPTS)
    assert r.threshold == 1.2 and r.threshold_lower is None and r.solves == 1


# ----------------------------------------------------------------------------- Table 3


def test_table3_generator_follows_its_rule():
    cluster = BgqCluster(16)
    for k in range(20):
        jobs = table3_jobs(2019, k, cluster)
        assert len(jobs) == 7 and sum(j.realtime for j in jobs) == 2
        assert [j.id for j in jobs] == list(range(1, 8))
        assert [j.submit for j in jobs] == sorted(j.submit for j in jobs)
        for j in jobs:
            assert j.nodes in TABLE3_SIZES
            assert 0 <= j.submit <= 3600 and j.submit == int(j.submit)
            assert 600 <= j.runtime <= 7200 and j.runtime == int(j.runtime)
            assert j.walltime % 60 == 0 and j.runtime <= j.walltime < 1.5 * j.runtime + 60
    assert table3_jobs(2019, 3, cluster) == table3_jobs(2019, 3, cluster)
    assert table3_jobs(2019, 3, cluster) != table3_jobs(2020, 3, cluster)


def test_table3_instance_solves_and_is_deterministic():
    cluster = BgqCluster(16)
    inst = make_instance(table3_jobs(2019, 0, cluster), cluster)
    a = solve(inst, 1.2, options=OPTS)
    b = solve(inst, 1.2, options=OPTS)
    assert a.status == "optimal" and check_schedule(inst, a.jobs, threshold=1.2) == []
    da, db = a.as_dict(), b.as_dict()
    for d in (da, db):
        d.pop("solve_seconds")
        for entry in d["log"]:
            entry.pop("seconds")
    assert da == db
    assert a.binaries > 50 and a.columns > a.binaries


# ----------------------------------------------------------------------------- CLI


def milp_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd.milp.cli", "milp", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_generate_writes_traces_the_reader_accepts(tmp_path):
    proc = milp_cli("generate", "--out", str(tmp_path), "--count", "3", "--seed", "5")
    assert proc.returncode == 0, proc.stderr
    files = sorted(tmp_path.glob("*.swf"))
    assert len(files) == 3
    for k, f in enumerate(files):
        trace = normalize(read_trace(f))
        cols = trace.columns
        assert len(trace) == 7 and list(cols["job_class"]).count("R") == 2
        expected = table3_jobs(5, k, BgqCluster(16))
        assert cols["runtime"].tolist() == [j.runtime for j in expected]
        assert cols["walltime"].tolist() == [j.walltime for j in expected]
        assert cols["nodes"].tolist() == [j.nodes for j in expected]
    again = tmp_path / "again"
    milp_cli("generate", "--out", str(again), "--count", "3", "--seed", "5")
    assert [f.read_bytes() for f in files] == [
        f.read_bytes() for f in sorted(again.glob("*.swf"))]


def test_cli_solves_a_trace_end_to_end(tmp_path):
    trace = tmp_path / "hand.swf"
    trace.write_text(
        "; MaxNodes: 512\n"
        "1 0 -1 4000 512 -1 -1 512 4800 -1 1 -1 -1 -1 -1 -1 -1 -1 -1 S -1 B\n"
        "2 2000 -1 1000 512 -1 -1 512 1200 -1 1 -1 -1 -1 -1 -1 -1 -1 -1 S -1 R\n")
    out = tmp_path / "r.json"
    proc = milp_cli("--trace", str(trace), "--cluster", "bgq:1", "--threshold", "1.0",
                    "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "mean BJ SD   1.5060" in proc.stdout and "status       optimal" in proc.stdout
    data = json.loads(out.read_text())
    assert data["status"] == "optimal" and data["mean_bj_sd"] == pytest.approx(1.506)
    assert data["overheads"] == {"1": 512.0, "2": 0.0}
    job1 = next(j for j in data["jobs"] if j["id"] == 1)
    assert job1["preempted"] and job1["block"] == "M00" and len(job1["pieces"]) == 2


def test_cli_resume_flag(tmp_path):
    # the hand case of test_resuming_on_another_block_strictly_helps, through `schedd milp`
    trace = tmp_path / "move.swf"
    trace.write_text(
        "; MaxNodes: 1024\n"
        "1 0 -1 4000 512 -1 -1 512 4800 -1 1 -1 -1 -1 -1 -1 -1 -1 -1 S -1 B\n"
        "2 0 -1 3000 512 -1 -1 512 3600 -1 1 -1 -1 -1 -1 -1 -1 -1 -1 S -1 R\n"
        "3 2000 -1 5000 512 -1 -1 512 6000 -1 1 -1 -1 -1 -1 -1 -1 -1 -1 S -1 R\n")
    base = ["--trace", str(trace), "--cluster", "bgq:2", "--threshold", "1.0"]
    results = {}
    for flag in ([], ["--resume", "same"], ["--resume", "any"]):
        out = tmp_path / f"r{len(results)}.json"
        proc = subprocess.run([sys.executable, "-m", "schedd", "milp", *base, *flag,
                               "--json", str(out)], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        results[" ".join(flag) or "default"] = (proc.stdout, json.loads(out.read_text()))
    for key in ("default", "--resume same"):
        stdout, data = results[key]
        assert "resume same" in stdout and "mean BJ SD   1.7500" in stdout
        assert data["resume"] == "same" and data["mean_bj_sd"] == pytest.approx(1.75)
        assert all(len(set(j["blocks"])) == 1 for j in data["jobs"])
    stdout, data = results["--resume any"]
    assert "resume any" in stdout and "mean BJ SD   1.5060" in stdout
    assert data["resume"] == "any" and data["mean_bj_sd"] == pytest.approx(1.506)
    job1 = next(j for j in data["jobs"] if j["id"] == 1)
    assert job1["preempted"] and len(set(job1["blocks"])) == 2
    assert job1["block"] == job1["blocks"][0]
    assert ", ".join(job1["blocks"]) in stdout  # the block column names both pieces' blocks
    proc = milp_cli(*base, "--resume", "elsewhere")
    assert proc.returncode == 2 and "invalid choice: 'elsewhere'" in proc.stderr


def test_cli_solves_a_generated_table3_log(tmp_path):
    paths = write_table3(tmp_path, BgqCluster(16), count=1, seed=2019)
    out = tmp_path / "r.json"
    proc = milp_cli("--trace", str(paths[0]), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert len(data["jobs"]) == 7 and data["cluster"] == "bgq:16"
    bj_sd = [j["slowdown"] for j in data["jobs"] if not j["realtime"]]
    assert data["mean_bj_sd"] == pytest.approx(sum(bj_sd) / 5)


@pytest.mark.parametrize("args, words", [
    (["--trace", "/nonexistent.swf"], "no such file"),
    (["--trace", "TRACE", "--cluster", "nodes:64"], "partitioned machine"),
    (["--trace", "TRACE", "--cluster", "bgq:1"], "more nodes"),
    (["--trace", "TRACE", "--max-jobs", "3"], "at most --max-jobs 3"),
    ([], "--trace FILE is required"),
])
def test_cli_errors_are_one_sentence_exit_2(tmp_path, args, words):
    path = write_table3(tmp_path, BgqCluster(16), count=1, seed=2019)[0]
    proc = milp_cli(*[str(path) if a == "TRACE" else a for a in args])
    assert proc.returncode == 2
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_add_parser_plugs_into_a_parent_parser(tmp_path, capsys):
    from schedd.milp.cli import add_parser, run

    parser = argparse.ArgumentParser(prog="schedd")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["milp", "generate", "--out", str(tmp_path), "--count", "1"])
    assert run(args) == 0
    path = next(Path(tmp_path).glob("*.swf"))
    args = parser.parse_args(["milp", "--trace", str(path), "--lexicographic"])
    assert run(args) == 0
    assert "lexicographic mode" in capsys.readouterr().out
