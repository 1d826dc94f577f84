"""Policy interface and option parsing.

A policy is a class with a frozen `Options` dataclass (documented defaults, parsed once from
KEY=VALUE strings) and a `schedule(view) -> list[Decision]` method.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from ..core.cluster import Cluster
from ..core.decisions import Decision
from ..core.view import View
from ..suggest import did_you_mean


class PolicyError(ValueError):
    """Unknown policy or bad option: the message is one sentence for the user."""


@dataclasses.dataclass(frozen=True)
class NoOptions:
    pass


def _never() -> bool:
    return False


def _forever() -> float:
    return math.inf


class Policy(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    Options: ClassVar[type] = NoOptions
    # An anytime policy checks `out_of_time()` while it searches and then returns its best
    # plan so far; the daemon binds a wall-clock check, the simulator none (the core never
    # reads a clock itself).
    anytime: ClassVar[bool] = False
    # Whether the engine's ECC processor serves this policy: elastic control commands
    # (ET/RT/EP/RP) are applied FCFS; without it they are refused and logged (the LOS
    # paper's non-E schedulers, Table III).
    processes_eccs: ClassVar[bool] = True

    def __init__(self, options: Any, cluster: Cluster):
        self.options = options
        self.cluster = cluster
        self._out_of_time: Callable[[], bool] = _never
        self._time_left: Callable[[], float] = _forever
        self.clock_bound = False

    def bind_budget(self, out_of_time: Callable[[], bool],
                    time_left: Callable[[], float] | None = None) -> None:
        """The daemon's wall clock: `out_of_time()` turns true shortly before the pass's
        deadline; `time_left()` says how many seconds remain until then."""
        self._out_of_time = out_of_time
        if time_left is not None:
            self._time_left = time_left
        self.clock_bound = True

    def out_of_time(self) -> bool:
        return self._out_of_time()

    def time_left(self) -> float:
        """Seconds left in this pass's budget (infinite when no clock is bound)."""
        return self._time_left()

    @abstractmethod
    def schedule(self, view: View) -> list[Decision]: ...

    def periodic_checkpoints(self) -> str | None:
        """The engine's periodic checkpoint mode (`--ckpt`) this policy's preemption scheme
        assumes, or None when it works with any (the CLI fills it in or refuses a clash)."""
        return None

    def stats(self) -> dict[str, int]:
        """Counters the policy keeps (summary.json's `policy_stats`); none by default."""
        return {}


def option_help(options_cls: type) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) for each option; descriptions come from
    field metadata."""
    hints = typing.get_type_hints(options_cls)
    rows = []
    for f in dataclasses.fields(options_cls):
        rows.append((f.name, _type_name(hints[f.name]), repr(f.default),
                     f.metadata.get("help", "")))
    return rows


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is typing.Literal:
        return "|".join(str(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp))


def parse_options(policy_name: str, options_cls: type, pairs: list[str]) -> Any:
    hints = typing.get_type_hints(options_cls)
    fields = {f.name: f for f in dataclasses.fields(options_cls)}
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise PolicyError(f"option {pair!r} is not KEY=VALUE")
        if key not in fields:
            valid = ", ".join(fields) or "none"
            raise PolicyError(f"policy {policy_name} has no option {key!r}"
                              f"{did_you_mean(key, fields)}; valid options: {valid}")
        values[key] = _convert(policy_name, key, hints[key], raw.strip())
    return options_cls(**values)


def _convert(policy: str, key: str, tp: Any, raw: str) -> Any:
    if typing.get_origin(tp) is typing.Literal:
        allowed = [str(a) for a in typing.get_args(tp)]
        if raw not in allowed:
            raise PolicyError(f"{policy}: option {key} must be one of {', '.join(allowed)}, "
                              f"not {raw!r}")
        return raw
    try:
        if tp is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if tp is int:
            return int(raw)
        if tp is float:
            return float(raw)
    except ValueError:
        raise PolicyError(f"{policy}: option {key} expects {_type_name(tp)}, got {raw!r}") from None
    return raw
