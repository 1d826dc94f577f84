"""From jobs read out of a log to a trace: one place for what every format shares.

A format reader (sacct.py, jobcomp.py, pbs.py) turns each record into a LogJob (absolute
Unix times, names as text) and counts what it skips; `build_trace` numbers the names in
order of first appearance, makes the times relative to the earliest submit, applies the
rules of docs/import.md (a job cancelled before it started keeps its place in the queue
for its time limit, ...) and returns the Trace with its header. Nothing is dropped here
or in a reader without being counted in `Counts`, which says it all in one line.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ...traces.swf import COLUMNS, Trace, TraceHeader, absent_column

# SWF field 11 (status): 1 completed, 0 failed or killed, 5 cancelled.
_STATUS = {"COMPLETED": 1, "CANCELLED": 5}
# started_by (field 40) from Slurm's job flags
STARTED_BY = {"SchedSubmit": 1, "SchedMain": 2, "SchedBackfill": 3}
DEP_KINDS = {"afterok": 1, "afterany": 2, "afternotok": 3}


@dataclass
class LogJob:
    """One job as a log tells it. Times are Unix seconds; None is "not in the log"."""

    line: int
    job_id: int
    submit: float
    end: float | None  # None: still running (not imported); start + elapsed if no End
    start: float | None = None  # None: never started
    eligible: float | None = None
    limit: float | str | None = None  # seconds, or fields.UNLIMITED / PARTITION_LIMIT
    procs: int | None = None  # allocated CPUs (NCPUS)
    req_procs: int | None = None
    req_nodes: int | None = None
    exclusive: int | None = None
    user: str | None = None
    account: str | None = None
    partition: str | None = None
    queue: str | None = None
    qos: str | None = None
    state: str | None = None  # the base state word: COMPLETED, CANCELLED, TIMEOUT, ...
    cancelled: bool = False  # by a user or admin (state CANCELLED, PBS D record)
    cancel_time: float | None = None  # when, if not at `end`
    priority: float | None = None
    started_by: int | None = None
    dep_job: int | None = None  # the job it depends on (field 17)
    dep_kind: int | None = None


@dataclass
class Counts:
    """What was not imported, and what was imported with a rule applied, by reason (in
    the order first met; reasons are short phrases that read after a number)."""

    dropped: Counter[str] = field(default_factory=Counter)
    changed: Counter[str] = field(default_factory=Counter)
    malformed: int = 0  # lines skipped by --lenient
    other_records: Counter[str] = field(default_factory=Counter)  # not job records

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] += n

    def note(self, what: str, n: int = 1) -> None:
        self.changed[what] += n

    def line(self, kept: int, source: str) -> str:
        """The one summary: kept jobs, then every count (none left unsaid)."""
        text = f"{kept:,} jobs of {os.path.basename(source)}"
        skipped = [f"{n:,} {why}" for why, n in self.dropped.items() if n]
        skipped += [f"{n:,} {kind}" for kind, n in self.other_records.items() if n]
        if self.malformed:
            skipped.append(f"{self.malformed:,} malformed lines (--lenient)")
        if skipped:
            text += "; not imported: " + ", ".join(skipped)
        notes = [f"{n:,} {what}" for what, n in self.changed.items() if n]
        if notes:
            text += "; imported with a rule: " + ", ".join(notes)
        return text


@dataclass(frozen=True)
class Machine:
    """The machine's size when the caller knows it (--nodes, --cpus-per-node) and the
    partitions' MaxTime (--max-time), for jobs whose limit is UNLIMITED or the partition's."""

    nodes: int | None = None
    cpus_per_node: int | None = None
    max_time: dict[str, float] = field(default_factory=dict)  # partition ("" = any) -> s


_NAME_KINDS = ("user", "account", "partition", "queue", "qos", "state")
_NAME_COLUMNS = {"user": "user", "account": "group", "partition": "partition",
                 "queue": "queue", "qos": "qos", "state": "state"}


def build_trace(jobs: list[LogJob], counts: Counts, machine: Machine, *, path: str,
                header_lines: list[str]) -> Trace:
    """The trace of `jobs` (already filtered by the reader): see the module docstring."""
    jobs = _last_record_per_id(jobs, counts)
    jobs = [j for j in jobs if _keep(j, counts)]
    jobs.sort(key=lambda j: (j.submit, j.job_id))
    n = len(jobs)
    origin = min((j.submit for j in jobs), default=0.0)
    names: dict[str, dict[str, int]] = {kind: {} for kind in _NAME_KINDS}
    cols: dict[str, np.ndarray] = {c.name: np.array(absent_column(c.name, n)) for c in COLUMNS}
    for i, job in enumerate(jobs):
        _fill_row(cols, i, job, origin, names, machine, counts)
    header = TraceHeader(
        max_nodes=machine.nodes or _largest(cols["req_nodes"]),
        max_procs=_max_procs(machine, cols),
        unix_start_time=int(origin) if n else None,
        lines=list(header_lines),
        names={kind: {number: name for name, number in numbered.items()}
               for kind, numbered in names.items() if numbered},
    )
    return Trace(path=path, header=header, columns=cols, eccs=[])


def _last_record_per_id(jobs: list[LogJob], counts: Counts) -> list[LogJob]:
    """One record per job id, the last (sacct --duplicates lists a requeued job's earlier
    runs first; PBS writes an E record per run)."""
    last: dict[int, LogJob] = {}
    for job in jobs:
        if job.job_id in last:
            counts.drop("earlier records of a job id given again (requeued jobs: the last "
                        "record kept)")
        last[job.job_id] = job
    return list(last.values()) if len(last) < len(jobs) else jobs


def _keep(job: LogJob, counts: Counts) -> bool:
    if job.start is None and not job.cancelled and job.state not in _UNFINISHED:
        counts.drop("that never started and were not cancelled")
        return False
    if job.end is None:
        counts.drop("cancelled before they started, with no end time (when is unknown)"
                    if job.cancelled and job.start is None else
                    "not finished when the log was written (no end time)")
        return False
    return True


_UNFINISHED = ("PENDING", "RUNNING", "SUSPENDED", "REQUEUED", "RESIZING", "CONFIGURING",
               "COMPLETING", "STOPPED", "SIGNALING", "STAGE_OUT", "REQUEUE_HOLD",
               "REQUEUE_FED", "RESV_DEL_HOLD")  # Slurm states of a job not yet over


def _fill_row(cols: dict[str, np.ndarray], i: int, job: LogJob, origin: float,
              names: dict[str, dict[str, int]], machine: Machine, counts: Counts) -> None:
    assert job.end is not None
    limit = _limit_seconds(job, machine, counts)
    if job.start is not None:
        runtime = max(job.end - job.start, 0.0)
        cols["wait"][i] = job.start - job.submit
        if job.cancelled:
            counts.note("cancelled while running (runtime = their elapsed time, "
                        "cancel_time = their end)")
    else:  # cancelled before it started: it held its place in the queue until then
        runtime = limit if limit is not None else 0.0
        counts.note("cancelled before they started (runtime = their time limit, "
                    "cancel_time = their end)" if limit is not None else
                    "cancelled before they started, with no time limit (runtime 0)")
    cols["job_id"][i] = job.job_id
    cols["submit"][i] = job.submit - origin
    cols["runtime"][i] = runtime
    cols["procs"][i] = _or_absent(job.procs)
    cols["req_procs"][i] = _or_absent(job.req_procs)
    cols["req_time"][i] = -1.0 if limit is None else limit
    cols["status"][i] = _STATUS.get(job.state or "", 0 if job.state else -1)
    if job.cancelled:
        cols["status"][i] = 5
        when = job.end if job.cancel_time is None else job.cancel_time
        cols["cancel_time"][i] = max(when, job.submit) - origin
    if job.eligible is not None:
        eligible = job.eligible
        if eligible < job.submit:
            counts.note("eligible before their submit time (taken as the submit time)")
            eligible = job.submit
        cols["eligible"][i] = eligible - origin
    cols["req_nodes"][i] = _or_absent(job.req_nodes)
    cols["exclusive"][i] = _or_absent(job.exclusive)
    cols["priority"][i] = -1.0 if job.priority is None else job.priority
    cols["started_by"][i] = _or_absent(job.started_by)
    if job.dep_job is not None:
        cols["prev_job"][i] = job.dep_job
        cols["dep_kind"][i] = _or_absent(job.dep_kind)
    for kind in _NAME_KINDS:
        name = getattr(job, kind)
        if name:
            numbered = names[kind]
            cols[_NAME_COLUMNS[kind]][i] = numbered.setdefault(name, len(numbered) + 1)


def _limit_seconds(job: LogJob, machine: Machine, counts: Counts) -> float | None:
    """The job's time limit in seconds, None when the log gives none we can use."""
    if job.limit is None:
        counts.note("with no time limit in the log (requested time -1)")
        return None
    if isinstance(job.limit, str):
        given = machine.max_time.get(job.partition or "", machine.max_time.get(""))
        if given is not None:
            counts.note(f"with a time limit {_LIMIT_WORD[job.limit]} (requested time = "
                        "--max-time)")
            return given
        counts.note(f"with a time limit {_LIMIT_WORD[job.limit]} (requested time -1)")
        return None
    return float(job.limit)


_LIMIT_WORD = {"unlimited": "UNLIMITED", "partition": "of their partition (Partition_Limit)"}


def _or_absent(value: int | None) -> int:
    return -1 if value is None else value


def _largest(col: np.ndarray) -> int | None:
    top = int(col.max()) if len(col) else -1
    return top if top > 0 else None


def _max_procs(machine: Machine, cols: dict[str, np.ndarray]) -> int | None:
    if machine.nodes and machine.cpus_per_node:
        return machine.nodes * machine.cpus_per_node
    return _largest(np.maximum(cols["procs"], cols["req_procs"]))
