"""The Dask client a sweep or an experiment runs on: a LocalCluster of `workers`
single-threaded processes by default, or an existing cluster at `scheduler`.

Ctrl-C: on a terminal SIGINT reaches the workers as well as this process, and a user
often presses it twice. The workers ignore it (they start so: _workers_ignore_sigint);
this process stops them. While the cluster is up, the first SIGINT raises
KeyboardInterrupt as always; later ones, and any while the client and the cluster close,
are only counted, so that no second Ctrl-C leaves a half-closed client (whose finaliser
then waits forever, at exit, on an event loop that is gone) or worker processes behind.
One that came while the cluster started, or only while it closed after the work was
done, is raised once it has started (and closed again) or closed.
"""

from __future__ import annotations

import logging
import signal
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def dask_client(workers: int, scheduler: str | None) -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    interrupts = _Interrupts()  # held while the cluster starts: no half-started cluster
    cluster = client = None
    try:
        if scheduler is None:
            # One thread per worker: a simulation holds the GIL the whole time. Dask's own
            # logs only at CRITICAL: while the cluster shuts down a worker's heartbeat can
            # race the scheduler's close, and the worker then logs that with a traceback
            # on the user's terminal after a run that succeeded (seen in CI). What a
            # sweep's user needs, a task that failed and with which arguments, the sweep
            # reports.
            # No dashboard, but the scheduler's HTTP server (health, metrics) still tries
            # port 8787 first and warns on stderr when another Dask cluster holds it
            # (seen beside a second sweep), then takes another port: not the user's
            # business.
            with _workers_ignore_sigint(), warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")
                cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1,
                                       processes=True, dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
        try:
            client = Client(scheduler or cluster)
        except OSError as err:  # no scheduler there: one sentence, not a traceback
            from .cells import SweepError

            raise SweepError(f"cannot reach the Dask scheduler {scheduler or 'started here'}"
                             f" ({err})") from None
        if interrupts.count:  # Ctrl-C while it started
            raise KeyboardInterrupt
        interrupts.resume()
        yield client
    finally:
        interrupts.hold()
        try:
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
        finally:
            interrupts.restore()
    if interrupts.count:  # Ctrl-C while they closed, after the work was done
        raise KeyboardInterrupt


@contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Worker processes started in the block (multiprocessing's spawn, Dask's default)
    begin with SIGINT ignored, which Python then keeps: they are started through a
    launcher, `trap '' INT; exec PYTHON "$@"`. (Ignoring SIGINT here while they start
    would do the same but lose a Ctrl-C of that while: a thread of a C library, which
    does not block it, can take it and drop it.)"""
    import multiprocessing.spawn as spawn
    import os
    import shlex
    import shutil
    import tempfile

    python = spawn.get_executable()
    folder = tempfile.mkdtemp(prefix="schedd-dask-")
    launcher = os.path.join(folder, "python")
    with open(launcher, "w") as f:
        f.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(os.fsdecode(python))} \"$@\"\n")
    os.chmod(launcher, 0o700)
    spawn.set_executable(launcher)
    try:
        yield
    finally:
        spawn.set_executable(python)
        shutil.rmtree(folder, ignore_errors=True)


class _Interrupts:
    """SIGINT in the main thread while a cluster is up (see the module's docstring);
    elsewhere, as it was."""

    def __init__(self) -> None:
        self.count = 0
        self.raising = False
        self.installed = threading.current_thread() is threading.main_thread()
        self.previous: Any = None
        if self.installed:
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.count += 1
        if self.raising and self.count == 1:
            raise KeyboardInterrupt

    def resume(self) -> None:
        """From now on, the first SIGINT raises KeyboardInterrupt."""
        self.raising = True

    def hold(self) -> None:
        """From now on, SIGINT is only counted."""
        if self.raising and self.count:  # the one that stopped the work: said already
            self.count = 0
        self.raising = False

    def restore(self) -> None:
        if self.installed:
            signal.signal(signal.SIGINT,
                          signal.SIG_DFL if self.previous is None else self.previous)


def where(workers: int, scheduler: str | None) -> str:
    """Where the work runs, for the first line a sweep or an experiment prints."""
    if scheduler:
        return f"Dask scheduler {scheduler}"
    return "this process" if workers == 0 else f"a local Dask cluster of {workers} workers"
