"""Replay through the daemon: lockstep equals `schedd simulate` byte for byte; an
accelerated replay finishes and reports its divergence; real traces (Unix timestamps,
processor counts, another machine's size) replay or are refused with a sentence; jobs
never collide with the daemon's own; a daemon that does not advance is reported."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from daemon_proc import DaemonProc

from schedd.v1 import scheduler_pb2 as pb

UNIX_T0 = 1_693_547_500  # theta_2023's first submit time


def _write_trace(path: Path, jobs: list[tuple[int, float, float, int]], header: str) -> Path:
    """SWF lines (id, submit, runtime, processors; requested time = 2 x runtime)."""
    lines = [header] + [f"{i} {t:.0f} -1 {r:.0f} {p} -1 -1 {p} {2 * r:.0f} -1 1 1 1 -1 0 -1 "
                        "-1 -1" for i, t, r, p in jobs]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run_replay(d: DaemonProc, *args: str, timeout: float = 120
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd_clients.replay", "--server",
                           d.address, "--no-progress", "--lead", "1", *args],
                          capture_output=True, text=True,
                          timeout=timeout)


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
        _replay(d, None, tmp_path / "replay", "--lockstep", "--window", "37", "--force")
    # The run files too: segments (partitions, preemptions by failures) and time series.
    for name in ("jobs.swf", "segments.csv", "timeseries.csv"):
        assert (tmp_path / "replay" / name).read_bytes() == \
            (tmp_path / "sim" / name).read_bytes(), name


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


def test_unix_timestamp_trace_is_rebased_to_the_daemon_clock(tmp_path: Path) -> None:
    """A trace whose times are Unix timestamps starts now (not in 53 years); the plan line
    comes first; results are back on the trace's time axis."""
    jobs = [(i, UNIX_T0 + 600 * i, 300 + 10 * i, 1 + i % 8) for i in range(1, 31)]
    trace = _write_trace(tmp_path / "unix.swf", jobs, "; MaxNodes: 8\n; MaxProcs: 8")
    with DaemonProc("--clock", "accelerated", "--speedup", "20000", "--cluster", "nodes:8",
                    "--tick", "0.05") as d:
        proc = _run_replay(d, str(trace), "--out", str(tmp_path / "r"), "--from",
                           str(UNIX_T0 + 600 * 3), "--until", str(UNIX_T0 + 600 * 25))
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("replaying 22 jobs of unix.swf, a trace span of 3 h 30 min")
    assert "at 20000x: about 0.6 s of wall time" in first and "shift -1,693,5" in first
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["jobs"] == 22 and summary["replay"]["id_offset"] == 0
    assert summary["run"]["dropped"]["outside window"] == 8
    rows = [ln.split() for ln in (tmp_path / "r" / "jobs.swf").read_text().splitlines()
            if not ln.startswith(";")]
    assert [int(r[0]) for r in rows] == list(range(3, 25))
    # submit times as in the trace (late ones at most a few virtual seconds later)
    assert all(0 <= float(r[1]) - (UNIX_T0 + 600 * int(r[0])) < 2000 for r in rows)


def test_at_and_no_rebase_place_the_trace_on_the_daemon_clock(tmp_path: Path) -> None:
    jobs = [(i, 1000 + 100 * i, 50, 2) for i in range(1, 6)]
    trace = _write_trace(tmp_path / "t.swf", jobs, "; MaxNodes: 4")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:4", "--start-time",
                    "500") as d:
        kept = _run_replay(d, str(trace), "--out", str(tmp_path / "a"), "--lockstep",
                           "--no-rebase")
        at = _run_replay(d, str(trace), "--out", str(tmp_path / "b"), "--lockstep",
                         "--at", "1000000")
    assert kept.returncode == 0 and at.returncode == 0, kept.stderr + at.stderr
    a = json.loads((tmp_path / "a" / "summary.json").read_text())["replay"]
    b = json.loads((tmp_path / "b" / "summary.json").read_text())["replay"]
    assert a["shift_s"] == 0 and b["shift_s"] == 1_000_000 - 1100
    assert b["id_offset"] == 5  # the first replay holds ids 1-5
    assert (tmp_path / "a" / "jobs.swf").read_text() == (tmp_path / "b" / "jobs.swf").read_text()


