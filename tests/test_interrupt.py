"""What people meet when they interrupt (issue 35, item 6): the real command line in a
process group of its own, interrupted as a terminal does it (SIGINT to the whole group,
so the sweep's Dask workers get it too) once it is really working: one line on stderr,
exit status 130, no traceback, no partial output that looks whole, nothing of what was
there before changed, and no process of the group left behind."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from schedd.sweep import orphans

# A deep queue (Lublin at load 1.3), EASY under a second. Simulations are interrupted in
# the middle of a test policy that computes 5 ms a pass (tests/plugins/slow_policies.py),
# slow whatever the real policies' speed (conservative took minutes here, until it kept
# its plan between passes: 2 s); sweeps and comparisons, which load no plugin, in the
# middle of plan-sa, which anneals whole schedules every pass.
SLOW = ("--plugin", str(Path(__file__).parent / "plugins" / "slow_policies.py"),
        "--policy", "spin", "--opt", "seconds=0.005")
JOBS = "20000"


@pytest.fixture(scope="module")
def deep_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "deep.cwf"
    subprocess.run([sys.executable, "-m", "schedd", "workload", "lublin", "--jobs", JOBS,
                    "--load", "1.3", "--seed", "1", "-o", str(path)], check=True,
                   capture_output=True, timeout=120)
    return path


def start(*argv: str, cwd: Path) -> subprocess.Popen[str]:
    """`schedd ARGV` as a terminal starts it: the leader of a process group."""
    return subprocess.Popen([sys.executable, "-m", "schedd", *argv], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def wait_for(what: str, ready: Callable[[], bool], proc: subprocess.Popen[str],
             timeout: float = 90.0) -> None:
    """Until `ready()` (polled), failing if the command ended first or took too long."""
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ended ({proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            stop(proc)
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.05)


def stop(proc: subprocess.Popen[str]) -> None:
    """Clean-up of a test that failed: the whole group, at once."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def group(pgid: int) -> list[str]:
    """The processes still in the process group `pgid` (their command lines)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def interrupt(proc: subprocess.Popen[str], sig: int = signal.SIGINT, times: int = 1,
              ) -> tuple[int, str, str]:
    """Send `sig` to the command's group (Ctrl-C on a terminal), `times` times; its exit
    status, stdout and stderr once it has ended, and no process of its group may stay."""
    for n in range(times):
        if n:
            time.sleep(0.2)  # a user pressing Ctrl-C again while the first is handled
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        stop(proc)
        pytest.fail("the command did not end within 60 s of the interrupt")
    deadline = time.monotonic() + 15
    while group(proc.pid) and time.monotonic() < deadline:  # children end after it
        time.sleep(0.05)
    assert group(proc.pid) == [], "processes left behind"
    return proc.returncode, out, err


def tree(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if name in skip:
            continue
        found[name] = (hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file()
                       else "folder")
    return found


def partial(folder: Path) -> Callable[[], bool]:
    """The command's hidden working folder has appeared in `folder` (outputs.staged_dir
    makes it after the trace is read and the policy made: the simulation is under way)."""
    return lambda: any(p.name.startswith(".partial-") for p in folder.iterdir())


def one_line(err: str, line: str) -> None:
    assert "Traceback" not in err and "Error" not in err, err
    assert err.splitlines() == [line], err


def test_ctrl_c_in_simulate_says_one_line_and_leaves_no_folder(tmp_path: Path,
                                                               deep_trace: Path) -> None:
    proc = start("simulate", "--trace", str(deep_trace), *SLOW,
                 "--out", "new/run", cwd=tmp_path)
    wait_for("the run's working folder", lambda: (tmp_path / "new").is_dir()
             and partial(tmp_path / "new")(), proc)
    status, out, err = interrupt(proc)
    assert status == 130
    one_line(err, "schedd simulate: interrupted")
    assert out == ""
    assert tree(tmp_path) == {}  # not even the parent folder it made


def test_ctrl_c_in_simulate_keeps_an_earlier_run_as_it_was(tmp_path: Path,
                                                           deep_trace: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "schedd", "simulate", "--trace",
                           str(deep_trace), "--limit", "300", "--quiet", "--out", "run"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before = tree(tmp_path)
    proc = start("simulate", "--trace", str(deep_trace), *SLOW,
                 "--out", "run", cwd=tmp_path)
    wait_for("the run's working folder", partial(tmp_path / "run"), proc)
    status, _, err = interrupt(proc, times=2)  # pressed twice
    assert status == 130
    one_line(err, "schedd simulate: interrupted")
    assert tree(tmp_path) == before


def test_kill_term_in_simulate_is_an_interrupt_too(tmp_path: Path, deep_trace: Path) -> None:
    proc = start("simulate", "--trace", str(deep_trace), *SLOW,
                 "--out", "run", cwd=tmp_path)
    wait_for("the run's working folder", partial(tmp_path), proc)
    status, _, err = interrupt(proc, signal.SIGTERM)
    assert status == 143
    one_line(err, "schedd simulate: terminated")
    assert tree(tmp_path) == {}


def test_a_simulation_killed_outright_leaves_no_jobs_csv_that_looks_whole(
        tmp_path: Path, deep_trace: Path) -> None:
    proc = start("simulate", "--trace", str(deep_trace), *SLOW,
                 "--out", "run", cwd=tmp_path)
    wait_for("the run's working folder", partial(tmp_path), proc)
    status, _, _ = interrupt(proc, signal.SIGKILL)
    assert status == -signal.SIGKILL
    assert not (tmp_path / "run").exists()
    # what SIGKILL leaves is hidden and named for what it is
    assert all(name.startswith(".partial-") for name in tree(tmp_path)), tree(tmp_path)


def test_ctrl_c_in_a_sweep_stops_its_workers_and_keeps_the_finished_cells(
        tmp_path: Path, deep_trace: Path) -> None:
    argv = ("sweep", "--trace", str(deep_trace), "--run", "easy", "--run", "plan-sa",
            "--workers", "2", "-o", "sw")
    proc = start(*argv, cwd=tmp_path)
    cache = tmp_path / "sw" / "cache"
    wait_for("a finished cell", lambda: any(cache.glob("*/*/row.json")), proc)
    status, out, err = interrupt(proc, times=2)
    assert status == 130
    assert "Traceback" not in err and "Error" not in err, err
    lines = err.splitlines()
    assert lines[0].startswith("schedd sweep: 2 cells, 0 cached, 2 to run"), err
    assert lines[1:] == [f"schedd sweep: interrupted: 1 of 2 cells cached in {Path('sw')}"
                         "/cache; the same command runs only the other 1"], err
    assert out == ""
    assert sorted(p.name for p in (tmp_path / "sw").iterdir()) == ["cache"]  # no table
    names = [str(p.relative_to(cache)) for p in cache.rglob("*")]
    assert not [n for n in names if ".partial-" in n], names
    assert len([n for n in names if n.endswith("row.json")]) == 1


def test_ctrl_c_while_a_sweep_starts_leaves_nothing(tmp_path: Path, deep_trace: Path) -> None:
    proc = start("sweep", "--trace", str(deep_trace), "--run", "plan-sa", "-o", "sw",
                 cwd=tmp_path)
    wait_for("the sweep's cache folder", lambda: (tmp_path / "sw" / "cache").is_dir(), proc)
    status, _, err = interrupt(proc)
    assert status == 130
    assert "Traceback" not in err and "Error" not in err, err
    assert err.splitlines()[-1].startswith("schedd sweep: interrupted"), err
    assert tree(tmp_path) == {}


def test_a_sweep_cleans_what_a_killed_sweep_left_and_reports_the_rest(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parents[1] / "schedd" / "data"
    trace = trace / "sample-lublin256-1000.swf"
    argv = [sys.executable, "-m", "schedd", "sweep", "--trace", str(trace), "--run", "easy",
            "--workers", "0", "--no-progress", "-o", "sw"]
    first = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    shard = next(p for p in (tmp_path / "sw" / "cache").iterdir() if len(p.name) == 2)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = orphans._host()
    dead = shard / f".{'a' * 32}.partial-{host}-{gone.pid}-x1"  # its writer was killed
    alive = shard / f".{'b' * 32}.partial-{host}-{os.getpid()}-x2"  # still being written
    elsewhere = shard / f".{'c' * 32}.partial-otherhost-{gone.pid}-x3"
    for folder in (dead, alive, elsewhere):
        folder.mkdir()
        (folder / "results.npz").write_bytes(b"half")
    tasks = tmp_path / "sw" / "cache" / "tasks" / "ab"
    tasks.mkdir(parents=True)
    (tasks / f".{'d' * 32}.partial-{host}-{gone.pid}-x4").write_bytes(b"half a pickle")
    again = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    said = again.stderr.splitlines()[0]
    assert said.startswith("schedd sweep: removed 2 unfinished cells a killed run left in "
                           "sw/cache; 2 unfinished cells in sw/cache left alone"), said
    assert alive.name in said and elsewhere.name in said and dead.name not in said
    assert not dead.exists() and alive.exists() and elsewhere.exists()
    assert not any(tasks.iterdir())
    assert "1 cells, 1 cached, 0 to run" in again.stderr


def test_orphans_of_this_process_and_of_no_owner_are_left(tmp_path: Path) -> None:
    shard = tmp_path / "ab"
    shard.mkdir()
    mine = shard / f"{orphans.partial_prefix('k' * 32)}zz"
    old = shard / f".{'k' * 32}.zz1234"  # named the older way: no owner to ask
    mine.mkdir()
    old.mkdir()
    found = orphans.clean(tmp_path)
    assert found.removed == [] and found.left == [f"ab/{mine.name}", f"ab/{old.name}"]
    assert mine.exists() and old.exists()
    assert orphans.clean(tmp_path / "none").line("x", "p") is None


def test_ctrl_c_while_the_run_files_are_written_waits_for_their_thread() -> None:
    """simulate writes segments.csv and timeseries.csv in a second thread: an interrupt
    while the main thread waits for it must not let the staged folder be removed under
    the thread's feet (a file it made after the removal would keep the folder)."""
    from schedd.sim import in_background

    started, release, done = threading.Event(), threading.Event(), []

    def work() -> None:
        started.set()
        release.wait(30)
        done.append(True)

    wait = in_background(work)
    assert started.wait(30)
    threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
    threading.Timer(0.5, release.set).start()
    with pytest.raises(KeyboardInterrupt):
        wait()
    assert done == [True]


def test_ctrl_c_in_a_first_compare_says_nothing_was_kept(tmp_path: Path,
                                                         deep_trace: Path) -> None:
    """A first comparison caches its simulations in its staged folder, which goes when it
    is interrupted: the line says so (and how to keep them), not that they are cached."""
    proc = start("compare", "--trace", str(deep_trace), "--cluster", "nodes:256",
                 "--percent", "0", "--trials", "1", "--run", "plan-sa", "--run", "easy",
                 cwd=tmp_path)
    wait_for("its working folder", lambda: (tmp_path / "out").is_dir()
             and partial(tmp_path / "out")(), proc)
    status, out, err = interrupt(proc)
    assert status == 130
    assert "Traceback" not in err and "Error" not in err, err
    assert err.splitlines()[-1] == (
        "schedd compare: interrupted: no simulation kept (a first comparison keeps them "
        "when it completes; --cache DIR keeps them whatever happens)"), err
    assert tree(tmp_path) == {}
