"""`schedd simulate` sets the garbage collector as the daemon does (schedd/heap.py) once
the trace is read; SCHEDD_GC_THRESHOLDS changes it, and never the results."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedd import heap

# Runs the command in a fresh interpreter and reports the collector's state after it.
PROBE = ("import gc, sys\nfrom schedd.cli import main\n"
         "code = main(sys.argv[1:])\n"
         "print(*gc.get_threshold(), gc.get_freeze_count())\nsys.exit(code)\n")


def simulate(out: Path, gc_setting: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != heap.ENV}
    if gc_setting is not None:
        env[heap.ENV] = gc_setting
    return subprocess.run([sys.executable, "-c", PROBE, "simulate", "--limit", "300",
                           "--out", str(out), "--quiet", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_simulate_freezes_and_raises_the_thresholds(tmp_path: Path) -> None:
    r = simulate(tmp_path / "a", None)
    assert r.returncode == 0, r.stderr
    *thresholds, frozen = (int(w) for w in r.stdout.split())
    assert tuple(thresholds) == heap.THRESHOLDS and frozen > 0


@pytest.mark.parametrize("setting", ["python", "700,10,10", "1,1,1"])
def test_results_do_not_depend_on_the_collector(tmp_path: Path, setting: str) -> None:
    default = simulate(tmp_path / "default", None)
    other = simulate(tmp_path / "other", setting)
    assert default.returncode == other.returncode == 0, other.stderr
    if setting == "python":
        assert other.stdout.split()[-1] == "0"  # nothing frozen: CPython's own settings
    for name in ("jobs.swf", "jobs.csv", "segments.csv", "timeseries.csv"):
        assert (tmp_path / "default" / name).read_bytes() == \
            (tmp_path / "other" / name).read_bytes(), name


# Counts the collections made while the command runs (its imports included).
COUNTING = ("import gc, sys\nfrom schedd.cli import main\nmade = []\n"
            "gc.callbacks.append(lambda phase, info: made.append(phase == 'start'))\n"
            "code = main(sys.argv[1:])\nprint(sum(made))\nsys.exit(code)\n")


def test_the_thresholds_hold_from_the_command_s_start(tmp_path: Path) -> None:
    """The command's imports (NumPy, the engine) ran about 45 young collections with
    CPython's thresholds; raised before them, next to none."""
    made = {}
    for setting in ("", "python"):
        env = {k: v for k, v in os.environ.items() if k != heap.ENV}
        env[heap.ENV] = setting
        r = subprocess.run([sys.executable, "-c", COUNTING, "simulate", "--limit", "300",
                            "--out", str(tmp_path / (setting or "default")), "--quiet",
                            "--no-progress"], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        made[setting] = int(r.stdout.split()[-1])
    assert made["python"] >= 20 and made[""] * 10 <= made["python"], made


def test_a_bad_setting_is_one_sentence_before_any_work(tmp_path: Path) -> None:
    r = simulate(tmp_path / "never", "fast")
    assert r.returncode == 2
    assert r.stderr.strip() == ("schedd: error: SCHEDD_GC_THRESHOLDS must be three whole "
                                "numbers such as 50000,20,10 (or 'python' for CPython's "
                                "own), not 'fast'")
    assert not (tmp_path / "never").exists()
