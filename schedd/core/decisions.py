"""What a policy may ask of the engine. The engine validates each one before acting.

Compiled by mypyc (setup.py), with `Start.__init__` written out: EASY builds a `Start` per
job started, and the dataclass's generated `__init__` ran interpreted, compiled module or
not (about 3% of a KTH simulation, issue 21). Compiled frozen dataclasses pickle through
their constructor (`by_fields`, as in job.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .pickling import by_fields


class PreemptMode(enum.Enum):
    """How a preempted job keeps its work (real-time paper Table 1; hybrid paper §III-A).

    RESTART          NO-CKPT: all work is lost; the job restarts from the beginning.
    LAST_CHECKPOINT  SYS-CKPT / APP-CKPT: killed now, resumes from its last periodic
                     checkpoint (work since then is lost).
    JIT              JIT-CKPT: the job writes a checkpoint now; it releases its nodes when the
                     checkpoint is done and resumes from there (no work lost).
    WARNING          the malleable jobs' two-minute warning: the job saves its state during
                     the warning, releases its nodes at the end, resumes from the warning time.
    """

    RESTART = "none"
    LAST_CHECKPOINT = "last"
    JIT = "jit"
    WARNING = "warn"


class DecisionError(ValueError):
    """A decision the engine refused; the state is unchanged."""


@dataclass(frozen=True, slots=True, init=False)
class Start:
    job_id: int
    nodes: int | None = None  # malleable jobs: size within [min, max]; rigid: None
    block: int | None = None  # partition clusters: the block index to use
    reservation: str | None = None  # start inside this reservation
    # CPU-node machines (schedd/core/cpu_nodes.py): the (node, CPUs) pairs to take.
    place: tuple[tuple[int, int], ...] | None = None

    # Written out so that mypyc compiles it (as JobSpec's, job.py): compiled or not, a
    # dataclass's generated __init__ runs interpreted, and EASY builds a Start per job.
    def __init__(self, job_id: int, nodes: int | None = None, block: int | None = None,
                 reservation: str | None = None,
                 place: tuple[tuple[int, int], ...] | None = None) -> None:
        object.__setattr__(self, "job_id", job_id)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "reservation", reservation)
        object.__setattr__(self, "place", place)

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Preempt:
    job_id: int
    mode: PreemptMode

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Resize:
    job_id: int
    nodes: int

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Reserve:
    key: str
    nodes: int | None = None
    block: int | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Release:
    key: str

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class WakeAt:
    time: float

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


Decision = Start | Preempt | Resize | Reserve | Release | WakeAt
