"""`schedd import` end to end, as a user runs it: the command, its one-line errors, the
trace it writes simulated by `schedd simulate`, and every real-Slurm reference run of the
harness (bench/slurm_reference/runs/*/*/sacct.txt) when they are in the repository."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from schedd.slurm.importers import import_log
from schedd.traces import normalize, read_trace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "import"
RUNS = sorted(p for p in (ROOT / "bench" / "slurm_reference" / "runs").glob("*/*/sacct.txt")
              if "." not in p.parent.name)  # not a run going on or failed


def schedd(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_import_then_simulate(tmp_path):
    trace = tmp_path / "t.swf"
    done = schedd("import", "slurm", str(DATA / "real" / "sacct_steps.txt"), "-o", str(trace),
                  "--nodes", "4", "--cpus-per-node", "4")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    said = done.stderr.splitlines()
    assert len(said) == 1 and said[0].startswith(
        "schedd import: 11 jobs of sacct_steps.txt; not imported: 12 job steps")
    assert said[0].endswith(f"written to {trace} (MaxNodes 4, MaxProcs 16)")
    header = read_trace(trace).header
    assert header.names["user"] == {1: "sref_ann", 2: "sref_ben", 3: "sref_cat", 4: "sref_dan"}
    sim = schedd("simulate", "--trace", str(trace), "--out", str(tmp_path / "out"),
                 "--no-progress", "--policy", "easy")
    assert sim.returncode == 0, sim.stderr
    assert "jobs              10 simulated" in sim.stdout  # job 11 ran 0 s: dropped, said
    assert "1 with runtime <= 0" in sim.stderr
    with open(tmp_path / "out" / "jobs.csv") as f:
        jobs = list(csv.DictReader(f))
    assert {r["id"] for r in jobs} == {"1", "2", "3", "4", "5", "6", "7", "9", "10", "12"}


def test_import_writes_gzip_and_reads_gzip(tmp_path):
    import gzip

    src = tmp_path / "acct.gz"
    src.write_bytes(gzip.compress((DATA / "pbs_torque.log").read_bytes()))
    done = schedd("import", "pbs", str(src), "-o", str(tmp_path / "t.swf.gz"), "--quiet")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert len(read_trace(tmp_path / "t.swf.gz")) == 8


@pytest.mark.parametrize("args, error", [
    (["slurm", "{data}/pbs_torque.log"], "schedd: error: {data}/pbs_torque.log:1: expected a "
     "header line of column names (sacct --parsable2 prints one unless --noheader), found "
     "'11/28/2026 14:00:00;Q;18.master.clust...'"),
    (["slurm", "{tmp}/nothing.txt"], "schedd: error: {tmp}/nothing.txt: no such file"),
    (["slurm", "{data}/sacct_subset.txt", "--tz", "Mars/Base"], "schedd: error: --tz: "
     "expected a time zone name such as UTC or Europe/Madrid (IANA tz database), found "
     "'Mars/Base'"),
])
def test_errors_are_one_sentence(tmp_path, args, error):
    filled = [a.format(data=DATA, tmp=tmp_path) for a in args]
    done = schedd("import", *filled, "-o", str(tmp_path / "t.swf"))
    assert done.returncode == 2
    assert done.stderr == error.format(data=DATA, tmp=tmp_path) + "\n"
    assert not (tmp_path / "t.swf").exists()


def test_max_time_option_and_its_errors(tmp_path):
    done = schedd("import", "slurm", str(DATA / "sacct_oddities.txt"), "-o",
                  str(tmp_path / "t.swf"), "--max-time", "debug=15m", "--max-time", "2:00:00")
    assert done.returncode == 0, done.stderr
    assert "with a time limit UNLIMITED (requested time = --max-time)" in done.stderr
    bad = schedd("import", "slurm", str(DATA / "sacct_oddities.txt"), "-o",
                 str(tmp_path / "t.swf"), "--max-time", "debug=soon")
    assert bad.returncode == 2 and "expected a time limit" in bad.stderr


def test_help_lists_the_formats():
    done = schedd("import", "--help")
    assert done.returncode == 0
    for word in ("slurm", "jobcomp", "pbs", "--tz", "--max-time", "--lenient", "docs/import.md"):
        assert word in done.stdout


@pytest.mark.skipif(not RUNS, reason="no bench/slurm_reference/runs/*/*/sacct.txt in this "
                    "checkout (bench/slurm_reference.py makes them)")
@pytest.mark.parametrize("path", RUNS, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_every_reference_run_imports_and_normalizes(path):
    done = import_log("slurm", str(path))
    assert len(done.trace) > 0 and done.counts.malformed == 0
    norm = normalize(done.trace)
    assert len(norm) + sum(norm.dropped.values()) == len(done.trace)
    names = done.trace.header.names
    assert names["user"] and names["account"] and names["state"]
