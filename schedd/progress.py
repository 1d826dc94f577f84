"""Progress of a long batch of simulations on stderr (`schedd compare`): a bar on a
terminal, else a line at most every `every` seconds and one at the end, with an ETA."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from .durations import format_duration


class Progress:
    def __init__(self, total: int, what: str, *, every: float = 10.0,
                 out: TextIO | None = None, prog: str = "schedd"):
        self.total = total
        self.what = what
        self.every = every
        self.out = out or sys.stderr
        self.prog = prog
        self.start = time.monotonic()
        self.last = self.start
        self.count = 0
        self.bar: Any = None
        if self.out.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=what, file=self.out, leave=False)

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        text = (f"{self.prog}: {self.count}/{self.total} {self.what} done in "
                f"{format_duration(elapsed)}")
        if 0 < self.count < self.total:
            eta = elapsed * (self.total - self.count) / self.count
            text += f", about {format_duration(eta)} left"
        return text

    def step(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if self.bar is not None:
            self.bar.update(n)
            return
        if self.count >= self.total or now - self.last >= self.every:
            self.last = now
            print(self.line(), file=self.out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
