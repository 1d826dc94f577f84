"""The daemon's virtual clock: realtime, accelerated (K x wall time) or lockstep.

Only the daemon reads the wall clock; the engine gets virtual times as numbers. The wall
clock is injected (`wall=`) so tests can drive time by hand.

* realtime / accelerated: virtual = origin + K x (wall - wall_origin) while running; a pause
  freezes it, a resume continues from where it stopped; AdvanceClock jumps it forward.
* lockstep: virtual time moves only when a client calls AdvanceClock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

MODES = ("realtime", "accelerated", "lockstep")


class ClockError(ValueError):
    """A clock request that cannot be honoured (one sentence)."""


class VirtualClock:
    def __init__(self, mode: str, speedup: float = 1.0, start: float = 0.0,
                 wall: Callable[[], float] = time.monotonic):
        if mode not in MODES:
            raise ClockError(f"unknown clock mode {mode!r}; expected one of {', '.join(MODES)}")
        if mode == "realtime":
            speedup = 1.0
        if speedup <= 0:
            raise ClockError(f"the speed-up factor must be positive, not {speedup:g}")
        self.mode = mode
        self.speedup = speedup if mode != "lockstep" else 0.0
        self._wall = wall
        self._origin = start  # virtual time at _wall_origin
        self._wall_origin = wall()
        self._paused = mode == "lockstep"  # lockstep never runs by itself

    @property
    def lockstep(self) -> bool:
        return self.mode == "lockstep"

    @property
    def paused(self) -> bool:
        return self._paused and not self.lockstep

    def now(self) -> float:
        if self._paused:
            return self._origin
        return self._origin + self.speedup * (self._wall() - self._wall_origin)

    def pause(self) -> None:
        if self.lockstep:
            raise ClockError("a lockstep clock only moves by AdvanceClock; there is "
                             "nothing to pause")
        if not self._paused:
            self._origin = self.now()
            self._paused = True

    def resume(self) -> None:
        if self.lockstep:
            raise ClockError("a lockstep clock only moves by AdvanceClock; there is "
                             "nothing to resume")
        if self._paused:
            self._wall_origin = self._wall()
            self._paused = False

    def advance_to(self, target: float) -> None:
        """Jump forward (never back): lockstep's only way to move, a fast-forward else."""
        now = self.now()
        if not math.isfinite(target):
            raise ClockError("the clock can only move to a finite time")
        if target < now:
            raise ClockError(f"the clock is at {now:.3f}; it cannot move back to "
                             f"{target:.3f}")
        self._origin = target
        self._wall_origin = self._wall()

    def advance_by(self, seconds: float) -> float:
        """Jump forward by `seconds` from the reading at this instant (any amount > 0: a
        running clock cannot have moved past a target taken here). Returns the new time."""
        if not (math.isfinite(seconds) and seconds > 0):
            raise ClockError(f"the clock can only move forward by a positive, finite amount "
                             f"of time, not {seconds!r}")
        target = self.now() + seconds
        self._origin = target
        self._wall_origin = self._wall()
        return target

    def restore(self, virtual: float) -> None:
        """Continue from `virtual` (after recovery): the outage took no virtual time."""
        self._origin = max(self._origin, virtual) if self.lockstep else virtual
        self._wall_origin = self._wall()

    def wall_delay(self, virtual: float) -> float:
        """Wall seconds until the clock reads `virtual` (inf when it will not move)."""
        if self._paused or self.speedup <= 0:
            return math.inf
        return max(0.0, (virtual - self.now()) / self.speedup)
