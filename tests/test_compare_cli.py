"""`schedd compare` as a plain policy comparison on any trace (--percent 0), with its
progress on stderr: every run's figures are those `schedd simulate` gives the same run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path


def test_percent_zero_compares_policies_on_any_trace_with_progress(tmp_path, shared_traces):
    lines = (shared_traces / "KTH-SP2-1996-2.swf").read_text().splitlines()
    trace = tmp_path / "kth200.swf"
    trace.write_text("\n".join([ln for ln in lines if ln.startswith(";")]
                               + [ln for ln in lines if not ln.startswith(";")][:200]) + "\n")
    out = tmp_path / "c.json"
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace", str(trace),
                           "--cluster", "nodes:100", "--percent", "0", "--trials", "1",
                           "--run", "easy", "--run", "fcfs", "--run", "conservative",
                           "--workers", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-2].startswith(  # then where the results are
        "schedd compare: 3/3 simulations done in ")
    assert "### 0% real-time jobs: all jobs" in proc.stdout
    rows = json.loads(out.read_text())["results"]["0"]
    assert list(rows) == ["easy", "fcfs", "conservative"]
    for policy in rows:
        sim = tmp_path / policy
        subprocess.run([sys.executable, "-m", "schedd", "simulate", "--trace", str(trace),
                        "--cluster", "nodes:100", "--policy", policy, "--quiet",
                        "--out", str(sim)], check=True, timeout=300)
        summary = json.loads((sim / "summary.json").read_text())
        ours = rows[policy]["stats"]["by_class"]["batch"]["bounded_slowdown_600"]
        theirs = summary["stats"]["by_class"]["batch"]["bounded_slowdown_600"]
        assert ours == theirs, policy
        assert "realtime" not in rows[policy]["stats"]["by_class"]
    assert rows["fcfs"]["stats"]["by_class"]["batch"]["bounded_slowdown_600"]["mean"] > \
        rows["easy"]["stats"]["by_class"]["batch"]["bounded_slowdown_600"]["mean"]


def test_percent_out_of_range_is_one_sentence(tmp_path, shared_traces):
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace",
                           str(shared_traces / "KTH-SP2-1996-2.swf"), "--percent", "100"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("schedd: error: --percent values must lie in [0, 100) (0: no "
                           "real-time jobs, a plain comparison of the runs)\n")


def test_unwritable_outputs_are_refused_before_any_simulation(shared_traces):
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace",
                           str(shared_traces / "KTH-SP2-1996-2.swf"), "--cluster", "nodes:100",
                           "--percent", "0", "--json", "/proc/x/c.json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("schedd: error: cannot write /proc/x/c.json (No such file or "
                           "directory)\n")


def test_a_missing_trace_is_one_sentence(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace",
                           str(tmp_path / "absent.swf")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (f"schedd: error: cannot read trace {tmp_path / 'absent.swf'}: No "
                           "such file or directory\n")


SAMPLE = str(Path(__file__).resolve().parents[1] / "schedd" / "data"
             / "sample-lublin256-1000.swf")


def test_results_are_kept_in_a_folder_named_by_the_trace_and_a_hash_of_the_options(
        tmp_path):
    """Without --markdown or --json the tables, every figure and each simulation are kept
    in out/compare-TRACE-HASH, said on stderr; the same comparison finds the same folder
    (and runs nothing again), another option makes another."""
    def compare(*extra: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace", SAMPLE,
                               "--cluster", "nodes:256", "--percent", "0", "--run", "easy",
                               "--run", "fcfs", *extra], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc

    first = compare("--trials", "1", "--workers", "1")
    (kept,) = (tmp_path / "out").iterdir()
    assert re.fullmatch(r"compare-sample-lublin256-1000-[0-9a-f]{8}", kept.name), kept.name
    assert (kept / "tables.md").read_text() == first.stdout
    assert json.loads((kept / "results.json").read_text())["runs"] == ["easy", "fcfs"]
    assert len(list((kept / "cache").glob("*/*/row.json"))) == 2
    assert first.stderr.strip().splitlines()[-1] == (
        f"schedd compare: results in out/{kept.name}/ (tables.md, results.json); the "
        f"simulations in out/{kept.name}/cache")
    # --workers does not change the results, so neither the folder
    again = compare("--trials", "1", "--workers", "2")
    assert "2 simulations, 2 cached, 0 to run" in again.stderr
    assert again.stdout == first.stdout
    assert list((tmp_path / "out").iterdir()) == [kept]
    compare("--trials", "2", "--workers", "1")
    assert len(list((tmp_path / "out").iterdir())) == 2
    mine = compare("--trials", "1", "--workers", "1", "--out", "mine")
    assert (tmp_path / "mine" / "tables.md").read_text() == mine.stdout
    assert "results in mine/ (tables.md, results.json)" in mine.stderr
