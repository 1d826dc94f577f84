"""What `schedd-replay` tells the user while it runs: a progress line (virtual time, jobs
submitted / started / finished, ETA) and, within a few seconds, why nothing moves when
the daemon does not advance (clock paused or stalled, engine behind and not catching up,
nothing due for a long time)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from schedd.durations import format_duration


@dataclass
class Snapshot:
    """One look at the daemon (GetClock, and GetCluster when counts are wanted)."""

    now: float  # virtual time of the clock
    engine_time: float
    paused: bool
    submitted: int
    started: int | None = None  # of this replay's jobs (None: not looked at)
    finished: int | None = None


class Status:
    """Progress and stall warnings on stderr: a tqdm bar on a terminal, else one line
    every `every` wall seconds (0: none). Warnings are printed either way."""

    def __init__(self, total: int, speedup: float, end_v: float, *, every: float,
                 stall_after: float, bar: bool, lockstep: bool = False,
                 out: TextIO | None = None, lead: float = 0.0, idle_after: float = 30.0):
        self.total = total
        self.speedup = speedup
        self.end_v = end_v  # virtual time the last job is due
        self.every = every
        self.stall_after = stall_after
        self.lockstep = lockstep
        self.lead = lead  # wall seconds a job is sent before it is due
        self.idle_after = max(idle_after, stall_after)  # a quiet gap worth a word
        self.out = out or sys.stderr
        self.started_w = time.monotonic()
        self.last_line_w = self.started_w
        self.last: Snapshot | None = None
        self.moved_w = self.started_w  # wall time the clock last moved
        self.engine_moved_w = self.started_w  # ... the engine last moved
        self.warned: set[str] = set()
        self.bar: Any = None
        if bar:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="job", desc="submitted", file=self.out)

    # ------------------------------------------------------------------ output
    def warn(self, key: str, text: str) -> None:
        """Say `text` once per episode `key` (cleared when things move again)."""
        if key in self.warned:
            return
        self.warned.add(key)
        if self.bar is not None:
            self.bar.write(f"schedd-replay: {text}", file=self.out)
        else:
            print(f"schedd-replay: {text}", file=self.out, flush=True)

    def line(self, s: Snapshot) -> str:
        parts = [f"t={s.now:,.0f}", f"submitted {s.submitted:,}/{self.total:,}"]
        if s.started is not None:
            parts.append(f"started {s.started:,}")
        if s.finished is not None:
            parts.append(f"finished {s.finished:,}")
        parts.append(f"lag {max(0.0, s.now - s.engine_time):,.0f} s")
        eta = self.eta(s)
        if eta is not None:
            parts.append(f"ETA {format_duration(eta)}")
        return ", ".join(parts)

    def eta(self, s: Snapshot) -> float | None:
        """Wall seconds until the last job is submitted (accelerated), else from the rate
        of finished jobs; None when unknown."""
        if not self.lockstep and s.submitted < self.total and self.speedup > 0:
            return max(0.0, (self.end_v - s.now) / self.speedup)
        if s.finished:
            elapsed = time.monotonic() - self.started_w
            return elapsed * (self.total - s.finished) / s.finished
        return None

    def wants_counts(self) -> bool:
        """Whether the next update shows job counts (worth a GetCluster)."""
        if self.bar is not None:
            return True
        return self.every > 0 and time.monotonic() - self.last_line_w >= self.every - 1.0

    # ------------------------------------------------------------------ updates
    def update(self, s: Snapshot, *, next_due_v: float | None = None) -> None:
        wall = time.monotonic()
        prev = self.last
        if prev is None or s.now > prev.now:
            self.moved_w = wall
            self.warned.discard("clock")
        if prev is None or s.engine_time > prev.engine_time:
            self.engine_moved_w = wall
            self.warned.discard("engine")
        if prev is None or s.submitted != prev.submitted or s.finished != prev.finished:
            self.warned.discard("idle")
        self.last = s
        self._stalls(s, wall, next_due_v)
        if self.bar is not None:
            self.bar.update(s.submitted - self.bar.n)
            post = {"t": f"{s.now:.0f}", "lag": f"{max(0.0, s.now - s.engine_time):.0f}"}
            if s.started is not None:
                post["started"] = str(s.started)
            if s.finished is not None:
                post["finished"] = str(s.finished)
            self.bar.set_postfix(post, refresh=True)
        elif self.every > 0 and wall - self.last_line_w >= self.every:
            self.last_line_w = wall
            print(f"schedd-replay: {self.line(s)}", file=self.out, flush=True)

    def _stalls(self, s: Snapshot, wall: float, next_due_v: float | None) -> None:
        after = self.stall_after
        if s.paused:
            self.warn("paused", f"the daemon's clock is paused at t={s.now:,.0f}; "
                      "`schedctl clock resume` restarts it")
            return
        self.warned.discard("paused")
        if not self.lockstep and wall - self.moved_w > after:
            self.warn("clock", f"the daemon's clock has not moved for "
                      f"{wall - self.moved_w:.0f} s (t={s.now:,.0f}): is the daemon stalled?")
        lag = s.now - s.engine_time
        if lag > 0 and wall - self.engine_moved_w > after:
            self.warn("engine", f"the daemon's engine has not advanced for "
                      f"{wall - self.engine_moved_w:.0f} s and is {lag:,.0f} virtual s "
                      "behind its clock: a policy pass stuck, or the engine thread died "
                      "(see the daemon's log)")
        if next_due_v is not None and not self.lockstep and self.speedup > 0:
            wait_w = (next_due_v - s.now) / self.speedup - self.lead
            if wait_w > self.idle_after:
                self.warn("idle", f"nothing to send until t={next_due_v:,.0f}, "
                          f"{format_duration(wait_w)} of wall time at {self.speedup:g}x "
                          "(--speedup, --at or --from change that)")

    def draining(self, s: Snapshot, running: int, queued: int,
                 next_end_v: float | None) -> None:
        """After the last submission: say when nothing will finish for a long time."""
        self.update(s)
        if s.paused or next_end_v is None or self.lockstep or self.speedup <= 0:
            return
        wait_w = (next_end_v - s.now) / self.speedup
        if wait_w > self.idle_after:
            self.warn("idle", f"{running:,} job(s) running and {queued:,} queued; the next "
                      f"one ends at t={next_end_v:,.0f}, in {format_duration(wait_w)} of "
                      f"wall time at {self.speedup:g}x")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