def test_manual_submission_and_two_concurrent_replays_never_collide(tmp_path: Path) -> None:
    with DaemonProc("--clock", "accelerated", "--speedup", "50000", "--cluster", "nodes:256",
                    "--tick", "0.05") as d:
        manual = subprocess.run([sys.executable, "-m", "schedd_clients.schedctl", "--server",
                                 d.address, "submit", "--nodes", "4", "--walltime", "1:00:00"],
                                capture_output=True, text=True, timeout=60)
        assert manual.returncode == 0 and "submitted job 1 " in manual.stdout, manual.stderr
        results: dict[str, subprocess.CompletedProcess[str]] = {}

        def run(name: str) -> None:
            results[name] = _run_replay(d, "--out", str(tmp_path / name), "--limit", "150")

        threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
    for name in ("a", "b"):
        assert results[name].returncode == 0, results[name].stderr
    swf = {n: (tmp_path / n / "jobs.swf").read_text() for n in ("a", "b")}
    ids = {n: [int(ln.split()[0]) for ln in swf[n].splitlines() if not ln.startswith(";")]
           for n in swf}
    assert ids["a"] == ids["b"] == sorted(ids["a"]) and ids["a"][0] == 1 and len(ids["a"]) == 150
    offsets = [json.loads((tmp_path / n / "summary.json").read_text())["replay"]["id_offset"]
               for n in ("a", "b")]
    assert min(offsets) >= 1  # above the manual job 1, whichever replay went first


def test_another_machine_is_refused_unless_forced(tmp_path: Path) -> None:
    jobs = [(1, 0, 100, 16), (2, 10, 100, 300), (3, 20, 100, 64)]
    trace = _write_trace(tmp_path / "big.swf", jobs, "; MaxNodes: 512\n; MaxProcs: 512")
    with DaemonProc("--clock", "accelerated", "--speedup", "10000", "--cluster", "nodes:256",
                    "--tick", "0.05") as d:
        refused = _run_replay(d, str(trace), "--out", str(tmp_path / "no"))
        forced = _run_replay(d, str(trace), "--out", str(tmp_path / "yes"), "--force")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [
        "schedd-replay: the trace's machine has 512 nodes (header MaxNodes/MaxProcs) but the "
        "daemon's nodes:256 has 256; start the daemon with --cluster nodes:512, or replay "
        "anyway with --force (larger jobs are dropped)"]
    assert not (tmp_path / "no").exists()
    assert forced.returncode == 0, forced.stderr
    assert "1 of 3 jobs of big.swf not simulated: 1 larger than the machine (256 nodes)" \
        in forced.stderr
    summary = json.loads((tmp_path / "yes" / "summary.json").read_text())
    assert summary["jobs"] == 2 and summary["run"]["dropped"]["nodes>max"] == 1


def test_processor_header_sets_procs_per_node_and_says_so(tmp_path: Path) -> None:
    """MaxNodes 4, MaxProcs 64 (fields 5/8 count processors): 16 per node by default."""
    jobs = [(1, 0, 100, 64), (2, 10, 100, 17), (3, 20, 100, 16)]
    trace = _write_trace(tmp_path / "pwa.swf", jobs, "; MaxNodes: 4\n; MaxProcs: 64")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:4") as d:
        proc = _run_replay(d, str(trace), "--out", str(tmp_path / "r"), "--lockstep")
    assert proc.returncode == 0, proc.stderr
    assert "reading its processor counts at 16 per node (--procs-per-node 16" in proc.stderr
    rows = [ln.split() for ln in (tmp_path / "r" / "jobs.swf").read_text().splitlines()
            if not ln.startswith(";")]
    assert [int(r[4]) for r in rows] == [4, 2, 1]  # nodes held: ceil(procs / 16)


def _stderr_until(proc: subprocess.Popen[str], needle: str, limit: float) -> tuple[str, float]:
    """stderr lines until one contains needle (or limit seconds), and when it came."""
    assert proc.stderr is not None
    start, seen = time.monotonic(), []
    os.set_blocking(proc.stderr.fileno(), False)
    while time.monotonic() - start < limit:
        line = proc.stderr.readline()
        if line:
            seen.append(line)
            if needle in line:
                return "".join(seen), time.monotonic() - start
        else:
            time.sleep(0.05)
    return "".join(seen), math_inf()


def math_inf() -> float:
    return float("inf")


