"""The daemon's event loop: uvloop's where it is installed, asyncio's otherwise.

Why: grpc.aio runs on uvloop, and about two thirds of a unary SubmitJob's event-loop
time is grpc.aio's and the loop's own (callbacks, tasks, futures). Measured in issue 35
(docs/benchmarks.md, "Submission path against a bare server"): uvloop cut a bare grpc.aio
server's CPU per unary call by about a third and the daemon's by 4-22% (three alternating
runs). `SCHEDD_EVENT_LOOP=asyncio` keeps the standard loop (for a comparison, or if a
platform's uvloop misbehaves).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    """"uvloop" or "asyncio": the loop `run` will use."""
    if os.environ.get("SCHEDD_EVENT_LOOP", "").strip().lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:  # not on this platform (Windows): the standard loop
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(main) on the loop `loop_name()` names."""
    if loop_name() == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main)
    return asyncio.run(main)
