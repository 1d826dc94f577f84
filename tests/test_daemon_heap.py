"""The daemon's garbage-collector settings (schedd/heap.py): what it holds at start
is frozen and the thresholds are raised, or CPython's own settings are kept on request;
a bad SCHEDD_GC_THRESHOLDS is one sentence at startup. And `schedd simulate`'s: the same,
without a collection first, and freed C memory kept for reuse."""

from __future__ import annotations

import gc
import platform
import subprocess
import sys
import urllib.request
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_proc import DaemonProc, serve_with_env

from schedd import heap


@pytest.fixture()
def collector_restored() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


@pytest.mark.parametrize(("text", "expected"), [
    ("", heap.THRESHOLDS), ("  ", heap.THRESHOLDS), ("python", None),
    ("700,10,10", (700, 10, 10)), (" 1 , 2 , 3 ", (1, 2, 3)),
])
def test_thresholds_from_the_environment(text: str, expected: object) -> None:
    assert heap.thresholds_from(text) == expected


@pytest.mark.parametrize(("text", "words"), [
    ("50000,20", "three whole numbers"), ("a,b,c", "three whole numbers"),
    ("-1,2,3", "three whole numbers"), ("1.5,2,3", "three whole numbers"),
    ("²,2,3", "three whole numbers"), ("0,10,10", "out of range"),
    ("100000000,10,10", "out of range"), ("700,0,10", "out of range"),
])
def test_bad_thresholds_are_one_sentence(text: str, words: str) -> None:
    with pytest.raises(ValueError) as err:
        heap.thresholds_from(text)
    message = str(err.value)
    assert words in message and heap.ENV in message and "\n" not in message


def test_settle_freezes_what_is_held_and_sets_the_thresholds(collector_restored: None) -> None:
    held = [[i] for i in range(1000)]  # tracked objects, alive across the call
    assert heap.settle((12_345, 7, 3))
    frozen = gc.get_freeze_count()
    # Frozen objects are still freed when let go, so the count can only have fallen since.
    assert frozen >= len(held) and 0 < gc.get_freeze_count() <= frozen
    assert gc.get_threshold() == (12_345, 7, 3)
    assert not any(item is held for item in gc.get_objects())  # frozen ones are not listed


def test_settle_without_collecting_freezes_a_dead_cycle_instead_of_freeing_it(
        collector_restored: None) -> None:
    """The daemon collects before it freezes; `schedd simulate`, whose process ends with
    its run, skips that collection: garbage cycles left then are kept, not freed."""
    class Node:
        pass

    def dead_cycle() -> weakref.ref:
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        return weakref.ref(a)

    kept = dead_cycle()
    heap.settle((50_000, 20, 10), collect=False)
    gc.collect()
    assert kept() is not None  # frozen: the collector no longer looks at it
    gc.unfreeze()
    freed = dead_cycle()
    heap.settle((50_000, 20, 10))
    assert freed() is None


_BURSTS = """
import resource, sys
import numpy as np
from schedd import heap
if sys.argv[1] == "keep":
    assert heap.keep_freed_memory()
def burst():  # sixteen 1 MiB arrays held at once, then freed, as a writer's block is
    held = [np.ones(1 << 17) for _ in range(16)]
    del held
burst()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    burst()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_kept_freed_memory_is_reused_without_page_faults() -> None:
    """Ten more bursts of 16 MiB: glibc's own settings give the memory back after each
    and fault fresh pages in for the next (about 4,000 a burst); kept, it is reused."""
    faults = {how: int(subprocess.run([sys.executable, "-c", _BURSTS, how], check=True,
                                      capture_output=True, text=True).stdout)
              for how in ("system", "keep")}
    if faults["system"] < 10 * 1000:
        pytest.skip(f"this glibc reuses the memory by itself ({faults['system']} faults)")
    assert faults["keep"] * 20 < faults["system"]


def test_python_keeps_cpythons_settings(collector_restored: None) -> None:
    gc.set_threshold(700, 10, 10)
    frozen_before = gc.get_freeze_count()
    assert not heap.settle(None)
    assert gc.get_freeze_count() <= frozen_before  # nothing more frozen (some may be freed)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_daemon_settles_its_heap_and_exports_collections() -> None:
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:16", metrics=True) as d:
        url = f"http://127.0.0.1:{d.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()
        log = d.log()
    assert '"event": "garbage collector set"' in log
    assert '"thresholds": [50000, 20, 10]' in log
    assert '"frozen_objects": 0' not in log
    assert 'python_gc_collections_total{generation="2"}' in text


def test_a_bad_setting_stops_the_start_with_one_sentence(tmp_path: Path) -> None:
    r = serve_with_env(tmp_path / "j.sqlite", {"SCHEDD_GC_THRESHOLDS": "lots"})
    assert r.returncode == 2
    assert r.stderr.strip() == ("schedd: error: SCHEDD_GC_THRESHOLDS must be three whole "
                                "numbers such as 50000,20,10 (or 'python' for CPython's "
                                "own), not 'lots'")
    assert not (tmp_path / "j.sqlite").exists()  # nothing was created


def test_raise_thresholds_at_a_command_s_start(collector_restored: None) -> None:
    gc.set_threshold(700, 10, 10)
    for left_alone in ("python", "fast", "1,2"):  # CPython's own, or reported later
        assert not heap.raise_thresholds(left_alone)
        assert gc.get_threshold() == (700, 10, 10)
    assert heap.raise_thresholds("")
    assert gc.get_threshold() == heap.THRESHOLDS
    assert heap.raise_thresholds("123,4,5")
    assert gc.get_threshold() == (123, 4, 5)
