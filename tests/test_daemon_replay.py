"""Replay through the daemon: lockstep equals `schedd simulate` byte for byte; an
accelerated replay finishes and reports its divergence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_proc import DaemonProc


def _simulate(trace: str | None, cluster: str, out: Path, *extra: str) -> None:
    cmd = [sys.executable, "-m", "schedd", "simulate", "--cluster", cluster, "--out", str(out),
           "--no-progress", *extra]
    if trace:
        cmd += ["--trace", trace]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)


def _replay(d: DaemonProc, trace: str | None, out: Path, *extra: str) -> dict:
    cmd = [sys.executable, "-m", "schedd_clients.replay", "--out", str(out), "--server",
           d.address, "--no-progress", *extra]
    if trace:
        cmd.insert(3, trace)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr + d.log()[-3000:]
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_lockstep_replay_of_theta_equals_simulate(shared_traces: Path, tmp_path: Path) -> None:
    trace = str(shared_traces / "theta_2023.swf")
    _simulate(trace, "nodes:4360", tmp_path / "sim")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:4360", "--policy", "easy") as d:
        summary = _replay(d, trace, tmp_path / "replay", "--lockstep")
    sim = (tmp_path / "sim" / "jobs.swf").read_bytes()
    assert (tmp_path / "replay" / "jobs.swf").read_bytes() == sim
    assert summary["replay"]["mode"] == "lockstep"
    assert summary["replay"]["late_submissions"] == 0
    sim_summary = json.loads((tmp_path / "sim" / "summary.json").read_text())
    assert summary["stats"] == sim_summary["stats"]


def test_lockstep_replay_with_checkpoints_and_failures_equals_simulate(tmp_path: Path) -> None:
    """Same seed, SYS checkpoints and node failures: the engine's RNG draws match too."""
    opts = ("--ckpt", "sys", "--ckpt-interval", "1800", "--mtbf", "20", "--seed", "7")
    _simulate(None, "bgq:4", tmp_path / "sim", "--policy", "easy-sjf", *opts)
    with DaemonProc("--clock", "lockstep", "--cluster", "bgq:4", "--policy", "easy-sjf",
                    *opts) as d:
        _replay(d, None, tmp_path / "replay", "--lockstep", "--window", "37")
    assert (tmp_path / "replay" / "jobs.swf").read_bytes() == \
        (tmp_path / "sim" / "jobs.swf").read_bytes()


def test_lockstep_replay_with_plan_sa_equals_simulate(tmp_path: Path) -> None:
    """An anytime policy whose searches all finish inside the budget decides as simulate
    does: same seed, same evaluation count, same jobs.swf."""
    opts = ("--policy", "plan-sa", "--opt", "metric=wait2", "--opt", "evals=80",
            "--opt", "seed=4")
    _simulate(None, "nodes:256", tmp_path / "sim", *opts)
    # The first plan-sa in a fresh checkout compiles its kernel: allow for it.
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:256", "--budget", "30", *opts,
                    timeout=90) as d:
        _replay(d, None, tmp_path / "replay", "--lockstep")
    assert (tmp_path / "replay" / "jobs.swf").read_bytes() == \
        (tmp_path / "sim" / "jobs.swf").read_bytes()


def test_accelerated_replay_finishes_and_reports_divergence(tmp_path: Path) -> None:
    with DaemonProc("--clock", "accelerated", "--speedup", "50000", "--cluster", "nodes:256",
                    "--tick", "0.05") as d:
        summary = _replay(d, None, tmp_path / "replay", "--limit", "200")
    replay = summary["replay"]
    assert replay["mode"] == "accelerated" and replay["jobs"] == 200
    div = replay["divergence"]
    assert div["jobs"] == 200
    assert 0.0 <= div["identical_start_frac"] <= 1.0
    assert div["mean_wait_simulate_s"] >= 0 and div["mean_abs_wait_diff_s"] >= 0
    lines = [x for x in (tmp_path / "replay" / "jobs.swf").read_text().splitlines()
             if not x.startswith(";")]
    assert len(lines) == 200
