"""`schedd compare` as a plain policy comparison on any trace (--percent 0), with its
progress on stderr: every run's figures are those `schedd simulate` gives the same run."""

from __future__ import annotations

import json
import subprocess
import sys


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
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
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
