"""The cyclic garbage collector's settings for long runs: the daemon (docs/daemon.md,
"Collector pauses") and `schedd simulate` (docs/engine.md).

A daemon holds a large live heap: each queued or running job keeps about six objects the
collector tracks (its record, specification, stimulus and engine state). A full
(generation 2) collection scans all of them while holding the GIL, so RPCs, the journal
and the engine all stop for it. With CPython's default thresholds (700, 10, 10) a
20,000-job stream triggered one every one or two streams, and at 750,000 tracked
objects one took about 300 ms (docs/benchmarks.md). Two settings remove most of that:

* Once recovery is done, what the daemon holds goes to the permanent generation
  (`gc.freeze()` after a full collection): the imported modules and the recovered state
  are never scanned again. Frozen objects are still freed by reference counting when let
  go; only a reference cycle among them would outlive its use, and all of them are live
  at that moment.
* Thresholds (50,000, 20, 10): a young collection once 50,000 more tracked objects have
  been allocated than freed (CPython: 700), so reference cycles, which the RPC machinery
  makes a few of per call, are still collected young, in collections that are rarer and
  each cheap; a full collection at most once per ten million (CPython: seventy thousand,
  where in practice its other condition, a quarter of the old generation newly added,
  decides).

A simulation allocates a few tracked objects per job and per event and frees most of them
soon. With CPython's thresholds a KTH run (28,481 jobs) made 114 collections, one of them
full (every object the imports left, NumPy's and schedd's modules), 24 ms in all, 3% of
the run; with these settings, applied once the trace is read, none but settle's own
(docs/benchmarks.md). The imports themselves still made about 45 young collections, so
`schedd` sets the thresholds when a command starts (`raise_thresholds`), before them.

`SCHEDD_GC_THRESHOLDS="A,B,C"` sets other thresholds (`gc.set_threshold`);
`SCHEDD_GC_THRESHOLDS=python` keeps CPython's defaults and freezes nothing.

`keep_freed_memory` is about the C heap: glibc gives a freed block of 128 KiB or more back
to the kernel (or raises that bound as blocks are freed, trimming the heap's top), and the
next such block comes back as fresh pages, each zeroed by a page fault on first touch. A
simulation allocates and frees NumPy arrays of such sizes over and over: a KTH run took
23,800 page faults and a million-job run 463,000 (3.2 s of system time). `schedd
simulate` keeps freed memory for reuse instead: 16,700 and 191,000 faults, with the same
peak resident memory (docs/benchmarks.md); it is only not given back before the process
ends. The daemon does not: it runs for months and should return what a burst took.

`return_freed_memory` is the daemon's side of it: glibc raises its mmap threshold each
time a mapped block is freed (up to 32 MiB), after which blocks of that size -- a
snapshot's pickle, a result chunk, a journal batch -- come from the heap, where long-lived
objects pin the space around them. An accelerated replay's daemon grew that way by about
0.8 KB a finished job with nothing kept per job (issue 34; docs/benchmarks.md): the heap's
free space went from 54 to 118 MB between 40,000 and 85,000 jobs. Holding the threshold at
glibc's default keeps such blocks in mappings of their own, given back when freed.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

THRESHOLDS = (50_000, 20, 10)
ENV = "SCHEDD_GC_THRESHOLDS"


def thresholds_from(text: str) -> tuple[int, int, int] | None:
    """The thresholds `text` asks for: None for "python" (CPython's own settings),
    THRESHOLDS when empty; ValueError with one sentence otherwise."""
    text = text.strip()
    if not text:
        return THRESHOLDS
    if text == "python":
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() and p.isascii() for p in parts):
        raise ValueError(f"{ENV} must be three whole numbers such as 50000,20,10 (or "
                         f"'python' for CPython's own), not {text!r}")
    young, middle, old = (int(p) for p in parts)
    if not (1 <= young <= 10**7 and 1 <= middle <= 10**4 and 1 <= old <= 10**4):
        raise ValueError(f"{ENV} {text!r} is out of range: the first number must be "
                         "1..10^7, the others 1..10^4")
    return young, middle, old


def raise_thresholds(text: str) -> bool:
    """At a command's start: the thresholds SCHEDD_GC_THRESHOLDS asks for (`text`), before
    the imports, which otherwise run about 45 young collections for `schedd simulate`
    (docs/engine.md). False, nothing changed, for "python" or a setting that is not
    valid (the command that reads the setting reports that)."""
    try:
        thresholds = thresholds_from(text)
    except ValueError:
        return False
    if thresholds is None:
        return False
    gc.set_threshold(*thresholds)
    return True


def settle(thresholds: tuple[int, int, int] | None, collect: bool = True) -> bool:
    """Before the long part of a run (the daemon: after recovery, before serving): a full
    collection, then freeze what survives and set the thresholds. False when `thresholds`
    is None: CPython's settings are left alone. (`gc.get_freeze_count()` says how many
    objects are frozen; it walks them all, 1.6 ms for a simulation's 23,000.)

    `collect=False` freezes without the collection: for a process that ends with its run
    (`schedd simulate`), where the few cycles the imports leave (15 objects after a KTH
    trace is read) would cost less held than the 5 ms a full collection takes."""
    if thresholds is None:
        return False
    if collect:
        gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)
    return True


_MMAP_DEFAULT = 128 << 10  # glibc's own mmap threshold (and trim threshold), held fixed

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_MMAP_MOST = 32 << 20  # glibc refuses a larger mmap threshold on 64-bit (HEAP_MAX_SIZE / 2)


def keep_freed_memory() -> bool:
    """glibc only: serve blocks up to 32 MiB from the heap rather than fresh mappings, and
    never trim the heap, so freed memory is reused without page faults; and one heap for
    every thread, so the thread that writes the run files (sim.write_outputs) reuses what
    the run freed rather than growing an arena of its own (a million jobs: 837 MiB at
    the peak, against 953 MiB with an arena per thread). False (nothing changed)
    elsewhere or if glibc refuses."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # The mmap threshold first: setting either fixes both (glibc stops adjusting them).
    return (bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_MOST))
            and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)) and bool(mallopt(_M_ARENA_MAX, 1)))


def return_freed_memory() -> bool:
    """glibc only, for the daemon: hold the mmap threshold at 128 KiB (glibc's default,
    which it otherwise raises as mapped blocks are freed), so that every block of that size
    or more is a mapping of its own, returned to the kernel when freed, not heap space
    fragmented between long-lived objects. Fixing it fixes the trim threshold too (at its
    default, 128 KiB). False (nothing changed) elsewhere or if glibc refuses."""
    mallopt = _mallopt()
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_DEFAULT))


def _mallopt() -> Any:
    """glibc's mallopt(param, value), or None off Linux or where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # NumPy has loaded it already

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
