"""A saved agent in `schedd compare` and `schedd sweep`, run as a user runs them (issue
36): their schedules are those `schedd simulate --policy agent --opt model=FILE` makes,
job for job, and a model saved again at the same path is simulated again, not read back
from the cache under the old model's results."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from schedd.cli import main as schedd_main
from schedd.policies.scoring import Model, linear, save_model

SAMPLE = Path(__file__).resolve().parents[1] / "schedd" / "data" / "sample-lublin256-1000.swf"
CLUSTER = "nodes:256"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    """The first 300 jobs of the bundled excerpt (a queue long enough for choices to
    differ between models)."""
    lines = SAMPLE.read_text().splitlines()
    head = [ln for ln in lines if ln.startswith(";")]
    jobs = [ln for ln in lines if ln.strip() and not ln.startswith(";")][:300]
    path = tmp_path_factory.mktemp("trace") / "lublin300.swf"
    path.write_text("\n".join(head + jobs) + "\n")
    return path


def simulated(trace: Path, model: Path, out: Path) -> tuple[dict[int, float], dict]:
    """`schedd simulate --policy agent --opt model=MODEL`: each job's wait, and the
    summary."""
    assert schedd_main(["simulate", "--trace", str(trace), "--cluster", CLUSTER,
                        "--policy", "agent", "--opt", f"model={model}", "--out", str(out),
                        "--no-progress", "--quiet"]) in (0, None)
    rows = [line.split() for line in (out / "jobs.swf").read_text().splitlines()
            if line.strip() and not line.startswith(";")]
    return ({int(r[0]): float(r[2]) for r in rows},
            json.loads((out / "summary.json").read_text()))


def cached_waits(cache: Path) -> list[dict[int, float]]:
    """Each cached simulation's waits by job id."""
    out = []
    for npz in sorted(cache.glob("*/*/results.npz")):
        with np.load(npz) as r:
            out.append({int(i): float(w) for i, w in zip(r["id"], r["wait"], strict=True)})
    return out


def two_models(tmp_path: Path) -> tuple[Path, Model, Model]:
    """A model file and two models that schedule the trace differently."""
    return (tmp_path / "model.json", Model("heuristic", name="sjf"),
            linear([0.4, -0.2, 1.0, -1.5, -0.6, 0.2]))


def compare(trace: Path, model: Path, cwd: Path, workers: int) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace", str(trace),
                           "--cluster", CLUSTER, "--percent", "0", "--trials", "1",
                           "--run", "easy", "--run", f"agent model={model}",
                           "--workers", str(workers), "--json", "figures.json"],
                          capture_output=True, text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_compare_runs_a_saved_agent_as_simulate_does_and_sees_it_saved_again(
        trace, tmp_path):
    """`schedd compare --run 'agent model=FILE'` (two worker processes) gives simulate's
    schedule and figures for that agent; the model saved again at the same path, the same
    comparison (which keeps its simulations in out/compare-TRACE-HASH/cache and reuses
    them) simulates the agent again and gives the new model's schedule."""
    path, first, second = two_models(tmp_path)
    seen = []
    for model, workers in ((first, 2), (second, 1)):
        save_model(path, model)
        proc = compare(trace, path, tmp_path, workers)
        waits, summary = simulated(trace, path, tmp_path / f"sim-{len(seen)}")
        (kept,) = (tmp_path / "out").iterdir()  # the same comparison: the same folder
        assert waits in cached_waits(kept / "cache"), f"model {len(seen)}"
        rows = json.loads((tmp_path / "figures.json").read_text())["results"]["0"]
        ours = rows[f"agent model={path}"]["stats"]["by_class"]["batch"]
        assert ours["bounded_slowdown_600"] == summary["stats"]["by_class"]["batch"][
            "bounded_slowdown_600"]
        seen.append((waits, proc.stderr))
    assert seen[0][0] != seen[1][0], "the two models must schedule differently"
    # easy is read back from the cache; the agent, saved again, is simulated again
    assert "2 simulations, 1 cached, 1 to run" in seen[1][1]


