"""structlog setup: JSON lines by default, console rendering on a terminal.

Request context (rpc method, user, job id, stimulus id) comes from contextvars bound by the
checks wrapped around every gRPC method (interceptor.py) and the handlers, merged into every line.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}


class _CurrentStderr:
    """Whatever sys.stderr is at each write: a caller that swaps it (a test harness that
    captures and later closes it) must not leave every later log line failing."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def configure_logging(fmt: str = "auto", level: str = "info", stream: Any = None) -> None:
    stream = stream if stream is not None else _CurrentStderr()
    console = fmt == "console" or (fmt == "auto" and stream.isatty())
    renderer: Any = (structlog.dev.ConsoleRenderer() if console
                     else structlog.processors.JSONRenderer(sort_keys=True))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *([] if console else [structlog.processors.format_exc_info]),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )
