"""Plain data the daemon keeps outside the engine: job records, stimuli, events.

The engine's own objects are only touched in the engine thread; the event loop answers
queries from these records, which the engine thread builds after each iteration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.engine import Ecc
from ..core.job import Job, JobClass, JobSpec, JobState, Notice
from ..core.spec_rows import plain_spec

PENDING = "pending"  # accepted; the engine has not seen it arrive yet
WAITING_STATES = ("queued", "preempted")
HOLDING_STATES = ("running", "checkpointing")
FINAL_STATES = ("completed", "killed", "cancelled", "failed")

# Transition (state, cause) -> event kind.
_EVENT_OF_STATE = {
    JobState.QUEUED: "queued", JobState.RUNNING: "started",
    JobState.CHECKPOINTING: "checkpointing", JobState.PREEMPTED: "preempted",
    JobState.COMPLETED: "completed", JobState.KILLED: "killed",
    JobState.CANCELLED: "cancelled", JobState.FAILED: "failed",
}


def event_kind(state: JobState, cause: str) -> str:
    if state is JobState.RUNNING and cause == "resize":
        return "resized"
    return _EVENT_OF_STATE[state]


@dataclass
class JobRecord:
    job_id: int
    state: str
    job_class: str  # JobClass letter
    nodes: int
    walltime: float
    submit: float
    owner: str = ""
    min_nodes: int = -1
    alloc_nodes: int = 0
    first_start: float = -1.0
    last_start: float = -1.0
    predicted_end: float = -1.0
    end_time: float = -1.0
    preemptions: int = 0
    user: int = -1
    project: int = -1
    queue: int = -1
    block: str = ""
    requested_start: float = -1.0
    executed: float = 0.0
    checkpoints: int = 0

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def wait(self, now: float) -> float:
        if self.first_start >= 0:
            return self.first_start - self.submit
        end = self.end_time if self.end_time >= 0 else now
        return max(0.0, end - self.submit)


_RECORD_FIELDS = tuple(f.name for f in fields(JobRecord))


def encode_record(rec: JobRecord) -> str:
    """A record as the results store keeps it (JSON list in field order)."""
    return json.dumps([getattr(rec, name) for name in _RECORD_FIELDS],
                      separators=(",", ":"))


def decode_record(text: str) -> JobRecord:
    return JobRecord(*json.loads(text))


def record_of_spec(spec: JobSpec, owner: str) -> JobRecord:
    # By position (the fields up to requested_start), once per submission (issue 21).
    return JobRecord(spec.id, PENDING, spec.job_class._value_, spec.nodes, spec.walltime,
                     spec.submit, owner, spec.min_nodes, 0, -1.0, -1.0, -1.0, -1.0, 0,
                     spec.user, spec.project, spec.queue, "", spec.requested_start)


def record_of_job(job: Job, block: str) -> JobRecord:
    return JobRecord(
        job.id, job.state.value, job.job_class.value, job.nodes, job.walltime, job.submit,
        min_nodes=job.min_nodes, alloc_nodes=job.alloc_nodes, first_start=job.first_start,
        last_start=job.last_start,
        predicted_end=job.predicted_end if job.state.holds_nodes else -1.0,
        end_time=job.end_time, preemptions=job.preemptions, user=job.user,
        project=job.project, queue=job.queue, block=block,
        requested_start=job.requested_start,
    )


# ---------------------------------------------------------------- stimuli
# A stimulus is what a client asked for, as journalled: its kind (submit, cancel, notice,
# ecc, checkpoint_done) and a JSON body.


@dataclass
class Stimulus:
    kind: str
    body: dict[str, Any]
    owner: str = ""
    request_id: str = ""
    seq: int = 0  # journal sequence number, set when committed
    response: dict[str, Any] = field(default_factory=dict)
    spec: JobSpec | None = None  # a submission's job, so nobody rebuilds it from the body

    def job_spec(self) -> JobSpec:
        if self.spec is None:  # read back from the journal
            self.spec = spec_of_body(self.body)
        return self.spec

    @property
    def job_id(self) -> int:
        return int(self.body["id"] if self.kind == "submit" else self.body["job_id"])


_BODY_FIELDS = tuple(f.name for f in fields(JobSpec) if f.name not in ("job_class", "notice"))


# The journal's JSON form of a job (plain values; notices travel on their own): the
# fields of _BODY_FIELDS in order, then the class letter. Compiled and written out rather
# than a loop over the names, since every submission builds one (issue 21);
# tests/test_daemon_records.py holds it to _BODY_FIELDS.
spec_body = plain_spec


def spec_of_body(body: dict[str, Any]) -> JobSpec:
    values = dict(body)
    values["job_class"] = JobClass.from_letter(values["job_class"])
    return JobSpec(**values)


def notice_of_body(body: dict[str, Any]) -> Notice:
    return Notice(body["time"], body["est_arrival"], body["nodes"], body["walltime"])


def ecc_of_body(body: dict[str, Any]) -> Ecc:
    return Ecc(body["job_id"], body["time"], body["kind"], body["amount"])
