"""Stopping the daemon's background tasks without hanging on one of them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

import structlog

log = structlog.get_logger("schedd.serve")


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object]], grace: float,
                          rounds: int = 3) -> list[str]:
    """Cancel the tasks and wait until they end; the names of any still running after
    `rounds` cancellations, each followed by `grace` seconds of waiting.

    Cancelled again, not just waited for: a task may take its first cancellation to clean
    up and then wait without a timeout. aiomqtt's `Client.__aexit__` does (it waits for
    the broker to confirm the disconnect with timeout=None), and a daemon stopped by
    SIGTERM once sat idle with its MQTT session open until a second signal came."""
    tasks = list(tasks)
    pending = {task for task in tasks if not task.done()}
    for attempt in range(rounds):
        if not pending:
            break
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=grace)
        for task in sorted(pending, key=asyncio.Task.get_name):
            log.warning("task still running after cancellation", task=task.get_name(),
                        grace_s=grace, attempt=attempt + 1, of=rounds)
    for task in tasks:  # their errors were logged where they happened; keep asyncio quiet
        if task.done() and not task.cancelled():
            with contextlib.suppress(BaseException):
                task.exception()
    return sorted(task.get_name() for task in pending)
