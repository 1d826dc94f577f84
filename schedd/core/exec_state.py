"""The engine's records and the read-only surface a policy's view reads.

The option set, the commands and elastic requests the engine exchanges with its driver,
reservations, and the private execution record of a live job live here, below both the
engine that owns them and the view that exposes them, so that the view never imports the
engine (imports run one way: engine -> view -> these records).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .checkpoint import CheckpointPolicy
from .cluster import Allocation, Cluster, ClusterState
from .decisions import PreemptMode
from .job import Job, JobSpec, Notice
from .pickling import by_fields


@dataclass(frozen=True, slots=True)
class EngineOptions:
    checkpoint: CheckpointPolicy = field(default_factory=CheckpointPolicy)
    warning_s: float = 120.0  # malleable jobs' pre-preemption warning (hybrid paper)
    requeue_on_failure: bool = True  # else a job hit by a node failure ends FAILED
    mtbf_s: float = 0.0  # system mean time between node failures; 0 = no failures
    mttr_s: float = 6 * 3600.0  # mean repair time (exponential)
    ecc_changes_runtime: bool = True  # ET/RT move the actual runtime too (LOS paper §III-C)
    ecc_max_per_job: int = 0  # 0 = unlimited
    auto_checkpoint_done: bool = True  # the simulator plays the job agents
    # With external agents: virtual seconds after the modelled JIT checkpoint end before a
    # silent job is killed and requeued from its last checkpoint (0 = wait forever).
    checkpoint_timeout_s: float = 0.0
    keep_finished: bool = False  # keep finished Job objects (the daemon answers GetJob)
    # Forget a finished job's id (the daemon: its service refuses reused ids against the
    # results store), so a months-long run keeps no per-job state in the engine.
    forget_finished_ids: bool = False
    # A preempted job is requeued with the walltime it has left (its request less the work
    # it keeps), as the real-time authors' simulator does; off: it keeps its request.
    requeue_remaining: bool = False
    # Walltime enforced by a periodic check, as a resource manager's controller does
    # (Slurm tests time limits every 30 s): a job past its walltime is killed at the
    # first check at or after it, checks falling at phase + k x period. 0: killed at
    # its walltime exactly.
    walltime_check_s: float = 0.0
    walltime_check_phase_s: float = 0.0
    walltime_grace_s: float = 0.0  # past the walltime before a check kills (OverTimeLimit)

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Ecc:
    job_id: int
    time: float
    kind: str
    amount: float

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


@dataclass(frozen=True, slots=True)
class Command:
    """An instruction for the outside world (the daemon publishes these)."""

    kind: str  # "checkpoint" | "warning" | "start" | "stop" | "resize"
    job_id: int
    time: float
    deadline: float = -1.0

    def __reduce__(self) -> tuple[Any, ...]:
        return by_fields(self)


class Reservation:
    __slots__ = ("key", "alloc", "sub", "created")

    def __init__(self, key: str, alloc: Allocation, sub: ClusterState, created: float):
        self.key, self.alloc, self.sub, self.created = key, alloc, sub, created

    def __reduce__(self) -> tuple[Any, ...]:
        return (Reservation, (self.key, self.alloc, self.sub, self.created))

    @property
    def nodes(self) -> int:
        return self.alloc.nodes

    @property
    def free_nodes(self) -> int:
        return self.sub.free_nodes


# The execution record's fields (mypyc compiles _Exec to a fixed layout without a
# __slots__ attribute, so tests read the names from here).
EXEC_FIELDS = (
    "job", "spec", "work_total", "target", "work0", "last_ckpt_work", "seg", "seg_start",
    "seg_setup", "seg_restart", "c0", "speed", "interval", "ckpt_cost", "resume_read",
    "since_ckpt_ns", "since_ckpt_wall", "since_zero_ns", "since_zero_wall", "res_key",
    "ckpt_start", "ckpt_end", "ckpt_mode", "ecc_count", "busy_ns", "useful_ns", "lost_ns",
    "ckpt_ns", "restart_ns", "setup_ns", "t_ckpt", "t_pre", "executed", "checkpoints",
    "failures", "first_alloc", "orig_walltime", "owner_system", "used_nodes", "backfilled",
    "resumed", "resume_setup_ns", "preempt_ckpt_ns", "wall_done",
)


class _Exec:
    """Engine-private execution record of one live job (holds the hidden runtime)."""

    __slots__ = EXEC_FIELDS

    def __init__(self, job: Job, spec: JobSpec):
        self.job = job
        self.spec = spec
        self.work_total = spec.runtime
        self.target = min(spec.runtime, spec.walltime)
        self.work0 = 0.0
        self.last_ckpt_work = 0.0
        self.seg = 0
        self.seg_start = self.seg_setup = self.seg_restart = self.c0 = 0.0
        self.speed = 1.0
        self.interval: float | None = None
        self.ckpt_cost = 0.0
        self.resume_read = False
        self.since_ckpt_ns = self.since_ckpt_wall = 0.0
        self.since_zero_ns = self.since_zero_wall = 0.0
        self.res_key: str | None = None
        self.ckpt_start = self.ckpt_end = 0.0
        self.ckpt_mode: PreemptMode | None = None
        self.ecc_count = 0
        self.busy_ns = self.useful_ns = self.lost_ns = self.ckpt_ns = 0.0
        self.restart_ns = self.setup_ns = self.t_ckpt = self.t_pre = self.executed = 0.0
        self.checkpoints = self.failures = 0
        self.first_alloc = 0
        self.orig_walltime = spec.walltime
        self.owner_system = True
        self.used_nodes = 0  # nodes the job computes on (a partition may hold more)
        self.backfilled = False  # started while an earlier-submitted job waited
        self.resumed = False  # the current segment follows an interruption
        # Waste caused by interruptions beyond lost work and reads (the hybrid paper's
        # utilisation leaves it out): setup when resuming, preemption checkpoints/warnings.
        self.resume_setup_ns = self.preempt_ckpt_ns = 0.0
        # Work taken off the visible walltime at requeues (EngineOptions.requeue_remaining):
        # job.walltime + wall_done is always the whole request.
        self.wall_done = 0.0

    def __reduce__(self) -> tuple[Any, ...]:
        # Compiled by mypyc, pickle would call __init__ without the job and spec.
        return (_exec_of, (self.job, self.spec, tuple(getattr(self, n) for n in EXEC_FIELDS)))


def _exec_of(job: Job, spec: JobSpec, values: tuple[Any, ...]) -> _Exec:
    """An execution record with the given field values (unpickling)."""
    x = _Exec(job, spec)
    for name, value in zip(EXEC_FIELDS, values, strict=True):
        setattr(x, name, value)
    return x


class EngineReadout(Protocol):
    """What a policy's `View` reads of the engine (the engine satisfies it)."""

    now: float
    cluster: Cluster
    state: ClusterState
    options: EngineOptions
    jobs: dict[int, Job]
    queue: list[Job]
    running: dict[int, Job]
    notices: dict[int, Notice]
    reservations: dict[str, Reservation]
    n_checkpointing: int
    n_requested_start: int
    stats: dict[str, int]

    def running_by_end(self) -> Sequence[tuple[float, int]]: ...

    def exec_record(self, job_id: int) -> _Exec: ...

    def lost_if_preempted(self, job_id: int) -> float: ...

    def checkpoint_done_by(self, job_id: int, t: float) -> float: ...
