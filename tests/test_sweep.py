"""`schedd sweep`: cells and their keys, the cache, a real Dask LocalCluster with two
workers, resuming after an interruption, and failures reported with their inputs."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schedd.cli import main as schedd_main
from schedd.sweep.cell_run import load_cached, load_results, run_cell
from schedd.sweep.cells import SweepError, SweepSpec, expand
from schedd.sweep.execute import run_cells
from schedd.sweep.spec import spec_from_toml

SAMPLE = Path(__file__).resolve().parents[1] / "schedd" / "data" / "sample-lublin256-1000.swf"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    """The first 120 jobs of the bundled excerpt: a few hundred ms per cell."""
    path = tmp_path_factory.mktemp("trace") / "small.swf"
    lines = SAMPLE.read_text().splitlines()
    header = [ln for ln in lines if ln.startswith(";")]
    jobs = [ln for ln in lines if ln.strip() and not ln.startswith(";")][:120]
    path.write_text("\n".join(header + jobs) + "\n")
    return str(path)


def spec(trace: str, **kw) -> SweepSpec:
    return SweepSpec(traces=[trace], runs=kw.pop("runs", ["easy", "fcfs"]),
                     seeds=kw.pop("seeds", [0, 1]), **kw)


def test_cells_cross_every_axis_with_stable_keys(trace):
    s = spec(trace, engine={"mtbf": ["0", "100"]},
             workloads=[{}, {"kind": "accuracy", "alpha": 0.5}])
    cells = expand(s)
    assert len(cells) == 2 * 2 * 2 * 2
    assert len({c.key for c in cells}) == len(cells)
    assert [c.key for c in expand(s)] == [c.key for c in cells]  # same inputs, same keys
    # The key follows the trace's bytes, not its path.
    copy = Path(trace).with_name("copy.swf")
    copy.write_bytes(Path(trace).read_bytes())
    assert [c.key for c in expand(spec(str(copy), engine={"mtbf": ["0", "100"]},
                                       workloads=[{}, {"kind": "accuracy", "alpha": 0.5}]))] \
        == [c.key for c in cells]
    copy.write_bytes(Path(trace).read_bytes() + b"\n")
    assert expand(spec(str(copy)))[0].key != expand(spec(trace))[0].key


def test_a_cell_is_cached_whole_and_reused(trace, tmp_path):
    cell = expand(spec(trace, runs=["easy"], seeds=[0]))[0]
    row = run_cell(cell, str(tmp_path))
    assert row["status"] == "ok" and row["in_run"] == "easy" and row["jobs"] == 120
    assert load_cached(tmp_path, cell.key) == row
    assert len(load_results(tmp_path, cell.key)["id"]) == 120
    # A second call reads the cache: the result file is not rewritten.
    cached = next(tmp_path.rglob("row.json"))
    before = cached.stat().st_mtime_ns
    assert run_cell(cell, str(tmp_path)) == row
    assert cached.stat().st_mtime_ns == before


def test_a_bad_cell_is_reported_with_its_inputs_not_cached(trace, tmp_path):
    cells = expand(spec(trace, runs=["easy", "los"], seeds=[0], options={"c_s": ["2"]}))
    rows = run_cells(cells, str(tmp_path), workers=0, progress=False)
    by_run = {r["in_run"]: r for r in rows}
    assert by_run["easy"]["status"] == "error" and "c_s" in by_run["easy"]["error"]
    assert by_run["easy"]["in_opt_c_s"] == "2"
    assert load_cached(tmp_path, cells[0].key) is None


def test_local_dask_cluster_gives_the_in_process_table(trace, tmp_path):
    s = spec(trace, engine={"mtbf": ["0", "50"]})
    local = run_cells(expand(s), str(tmp_path / "a"), workers=0, progress=False)
    dask = run_cells(expand(s), str(tmp_path / "b"), workers=2, progress=False)
    assert [r["key"] for r in dask] == [r["key"] for r in local]
    assert dask == local


def test_toml_file_and_cli_tables(trace, tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'traces = ["{trace}"]\nruns = ["easy", "conservative"]\nseeds = [0, 1]\n'
                     '[engine]\nmtbf = [0, 80]\n[[workloads]]\n[[workloads]]\nkind = "accuracy"\n'
                     'alpha = 0\n')
    s = spec_from_toml(str(sweep))
    assert len(expand(s)) == 16
    out = tmp_path / "out"
    assert schedd_main(["sweep", str(sweep), "-o", str(out), "--workers", "0",
                        "--no-progress"]) == 0
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == 16 and {r["status"] for r in rows} == {"ok"}
    assert {r["in_wl_alpha"] for r in rows} == {"", "0"}
    table = pq.read_table(out / "results.parquet")
    assert table.num_rows == 16
    assert table.column("mean_wait_s").to_pylist() == [float(r["mean_wait_s"]) for r in rows]
    report = tmp_path / "rep"
    assert schedd_main(["report", "--sweep", str(out / "results.csv"), "-o", str(report)]) == 0
    assert any(report.glob("sweep_mean_wait_s_by_*.png"))


def test_bad_sweep_files_are_one_sentence(tmp_path, capsys, trace):
    bad = tmp_path / "bad.toml"
    bad.write_text('traces = ["x.swf"]\nrunz = ["easy"]\n')
    with pytest.raises(SweepError, match="unknown key 'runz'"):
        spec_from_toml(str(bad))
    assert schedd_main(["sweep", "--trace", trace, "--run", "nosuch", "-o",
                        str(tmp_path / "o")]) == 2
    assert "unknown policy 'nosuch'" in capsys.readouterr().err
    with pytest.raises(SweepError, match="workload kind"):
        expand(spec(trace, workloads=[{"kind": "magic"}]))


def cached_rows(out: Path) -> list[Path]:
    """The cells' rows in the cache, not those still in a cell's temporary directory
    (`.KEY.*`, renamed into place once whole): a kill between its row and the rename
    leaves one there, which a resumed sweep rightly runs again."""
    return [p for p in out.rglob("row.json") if not p.parent.name.startswith(".")]


def test_resume_after_interruption_runs_only_the_rest(trace, tmp_path):
    out = tmp_path / "out"
    args = [sys.executable, "-m", "schedd", "sweep", "--trace", trace, "--run", "easy",
            "--run", "conservative", "--seeds", "0,1,2,3,4,5", "--engine", "mtbf=0,60",
            "-o", str(out), "--workers", "0", "--no-progress"]
    # One code version for every run of the test (edits elsewhere must not move the keys).
    env = {**os.environ, "SCHEDD_SWEEP_CODE_VERSION": "test-resume"}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(cached_rows(out)) < 3:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(cached_rows(out))
    assert 3 <= done_before < 24
    resumed = subprocess.run(args, capture_output=True, text=True, check=True, env=env)
    assert f"24 cells, {done_before} cached, {24 - done_before} to run" in resumed.stderr
    fresh = tmp_path / "fresh"
    subprocess.run(args[:-4] + [str(fresh), "--workers", "0", "--no-progress"], check=True,
                   capture_output=True, env=env)
    assert (out / "results.csv").read_bytes() == (fresh / "results.csv").read_bytes()
    # Extending the sweep runs only the new cells.
    more = subprocess.run([*args, "--seeds", "0,1,2,3,4,5,6"], capture_output=True, text=True,
                          check=True, env=env)
    assert "28 cells, 24 cached, 4 to run" in more.stderr
