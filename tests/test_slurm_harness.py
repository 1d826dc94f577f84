"""The real-Slurm harness end to end (issue 33, part 6): a 14-job workload on a real
Slurm 22.05 of 4 nodes (bench/slurm_reference.py, bench/slurm_harness/tiny.*), then
`schedd import slurm` and `schedd simulate --slurm-conf` on what it wrote, as a user
runs them. About two minutes; skips, with its reason, where Slurm's packages, root or
MariaDB are missing (.ci/run installs the packages)."""

from __future__ import annotations

import csv
import datetime
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "bench" / "slurm_harness"
sys.path.insert(0, str(ROOT / "bench"))

import slurm_reference  # noqa: E402

MISSING = slurm_reference.check()
pytestmark = pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING))


def schedd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "schedd", *args], capture_output=True,
                          text=True, timeout=300)


def sacct_rows(run: Path) -> list[dict[str, str]]:
    with open(run / "sacct.txt", newline="") as f:
        return list(csv.DictReader(f, delimiter="|"))


def processes_of(root: Path) -> list[str]:
    """Processes whose command line or environment (SLURM_CONF) names `root`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            seen = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
        except OSError:
            continue
        if str(root).encode() in seen:
            found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()[:80]!r}")
    return found


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("slurm") / "run"
    # Jobs run as their own users: the daemons' directory must be reachable by them,
    # which pytest's private temporary directory is not.
    base = Path(tempfile.mkdtemp(prefix="schedd-slurm-test-"))
    base.chmod(0o755)
    workdir = base / "daemons"
    slurm_reference.reference_run(HARNESS / "tiny.tsv", HARNESS / "tiny.conf",
                                  HARNESS / "tiny-accounts.tsv", out, log=lambda _: None,
                                  workdir=workdir)
    # Every daemon it started, and every job's process, is gone with its directory.
    assert not workdir.exists()
    assert not processes_of(workdir), processes_of(workdir)
    base.rmdir()
    return out


def test_the_run_holds_every_file_and_every_job(run: Path) -> None:
    for name in ("sacct.txt", "slurm.conf", "assoc.txt", "sshare.txt", "jobmap.tsv",
                 "run.json"):
        assert (run / name).stat().st_size > 0, name
    workload = slurm_reference.read_workload(HARNESS / "tiny.tsv")
    rows = sacct_rows(run)
    assert len(rows) == len(workload)
    by_name = {r["JobName"]: r for r in rows}
    assert set(by_name) == {f"w{j.job}" for j in workload}
    for job in workload:
        row = by_name[f"w{job.job}"]
        assert row["User"] == job.user and row["Account"] == job.account
        if job.cancel_after is not None:
            assert row["State"].startswith("CANCELLED")
        else:
            assert row["State"] == "COMPLETED", row
            assert row["Flags"].split(",")[0] in ("SchedSubmit", "SchedMain",
                                                   "SchedBackfill")
        if job.after is not None:
            # afterok: it starts only once the job it depends on has ended
            assert row["Start"] >= by_name[f"w{job.after}"]["End"]
    accounts = {line.split("|")[1] for line in
                (run / "assoc.txt").read_text().splitlines()[1:]}
    assert {"a1", "a2"} <= accounts
    # When the controller started, to the millisecond, before the first submission.
    import json

    from schedd.slurm.importers import import_log
    started = json.loads((run / "run.json").read_text())["controller_started"]
    epoch = import_log("slurm", str(run / "sacct.txt")).trace.header.unix_start_time
    assert 0 < epoch + 1 - started < 120


END_LINE_LAG = 0.5  # s: how late the log's end line may come after sacct's End second


def test_the_timeline_has_slurms_own_instants(run: Path) -> None:
    # slurmctld's log, to the millisecond: every job's submission; every job that ran, its
    # start (by the scheduler sacct's Flags name) and its end, and (DebugFlags TraceJobs)
    # its nodes' release after the end; backfill cycles (DebugFlags Backfill).
    with open(run / "timeline.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    events: dict[tuple[str, str], float] = {}
    for r in rows:
        events.setdefault((r["event"], r["job"]), float(r["time"]))
    sacct = sacct_rows(run)
    assert all(("submit", r["JobIDRaw"]) in events for r in sacct)
    ran = [r for r in sacct if r["Start"] not in ("", "Unknown", "None")]
    assert ran
    for r in ran:
        job = r["JobIDRaw"]
        how = "start_backfill" if r["Flags"].startswith("SchedBackfill") else "start_main"
        assert (how, job) in events, (job, r["Flags"])
        if r["State"] == "COMPLETED":
            assert events[("submit", job)] <= events[(how, job)] < events[("end", job)]
            assert events[("end", job)] <= events[("release", job)], job
            # sacct's whole seconds are the log's instants, truncated: slurmctld takes the
            # end time, then writes the log line, which on a loaded machine can fall just
            # past the next second (CI, 2026-11-29 23:10: End ...517, the line at 518.0)
            end = datetime.datetime.fromisoformat(r["End"]).timestamp()
            assert end <= events[("end", job)] < end + 1 + END_LINE_LAG, job
    assert any(r["event"] == "backfill_cycle" for r in rows)
    assert "DebugFlags=TraceJobs,Backfill" in (run / "slurm.conf").read_text()


def test_import_and_simulate_the_run(run: Path, tmp_path: Path) -> None:
    trace = tmp_path / "run.swf"
    done = schedd("import", "slurm", str(run / "sacct.txt"), "-o", str(trace))
    assert done.returncode == 0, done.stderr
    rows = sacct_rows(run)
    assert f"schedd import: {len(rows)} jobs of sacct.txt" in done.stderr
    out = tmp_path / "sim"
    done = schedd("simulate", "--trace", str(trace), "--slurm-conf", str(run / "slurm.conf"),
                  "--slurm-assoc", str(run / "assoc.txt"), "--out", str(out),
                  "--no-progress")
    assert done.returncode == 0, done.stderr
    with open(out / "jobs.csv", newline="") as f:
        jobs = {int(r["id"]): r for r in csv.DictReader(f)}
    # Slurm's job ids are the trace's job numbers, and its names come through.
    assert set(jobs) == {int(r["JobIDRaw"]) for r in rows}
    for r in rows:
        assert jobs[int(r["JobIDRaw"])]["account"] == r["Account"]
    started = [j for j in jobs.values() if float(j["first_start"]) >= 0]
    assert len(started) >= len(rows) - 1  # the one cancelled before it could start


def test_a_directory_its_jobs_cannot_reach_is_refused(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(slurm_reference.HarnessError, match="cannot reach"):
        slurm_reference.reference_run(HARNESS / "tiny.tsv", HARNESS / "tiny.conf", None,
                                      tmp_path / "out", workdir=closed / "daemons")
    assert not (closed / "daemons").exists() and not (tmp_path / "out").exists()


def test_a_workload_with_a_missing_column_is_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "w.tsv"
    bad.write_text("job\tsubmit\n1\t0\n")
    with pytest.raises(slurm_reference.HarnessError, match="columns missing: account"):
        slurm_reference.read_workload(bad)
