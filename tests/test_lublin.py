"""The Lublin–Feitelson CWF generator (`schedd workload lublin`, docs/workloads.md)."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

from schedd.traces import normalize, read_trace, write_trace
from schedd.traces.lublin import (
    A1,
    A2,
    B1,
    B2,
    PA,
    PAPER_P_EXTEND,
    PAPER_P_REDUCE,
    PB,
    LublinParams,
    generate,
)

LOAD_TOLERANCE = 1e-3  # relative; the beta_arr bisection stops within 1e-4


def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=120)


def load_of(columns: dict[str, np.ndarray], procs: int = 320) -> float:
    """The paper's Load, computed from the written columns, independently of the generator."""
    work = float(np.dot(columns["req_procs"].astype(float), columns["runtime"]))
    return work / (procs * float(columns["submit"].max()))


@pytest.fixture(scope="module")
def big():
    """Many jobs, so that fractions and means are tight; P_D 0.5 to see dedicated jobs, the
    paper's elastic control commands to see those."""
    return generate(LublinParams(jobs=20_000, p_dedicated=0.5, p_extend=PAPER_P_EXTEND,
                                 p_reduce=PAPER_P_REDUCE), seed=11).trace


# ----------------------------------------------------------------------------- CLI


def test_same_seed_gives_byte_identical_file_and_other_seeds_differ(tmp_path):
    args = ["workload", "lublin", "--jobs", "300", "--pd", "0.3", "--load", "0.8"]
    runs = {}
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        out = tmp_path / f"{name}.cwf"
        proc = schedd(*args, "--seed", seed, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        runs[name] = (out.read_bytes(), proc.stdout.splitlines()[-1])  # the load line
    assert runs["a"] == runs["b"]
    assert runs["a"][0] != runs["c"][0]


def ecc_lines(path) -> list[str]:
    """The ECC records of a written CWF file (field 20: ET/RT/EP/RP)."""
    return [line for line in path.read_text().splitlines()
            if not line.startswith(";") and line.split()[19:20] in (["ET"], ["RT"], ["EP"],
                                                                    ["RP"])]


def test_no_eccs_unless_asked_and_the_same_jobs_either_way(tmp_path):
    """A batch workload by default; --ecc adds the paper's P_E 0.2 / P_R 0.1, --pe/--pr
    their own rates; the jobs themselves do not change (ECCs have their own stream)."""
    files = {}
    for name, flags in (("plain", []), ("ecc", ["--ecc"]), ("pe", ["--pe", "0.5"]),
                        ("both", ["--ecc", "--pr", "0"])):
        out = tmp_path / f"{name}.cwf"
        proc = schedd("workload", "lublin", "--jobs", "2000", "--seed", "3", *flags,
                      "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        files[name] = (out, proc.stdout)
    plain, stdout = files["plain"]
    assert ecc_lines(plain) == [] and "0 ECCs (0 ET, 0 RT)" in stdout
    assert "P_E 0, P_R 0" in plain.read_text()
    kinds = {name: [ln.split()[19] for ln in ecc_lines(files[name][0])] for name in files}
    assert kinds["ecc"].count("ET") / 2000 == pytest.approx(0.2, abs=0.03)
    assert kinds["ecc"].count("RT") / 2000 == pytest.approx(0.1, abs=0.03)
    assert "P_E 0.2, P_R 0.1" in files["ecc"][0].read_text()
    assert set(kinds["pe"]) == {"ET"} and len(kinds["pe"]) / 2000 == pytest.approx(0.5, abs=0.04)
    assert set(kinds["both"]) == {"ET"} and kinds["both"].count("ET") == kinds["ecc"].count("ET")
    jobs = {name: read_trace(path).columns for name, (path, _) in files.items()}
    for name in ("ecc", "pe", "both"):
        for col in ("submit", "runtime", "req_procs", "req_time"):
            assert np.array_equal(jobs[name][col], jobs["plain"][col])


def test_cli_prints_target_and_achieved_load_and_file_agrees(tmp_path):
    out = tmp_path / "w.cwf"
    proc = schedd("workload", "lublin", "--load", "0.7", "--seed", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"load: target 0\.7000, achieved (\d+\.\d+) \(beta_arr (\d+\.\d+)\)",
                  proc.stdout)
    assert m, proc.stdout
    trace = read_trace(out)
    assert len(trace) == 500  # the paper's N_J
    assert float(m.group(1)) == pytest.approx(0.7, rel=LOAD_TOLERANCE)
    assert load_of(trace.columns) == pytest.approx(float(m.group(1)), abs=5e-5)


def test_beta_arr_can_be_given_instead_of_a_load(tmp_path):
    out = tmp_path / "w.cwf"
    proc = schedd("workload", "lublin", "--beta-arr", "0.5101", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "target none (--beta-arr)" in proc.stdout and "beta_arr 0.510100" in proc.stdout


def test_help_lists_the_generator():
    assert "lublin" in schedd("workload", "--help").stdout
    text = schedd("workload", "lublin", "--help").stdout
    for option in ("--jobs", "--seed", "--load", "--beta-arr", "--procs", "--unit", "--ps",
                   "--pd", "--ecc", "--pe", "--pr", "--lead", "--ecc-mean", "--overestimate",
                   "--out"):
        assert option in text


@pytest.mark.parametrize("args, message", [
    (["--procs", "300"], "must be a positive multiple of the unit (32)"),
    (["--procs", "96"], "large jobs need at least 4 units of 32 processors"),
    (["--ps", "1.5"], "argument --ps: expected a probability in [0, 1], got 1.5"),
    (["--pe", "0.6", "--pr", "0.5"], "P_E + P_R must be at most 1"),
    (["--jobs", "0"], "argument --jobs: expected a number >= 1, got 0"),
    (["--load", "0"], "argument --load: expected a number > 0, got 0"),
    (["--load", "1e6"], "a load of 1e+06 is out of reach for 500 jobs"),
    (["--load", "0.5", "--beta-arr", "0.5"], "not allowed with argument"),
    (["--overestimate", "0.5"], "argument --overestimate: expected a number >= 1, got 0.5"),
])
def test_user_errors_are_one_sentence_with_status_2(tmp_path, args, message):
    proc = schedd("workload", "lublin", *args, "--out", str(tmp_path / "w.cwf"))
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len([ln for ln in proc.stderr.splitlines() if "error:" in ln]) == 1
    assert not (tmp_path / "w.cwf").exists()


def test_unwritable_output_is_one_sentence(tmp_path):
    (tmp_path / "file").write_text("")  # a directory that cannot be created
    proc = schedd("workload", "lublin", "--out", str(tmp_path / "file" / "w.cwf"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("schedd: error: cannot write") and "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- the model


@pytest.mark.parametrize("p_small", [0.2, 0.8])
def test_sizes_are_units_with_small_fraction_near_ps(p_small):
    cols = generate(LublinParams(jobs=20_000, p_small=p_small), seed=3).trace.columns
    units = cols["req_procs"] // 32
    assert (cols["req_procs"] % 32 == 0).all() and (cols["procs"] == cols["req_procs"]).all()
    assert units.min() == 1 and units.max() == 10
    small = units <= 3
    assert small.mean() == pytest.approx(p_small, abs=0.02)
    # round(U[1, 3]) and round(U[4, 10]): mean 2 and 7 units, end points at half weight
    assert units[small].mean() == pytest.approx(2.0, abs=0.05)
    assert units[~small].mean() == pytest.approx(7.0, abs=0.1)
    assert (units[small] == 2).mean() == pytest.approx(0.5, abs=0.03)


def test_runtimes_are_hyper_gamma_correlated_with_size():
    cols = generate(LublinParams(jobs=20_000, p_small=0.6), seed=5).trace.columns
    size, runtime = cols["req_procs"], cols["runtime"]
    assert (runtime >= 1).all() and (runtime == np.floor(runtime)).all()
    assert runtime.max() <= math.exp(12)  # m_lublin99 draws log-runtimes above 12 again
    # log(runtime) ~ p Gamma(A1, B1) + (1 - p) Gamma(A2, B2), p = PA * size + PB in [0, 1]
    for procs in (32, 64, 96):
        p = PA * procs + PB
        expected = p * A1 * B1 + (1 - p) * A2 * B2
        assert np.log(runtime[size == procs]).mean() == pytest.approx(expected, abs=0.2)
    large = size >= 160  # p is clipped to 0: only the long Gamma
    assert np.log(runtime[large]).mean() == pytest.approx(A2 * B2, abs=0.05)
    means = [runtime[size == s].mean() for s in (32, 64, 96)] + [runtime[size >= 128].mean()]
    assert means == sorted(means)  # bigger jobs run longer, as p falls with size


@pytest.mark.parametrize("target", [0.5, 0.7, 0.9, 1.0])
def test_achieved_load_is_close_to_the_target(target):
    for seed, p_small, p_dedicated in ((0, 0.5, 0.0), (1, 0.2, 0.5), (2, 0.8, 0.9)):
        params = LublinParams(load=target, p_small=p_small, p_dedicated=p_dedicated)
        result = generate(params, seed=seed)
        assert result.target == target
        assert result.load == pytest.approx(load_of(result.trace.columns), rel=1e-12)
        assert result.load == pytest.approx(target, rel=LOAD_TOLERANCE)
        # about the paper's sweep of beta_arr, [0.4101, 0.6101], for loads 0.5 to 1 (the exact
        # value depends on the draws): the model is read as the paper's authors ran it
        assert 0.40 <= result.beta_arr <= 0.63


def test_load_falls_as_beta_arr_grows_and_jobs_stay_the_same():
    results = [generate(LublinParams(beta_arr=b), seed=4) for b in (0.4101, 0.5101, 0.6101)]
    loads = [r.load for r in results]
    assert loads == sorted(loads, reverse=True) and loads[0] > 2 * loads[-1]
    first = results[0].trace.columns
    for other in results[1:]:  # beta_arr only moves arrivals
        for name in ("req_procs", "runtime", "req_time"):
            assert np.array_equal(first[name], other.trace.columns[name])


def test_dedicated_jobs_have_requested_starts_after_submission(big):
    cols = big.columns
    dedicated = cols["job_class"] == "D"
    assert dedicated.mean() == pytest.approx(0.5, abs=0.02)
    assert (cols["req_start"][~dedicated] == -1).all()
    lead = cols["req_start"][dedicated] - cols["submit"][dedicated]
    assert (lead >= 1).all()
    assert lead.mean() == pytest.approx(3600, rel=0.05)  # exponential, mean --lead


def test_eccs_fractions_and_references(big):
    cols = big.columns
    n = len(big)
    kinds = [e.kind for e in big.eccs]
    assert set(kinds) <= {"ET", "RT"}  # time elasticity only, as in the paper's experiments
    assert kinds.count("ET") / n == pytest.approx(0.2, abs=0.015)
    assert kinds.count("RT") / n == pytest.approx(0.1, abs=0.015)
    ids = [e.job_id for e in big.eccs]
    assert len(set(ids)) == len(ids)  # at most one command per job
    row = {int(j): i for i, j in enumerate(cols["job_id"])}
    for e in big.eccs:
        i = row[e.job_id]  # refers to an existing job
        assert e.time > cols["submit"][i]
        start = max(cols["submit"][i], cols["req_start"][i])
        assert e.time <= start + cols["req_time"][i]  # before the job could have ended
        assert e.amount >= 1 and e.amount == int(e.amount)
        if e.kind == "RT":
            assert e.amount < cols["req_time"][i]  # the walltime stays positive
    times = [(e.time, e.job_id) for e in big.eccs]
    assert times == sorted(times)


def test_floor_large_rule_changes_only_the_large_sizes():
    """size_rule="floor-large" (docs/workloads.md, choice 4): large jobs are floor(U[4, 10])
    units, so 4..9 equally often and never the whole machine; small jobs are untouched."""
    n = 20_000
    rounded = generate(LublinParams(jobs=n, p_small=0.2), seed=8).trace.columns["req_procs"]
    floored = generate(LublinParams(jobs=n, p_small=0.2, size_rule="floor-large"),
                       seed=8).trace.columns["req_procs"]
    small = rounded <= 96
    assert np.array_equal(floored[small], rounded[small])
    large = floored[~small] // 32
    assert set(large.tolist()) == set(range(4, 10))
    assert large.mean() == pytest.approx(6.5, abs=0.05)
    assert (rounded[~small] // 32).mean() == pytest.approx(7.0, abs=0.05)
    assert ((rounded[~small] - floored[~small]) // 32).tolist().count(1) > 0  # same draws
    assert set(((rounded[~small] - floored[~small]) // 32).tolist()) == {0, 1}
    with pytest.raises(ValueError, match="size rule must be one of round, floor-large"):
        generate(LublinParams(size_rule="ceil"))


def test_requested_times_exact_by_default_and_overestimated_on_request():
    exact = generate(LublinParams(jobs=2000), seed=6).trace.columns
    assert np.array_equal(exact["req_time"], exact["runtime"])
    over = generate(LublinParams(jobs=2000, overestimate=3.0), seed=6).trace.columns
    ratio = over["req_time"] / over["runtime"]
    assert ratio.min() >= 1.0 and ratio.max() <= 3.0 + 1.0 / over["runtime"].min()
    assert np.median(ratio) == pytest.approx(2.0, abs=0.1)


def test_written_file_reads_back_and_normalises(tmp_path, big):
    path = tmp_path / "w.cwf.gz"
    write_trace(path, big)
    back = read_trace(path)
    for name in ("job_id", "submit", "runtime", "req_procs", "req_time", "req_start",
                 "job_class"):
        assert np.array_equal(back.columns[name], big.columns[name]), name
    assert [(e.job_id, e.time, e.kind, e.amount) for e in back.eccs] == [
        (e.job_id, e.time, e.kind, e.amount) for e in big.eccs]
    assert back.header.max_procs == 320 and back.header.max_nodes is None
    queue = normalize(back)
    assert len(queue) == len(big) and queue.max_nodes == 320
    assert sum(queue.dropped.values()) == 0 and len(queue.eccs) == len(big.eccs)
    by_node_card = normalize(back, procs_per_node=32)  # 10 nodes of 32 processors
    assert by_node_card.max_nodes == 10
    assert set(by_node_card.columns["nodes"].tolist()) == set(range(1, 11))
    specs = list(normalize(back).specs())
    assert sum(s.requested_start >= 0 for s in specs) == int((big.columns["job_class"] == "D")
                                                               .sum())
