"""Policy passes under a wall-clock budget, with a fallback policy.

`BudgetedPolicy` wraps whatever policy the daemon runs (every registered policy, without
the policy's cooperation). A pass that is still computing at its deadline is cut off: a
watchdog thread raises `BudgetExceeded` inside the engine thread (CPython's
`PyThreadState_SetAsyncExc`, delivered at the next bytecode boundary), the primary's
unfinished plan is dropped, and the fallback policy decides this pass on the same view.
Anytime policies see `out_of_time()` turn true a little before the deadline and return
their best plan themselves, so they are not cut off.

A policy only reads the view and returns decisions, so cutting it off leaves no partial
effect on the engine. Code running inside a compiled extension is only interrupted when it
returns to Python; the pass then ends late and still falls back.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from ..core.decisions import Decision
from ..core.view import View
from ..policies.base import Policy


class BudgetExceeded(BaseException):  # noqa: N818 — BaseException: `except Exception` in a policy must not swallow it
    """Raised asynchronously in a policy that overran its budget."""


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    obj = ctypes.py_object(exc) if exc is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), obj)


class Watchdog:
    """One thread that cuts off the armed pass at its deadline.

    Arming and disarming only set fields under a lock: most passes take microseconds,
    and waking a thread for each would cost two GIL hand-overs per pass. The thread
    instead looks every `period` seconds, so a cut comes at most `period` late.
    """

    def __init__(self, period: float = 0.01) -> None:
        self._lock = threading.Lock()
        self._period = period
        self._deadline: float | None = None
        self._target = 0
        self._fired = False
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="schedd-watchdog", daemon=True)
        self._thread.start()

    def arm(self, deadline: float) -> None:
        with self._lock:
            self._deadline = deadline
            self._target = threading.get_ident()
            self._fired = False

    def disarm(self) -> bool:
        """Stop watching; True if the pass was cut off. Clears an exception not yet
        delivered, so it cannot surface after the pass."""
        with self._lock:
            fired = self._fired
            if fired:
                _raise_in(self._target, None)
            self._deadline = None
            self._fired = False
            return fired

    def run(self, deadline: float, work: Callable[[], Any]) -> tuple[Any, bool]:
        """`work()` cut off at the deadline: (its result, or None if cut; whether it was
        cut). The cut never escapes, and nothing is pending once this returns. CPython
        delivers the exception at the next check for one (entering a function, after a C
        call), so it may land after `work` returned, in `disarm` or on the way to it: the
        outer handler catches it there, and the second `disarm` finds nothing left."""
        result = None
        try:
            self.arm(deadline)
            try:
                result = work()
            finally:
                cut = self.disarm()
        except BudgetExceeded:
            result, cut = None, self.disarm() or True
        return result, cut

    def close(self) -> None:
        self._closed.set()

    def _run(self) -> None:
        while not self._closed.wait(self._period):
            with self._lock:
                if self._deadline is not None and time.perf_counter() >= self._deadline:
                    _raise_in(self._target, BudgetExceeded)
                    self._fired = True
                    self._deadline = None


class BudgetedPolicy:
    """Looks like a policy to the engine; runs `primary` under the budget, else `fallback`.

    `pass_index()` numbers passes (the engine's pass counter) so that a recovery can replay
    the same fallbacks: `forced_fallback` holds the pass numbers that fell back before.
    """

    def __init__(self, primary: Policy, fallback: Policy, budget_s: float,
                 pass_index: Callable[[], int], *,
                 on_pass: Callable[[str, float], None] | None = None,
                 on_overrun: Callable[[str, int, float], None] | None = None):
        self.primary = primary
        self.fallback = fallback
        self.budget_s = budget_s
        self.name = primary.name
        self.summary = primary.summary
        self.options = primary.options
        self.processes_eccs = primary.processes_eccs
        self.enforce = True  # off while recovery replays the journal
        self.forced_fallback: set[int] = set()
        self._pass_index = pass_index
        self._on_pass = on_pass
        self._on_overrun = on_overrun
        # Look for overruns every 2% of the budget (between 1 and 20 ms).
        self._watchdog = Watchdog(period=min(max(budget_s / 50, 0.001), 0.02))
        self._deadline = 0.0
        # Anytime policies stop at 90% of the budget (at most 50 ms early).
        self._margin = min(0.1 * budget_s, 0.05)
        primary.bind_budget(self._out_of_time, self._time_left)

    def _out_of_time(self) -> bool:
        return self.enforce and time.perf_counter() >= self._deadline - self._margin

    def _time_left(self) -> float:
        if not self.enforce:
            return math.inf  # recovery replays passes without a clock
        return self._deadline - self._margin - time.perf_counter()

    def close(self) -> None:
        self._watchdog.close()

    def schedule(self, view: View) -> list[Decision]:
        index = self._pass_index()
        if index in self.forced_fallback:
            return self._run(self.fallback, view)
        if not self.enforce:
            return self._run(self.primary, view)
        start = time.perf_counter()
        self._deadline = start + self.budget_s
        decisions, cut = self._watchdog.run(self._deadline,
                                            lambda: list(self.primary.schedule(view)))
        elapsed = time.perf_counter() - start
        if self._on_pass is not None:
            self._on_pass(self.primary.name, elapsed)
        if not cut and decisions is not None:
            return decisions
        if self._on_overrun is not None:
            self._on_overrun(self.primary.name, index, elapsed)
        return self._run(self.fallback, view)

    def _run(self, policy: Any, view: View) -> list[Decision]:
        start = time.perf_counter()
        decisions = list(policy.schedule(view))
        if self._on_pass is not None:
            self._on_pass(policy.name, time.perf_counter() - start)
        return decisions
