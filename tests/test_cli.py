"""End-to-end: run the `schedd` CLI as a user would, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

REQUIRED_KEYS = ["jobs", "mean_wait_s", "mean_response_s", "mean_slowdown",
                 "mean_bounded_slowdown", "utilization", "productive_utilization", "makespan_s"]


def schedd(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"schedd {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def test_simulate_bundled_sample_writes_outputs(tmp_path):
    out = tmp_path / "run"
    proc = schedd("simulate", "--policy", "easy", "--out", str(out))
    assert "mean_wait_s" in proc.stdout and "utilization" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    for key in REQUIRED_KEYS:
        assert key in summary
    assert summary["jobs"] == 1000 and summary["run"]["cluster"] == "nodes:256"
    lines = [ln for ln in (out / "jobs.swf").read_text().splitlines() if not ln.startswith(";")]
    assert len(lines) == 1000 and all(len(ln.split()) == 18 for ln in lines)
    csv_lines = (out / "jobs.csv").read_text().splitlines()
    assert len(csv_lines) == 1001 and csv_lines[0].startswith("id,submit,first_start")


def test_same_inputs_give_byte_identical_outputs(tmp_path, shared_traces):
    args = ["simulate", "--trace", str(shared_traces / "mira_2018_wk1_cobalt2swf.swf"),
            "--cluster", "mira", "--policy", "easy-sjf", "--seed", "3", "--mtbf", "50",
            "--ckpt", "sys"]
    schedd(*args, "--out", str(tmp_path / "a"))
    schedd(*args, "--out", str(tmp_path / "b"))
    for name in ("jobs.swf", "jobs.csv", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["failures"] > 0  # 50 h MTBF over weeks of trace: failures happened


def test_bad_trace_line_names_file_and_line(tmp_path):
    trace = tmp_path / "bad.swf"
    trace.write_text("; MaxNodes: 8\n1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 0 -1 -1 -1\n"
                     "2 5 -1 10 x -1 -1 2 20 -1 1 1 1 -1 0 -1 -1 -1\n")
    proc = schedd("simulate", "--trace", str(trace), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert f"{trace}:3:" in proc.stderr and "Traceback" not in proc.stderr
    lenient = schedd("simulate", "--trace", str(trace), "--lenient", "--out", str(tmp_path / "o"))
    assert "skipped 1 malformed line" in lenient.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["jobs"] == 1


@pytest.mark.parametrize("args, message", [
    (["--policy", "nope"],
     "unknown policy 'nope'; valid policies: ckpt-backfill, conservative, delayed-los"),
    (["--policy", "easy", "--opt", "depth=3"], "policy easy has no option 'depth'"),
    (["--cluster", "torus:9"], "nodes:N"),
    (["--trace", "/nonexistent.swf"], "/nonexistent.swf"),
    (["--mttr", "0"], "argument --mttr: expected a number > 0, got 0"),
    (["--procs-per-node", "0"], "argument --procs-per-node: expected a number >= 1, got 0"),
])
def test_user_errors_are_one_sentence(tmp_path, args, message):
    proc = schedd("simulate", *args, "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_policies_lists_every_policy():
    out = schedd("policies").stdout
    for name in ("fcfs", "easy", "easy-bestfit", "easy-sjf", "conservative"):
        assert name in out


def test_validate_mode_on_blue_gene_with_preemption_free_policy(tmp_path, shared_traces):
    proc = schedd("simulate", "--trace", str(shared_traces / "mira_2014-12_wk1_cobalt2swf.swf"),
                  "--cluster", "mira-blocks", "--policy", "easy", "--validate",
                  "--out", str(tmp_path / "o"))
    assert "utilization" in proc.stdout


def test_duplicate_job_id_names_the_line(tmp_path):
    trace = tmp_path / "dup.swf"
    line = "1 {} -1 10 2 -1 -1 2 20 -1 1 1 1 -1 0 -1 -1 -1\n"
    trace.write_text("; MaxNodes: 8\n" + line.format(0) + line.format(5))
    proc = schedd("simulate", "--trace", str(trace), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert f"{trace}:3: expected a new job id, found job 1 submitted a second time" in proc.stderr
    lenient = schedd("simulate", "--trace", str(trace), "--lenient", "--out", str(tmp_path / "o"))
    assert "skipped 1 repeated job id" in lenient.stderr


@pytest.mark.parametrize("policy", ["easy", "conservative", "fcfs"])
def test_policies_survive_failures_with_validation(tmp_path, policy):
    """Failures take nodes down; a job wider than what is up must wait, not break a plan."""
    trace = tmp_path / "wide.swf"
    trace.write_text("; MaxNodes: 4\n" + "".join(
        f"{i} {i * 50} -1 {500 + 37 * i} 4 -1 -1 4 2000 -1 1 1 1 -1 0 -1 -1 -1\n"
        for i in range(1, 40)))
    proc = schedd("simulate", "--trace", str(trace), "--policy", policy, "--mtbf", "0.2",
                  "--mttr", "0.5", "--ckpt", "sys", "--ckpt-interval", "200", "--validate",
                  "--seed", "5", "--out", str(tmp_path / "o"))
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["jobs"] == 39 and summary["failures"] > 0, proc.stdout


def test_daly_mtbf_and_restart_read_flags_reach_the_engine_options():
    """--daly-mtbf sets Daly's MTBF apart from failures (which it defaults to, 5 h without);
    --no-restart-read drops the checkpoint read at resume."""
    from schedd.cli import build_parser
    from schedd.options import engine_options_from

    def options(*flags: str):
        args = build_parser().parse_args(["simulate", "--out", "x", *flags])
        return engine_options_from(args)

    assert options().checkpoint.daly_mtbf == 5 * 3600 and options().checkpoint.restart_read
    failing = options("--mtbf", "20")
    assert failing.checkpoint.daly_mtbf == 20 * 3600 and failing.mtbf_s == 20 * 3600
    both = options("--mtbf", "20", "--daly-mtbf", "50", "--no-restart-read")
    assert both.checkpoint.daly_mtbf == 50 * 3600 and both.mtbf_s == 20 * 3600
    assert not both.checkpoint.restart_read
    assert schedd("simulate", "--out", "x", "--daly-mtbf", "0", check=False).returncode == 2