def test_sweep_runs_a_saved_agent_as_simulate_does_and_sees_it_saved_again(trace, tmp_path):
    """`schedd sweep --run 'agent model=FILE'` gives simulate's mean bounded slowdown and
    wait for that agent; saved again at the same path, the same sweep (same -o, so the
    same cache) simulates it again."""
    path, first, second = two_models(tmp_path)
    out = tmp_path / "sweep"
    got = []
    for i, model in enumerate((first, second)):
        save_model(path, model)
        assert schedd_main(["sweep", "--trace", str(trace), "--cluster", CLUSTER, "--run",
                            f"agent model={path}", "-o", str(out), "--workers", "0",
                            "--no-progress"]) == 0
        (row,) = list(csv.DictReader((out / "results.csv").open()))
        assert row["status"] == "ok"
        waits, summary = simulated(trace, path, tmp_path / f"sim-{i}")
        for key in ("mean_bounded_slowdown", "mean_wait_s", "utilization"):
            assert float(row[key]) == pytest.approx(summary[key], rel=1e-12), (i, key)
        assert waits in cached_waits(out / "cache"), f"model {i}"
        got.append(waits)
    assert got[0] != got[1], "the two models must schedule differently"
    assert len(cached_waits(out / "cache")) == 2


def test_cell_keys_follow_the_content_of_files_options_name(trace, tmp_path):
    """The key covers a named file's bytes, not its path; a value that names no file (a
    heuristic's name) adds nothing."""
    from schedd.sweep.cells import SweepSpec, expand, named_files

    path = tmp_path / "m.json"
    save_model(path, Model("heuristic", name="sjf"))
    spec = SweepSpec(traces=[str(trace)], runs=[f"agent model={path}", "agent model=f1"],
                     options={"window": ["16"]})
    a = expand(spec)
    assert [len(c.files) for c in a] == [1, 0]
    assert [c.key for c in expand(spec)] == [c.key for c in a]  # stable
    save_model(path, Model("heuristic", name="f1"))
    b = expand(spec)
    assert b[0].key != a[0].key and b[1].key == a[1].key
    axis = SweepSpec(traces=[str(trace)], runs=["agent"], options={"model": [str(path)]})
    assert expand(axis)[0].files == named_files("agent", (("model", str(path)),))
    assert named_files("agent model=fcfs --mtbf 0") == ()


def test_a_model_path_with_a_space_runs_in_sweep_and_compare(trace, tmp_path):
    """A run spec quotes a path with a space (`agent 'model=/my models/m.json'`); the
    label that workers and caches get keeps the quotes, so sweep and compare run that
    model, as simulate does."""
    import shlex

    from schedd.sweep.runspec import parse_run

    folder = tmp_path / "my models"
    folder.mkdir()
    path = folder / "model.json"
    save_model(path, linear([0.4, -0.2, 1.0, -1.5, -0.6, 0.2]))
    run = "agent " + shlex.quote(f"model={path}")
    spec = parse_run(run)
    assert spec.options == (f"model={path}",)
    assert parse_run(spec.label) == spec
    _, summary = simulated(trace, path, tmp_path / "sim")
    out = tmp_path / "sweep"
    assert schedd_main(["sweep", "--trace", str(trace), "--cluster", CLUSTER, "--run", run,
                        "-o", str(out), "--workers", "0", "--no-progress"]) == 0
    (row,) = list(csv.DictReader((out / "results.csv").open()))
    assert row["status"] == "ok", row
    assert float(row["mean_bounded_slowdown"]) == pytest.approx(
        summary["mean_bounded_slowdown"], rel=1e-12)
    proc = subprocess.run([sys.executable, "-m", "schedd", "compare", "--trace", str(trace),
                           "--cluster", CLUSTER, "--percent", "0", "--trials", "1",
                           "--run", run, "--workers", "1", "--json", "figures.json"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((tmp_path / "figures.json").read_text())["results"]["0"]
    assert rows[spec.label]["stats"]["by_class"]["batch"]["bounded_slowdown_600"] == \
        summary["stats"]["by_class"]["batch"]["bounded_slowdown_600"]
