"""The Dask client a sweep or an experiment runs on: a LocalCluster of `workers`
single-threaded processes by default, or an existing cluster at `scheduler`."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def dask_client(workers: int, scheduler: str | None) -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        # One thread per worker: a simulation holds the GIL the whole time. Dask's own
        # logs only at CRITICAL: while the cluster shuts down a worker's heartbeat can
        # race the scheduler's close, and the worker then logs that with a traceback on
        # the user's terminal after a run that succeeded (seen in CI). What a sweep's
        # user needs, a task that failed and with which arguments, the sweep reports.
        cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1,
                               processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL)
    try:
        client = Client(scheduler or cluster)
    except OSError as err:  # no scheduler there: one sentence, not a traceback
        if cluster is not None:
            cluster.close()
        from .cells import SweepError

        raise SweepError(f"cannot reach the Dask scheduler {scheduler or 'started here'} "
                         f"({err})") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def where(workers: int, scheduler: str | None) -> str:
    """Where the work runs, for the first line a sweep or an experiment prints."""
    if scheduler:
        return f"Dask scheduler {scheduler}"
    return "this process" if workers == 0 else f"a local Dask cluster of {workers} workers"