@pytest.mark.parametrize("case", ["paused", "idle", "killed"])
def test_a_daemon_that_does_not_advance_is_reported_within_seconds(tmp_path: Path,
                                                                   case: str) -> None:
    # idle: the second job is due 10 virtual days later, at 100x that is 2.4 wall hours.
    jobs = [(1, 0, 30, 1), (2, 864000, 30, 1)]
    trace = _write_trace(tmp_path / "gap.swf", jobs, "; MaxNodes: 4")
    with DaemonProc("--clock", "accelerated", "--speedup", "100", "--cluster", "nodes:4",
                    "--tick", "0.05") as d:
        if case == "paused":
            subprocess.run([sys.executable, "-m", "schedd_clients.schedctl", "--server",
                            d.address, "clock", "pause"], check=True, capture_output=True,
                           timeout=60)
        proc = subprocess.Popen([sys.executable, "-m", "schedd_clients.replay", str(trace),
                                 "--server", d.address, "--out", str(tmp_path / "r"),
                                 "--stall-after", "2", "--status-every", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            needle = {"paused": "the daemon's clock is paused",
                      "idle": "nothing to send until t=",
                      "killed": "does not answer (UNAVAILABLE); retrying for up to 120 s"}[case]
            if case == "killed":  # the daemon dies under the replay (engine failures too)
                _stderr_until(proc, "nothing to send until t=", 30)
                d.kill()
            text, when = _stderr_until(proc, needle, 30)
            if case == "idle":  # then the status line: virtual time, counts, ETA
                more, _ = _stderr_until(proc, "ETA", 10)
                text += more
        finally:
            proc.kill()
            proc.wait(10)
    assert when < 15, text
    if case == "idle":
        assert "of wall time at 100x" in text
        assert re.search(r"t=[\d,]+, submitted 1/2, started [01], finished 0, lag \d+ s, "
                         r"ETA 2 h 2\d min", text), text


def test_unwritable_out_is_one_sentence_before_anything_is_sent() -> None:
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:256") as d:
        proc = _run_replay(d, "--lockstep", "-o", "/proc/x")
        assert d.stub().GetCluster(pb.GetClusterRequest(), timeout=10).next_job_id == 1
    assert proc.returncode == 1
    assert proc.stderr == ("schedd-replay: cannot write to the output directory /proc/x (No "
                           "such file or directory)\n")


def test_schedctl_results_downloads_what_simulate_writes(tmp_path: Path) -> None:
    """`schedctl results` gives the run files of the daemon's run: equal to the replay's
    (which equal simulate's), and `schedd report` draws them."""
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:256", "--policy", "easy") as d:
        _replay(d, None, tmp_path / "replay", "--lockstep", "--limit", "150")
        done = subprocess.run([sys.executable, "-m", "schedd_clients.schedctl", "--server",
                               d.address, "results", "-o", str(tmp_path / "dl")],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "150 finished jobs" in done.stdout
    for name in ("segments.csv", "timeseries.csv"):
        assert (tmp_path / "dl" / name).read_text().replace("daemon:nodes:256", "x") == \
            (tmp_path / "replay" / name).read_text().replace(
                "sample-lublin256-1000.swf", "x"), name
    report = subprocess.run([sys.executable, "-m", "schedd", "report", str(tmp_path / "dl"),
                             "-o", str(tmp_path / "rep")], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "rep" / "gantt_0.png").is_file()


def test_run_record_moves_to_the_store_and_survives_kill_9(tmp_path: Path) -> None:
    """With 40 rows per table kept in memory and a snapshot every 60 stimuli, the run
    record of 300 jobs lives mostly in the journal's store: schedctl results still gives
    simulate's segments.csv and timeseries.csv, before and after a kill -9 and restart."""
    _simulate(None, "nodes:256", tmp_path / "sim", "--limit", "300")
    journal = str(tmp_path / "journal.sqlite")
    env = {"SCHEDD_RECORD_IN_MEMORY": "40", "SCHEDD_SNAPSHOT_EVERY": "60"}
    args = ("--clock", "lockstep", "--cluster", "nodes:256", "--policy", "easy",
            "--state-db", journal)

    def download(d: DaemonProc, out: Path) -> None:
        done = subprocess.run([sys.executable, "-m", "schedd_clients.schedctl", "--server",
                               d.address, "results", "-o", str(out)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr + d.log()[-2000:]
        for name in ("segments.csv", "timeseries.csv"):
            assert (out / name).read_text().replace("daemon:nodes:256", "x") == \
                (tmp_path / "sim" / name).read_text().replace(
                    "sample-lublin256-1000.swf", "x"), name

    with DaemonProc(*args, env=env) as d:
        _replay(d, None, tmp_path / "replay", "--lockstep", "--limit", "300")
        download(d, tmp_path / "before")
        d.kill()
    with DaemonProc(*args, env=env) as d:
        download(d, tmp_path / "after")
    with sqlite3.connect(journal) as db:
        stored = dict(db.execute("SELECT tbl, COUNT(*) FROM run_record GROUP BY tbl"))
    assert stored["segments"] >= 260 and stored["waits"] >= 260  # most rows left memory
