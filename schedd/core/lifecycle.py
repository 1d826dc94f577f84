"""The job state machine: one table of legal moves, and the move itself.

Every transition records (time, new state, cause) in the job's history so an illegal move
can be reported with the job's story.
"""

from __future__ import annotations

from typing import Final

from .errors import IllegalTransition
from .job import Job, JobState

__all__ = ["TRANSITIONS", "IllegalTransition", "legal", "story", "transition"]

# Final: compiled code keeps each in a C static, not a lookup in the module's globals.
Q: Final = JobState.QUEUED
R: Final = JobState.RUNNING
C: Final = JobState.CHECKPOINTING
P: Final = JobState.PREEMPTED
DONE: Final = JobState.COMPLETED
KILLED: Final = JobState.KILLED
CANCELLED: Final = JobState.CANCELLED
FAILED: Final = JobState.FAILED

TRANSITIONS: Final[dict[JobState, frozenset[JobState]]] = {
    Q: frozenset({R, CANCELLED}),
    # RUNNING -> PREEMPTED: immediate preemption (NO/SYS/APP-CKPT) or requeue after failure
    R: frozenset({DONE, KILLED, C, P, CANCELLED, FAILED}),
    # CHECKPOINTING -> PREEMPTED when the checkpoint is done (or the failure requeues it)
    C: frozenset({P, CANCELLED, FAILED}),
    P: frozenset({R, CANCELLED}),
    DONE: frozenset(),
    KILLED: frozenset(),
    CANCELLED: frozenset(),
    FAILED: frozenset(),
}

HISTORY_LIMIT: Final = 32  # keep a job's recent story bounded; long-lived jobs restart many times


def story(job: Job) -> str:
    return "; ".join(f"t={t:g} {state.value} ({cause})" for t, state, cause in job.history)


def legal(frm: JobState, to: JobState) -> bool:
    """`to in TRANSITIONS[frm]` by identity: an Enum's hash is a Python-level call, and
    this runs at every move (a test keeps it equal to the table)."""
    if frm is Q or frm is P:
        return to is R or to is CANCELLED
    if frm is R:
        return to is not R and to is not Q
    if frm is C:
        return to is P or to is CANCELLED or to is FAILED
    return False


def transition(job: Job, to: JobState, now: float, cause: str) -> None:
    if not legal(job.state, to):
        raise IllegalTransition(
            f"job {job.id}: illegal move {job.state.value} -> {to.value} at t={now:g} "
            f"caused by {cause}; story: {story(job)}"
        )
    job.state = to
    history = job.history
    history.append((now, to, cause))
    if len(history) > HISTORY_LIMIT:
        del history[0]
