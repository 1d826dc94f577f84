"""The Dask client a sweep or an experiment runs on: a LocalCluster of `workers`
single-threaded processes by default, or an existing cluster at `scheduler`.

Ctrl-C: on a terminal SIGINT reaches the workers as well as this process, and a user
often presses it twice. While the cluster is up, the first SIGINT raises
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
            # The workers start with SIGINT ignored, which they keep: the terminal's
            # Ctrl-C reaches them too, and this process handles it by closing the
            # cluster. Meanwhile SIGINT is blocked here, so that a Ctrl-C of that while
            # waits (Linux keeps a blocked signal even while it is ignored) and comes
            # once the workers run.
            blocked = interrupts.block()
            # One thread per worker: a simulation holds the GIL the whole time. Dask's own
            # logs only at CRITICAL: while the cluster shuts down a worker's heartbeat can
            # race the scheduler's close, and the worker then logs that with a traceback
            # on the user's terminal after a run that succeeded (seen in CI). What a
            # sweep's user needs, a task that failed and with which arguments, the sweep
            # reports.
            cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1,
                                   processes=True, dashboard_address=None,
                                   silence_logs=logging.CRITICAL)
            interrupts.unblock(blocked)
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

    def block(self) -> Any:
        """SIGINT blocked in this thread (and the threads it starts) and ignored (by the
        processes it starts); returns the mask to give unblock()."""
        if not self.installed:
            return None
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return mask

    def unblock(self, mask: Any) -> None:
        """SIGINT handled again, and one that came since block() delivered."""
        if not self.installed:
            return
        signal.signal(signal.SIGINT, self._on_sigint)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)

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
