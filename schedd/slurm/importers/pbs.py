"""PBS/Torque (and PBS Pro / OpenPBS) accounting logs -> LogJobs.

One record per line: `MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value key=value ...`, the time
local to the server. Only `E` (job ended) records are jobs; every other type (Q queued,
S started, D deleted, A aborted, R rerun, ...) is counted and skipped, except that a D
record marks its job as deleted by a user or admin (qdel): that job's E record is then a
cancellation, at the D record's time.

From an E record: ctime (submit; qtime where ctime is missing), etime (eligible), start,
end (Unix times), Resource_List.walltime (limit), resources_used.walltime (runtime when
start or end is missing), Resource_List.nodect / nodes (nodes), Resource_List.ncpus,
exec_host or nodes x ppn (CPUs), queue, user, group, account, Exit_status. What
Exit_status becomes is in docs/import.md.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

from . import fields
from .build import Counts, LogJob
from .fields import FieldError, LogError, show

_RECORD = re.compile(r"(\d\d/\d\d/\d{4} \d\d:\d\d:\d\d);([A-Za-z]);([^;]*);(.*)")
_JOB_ID = re.compile(r"(\d+)(\[(\d*)\])?(?:\..*)?")
# Exit_status meaning the walltime ran out: Torque's JOB_EXEC_OVERLIMIT_WT (-11), PBS Pro /
# OpenPBS's JOB_EXEC_KILL_WALLTIME (-29).
WALLTIME_EXIT = (-11, -29)
SIGNAL_BASE = 256  # Exit_status above it: killed by signal (Exit_status - 256)


def read_pbs(path: str, text: str, *, tz: dt.tzinfo, lenient: bool,
             counts: Counts) -> list[LogJob]:
    ended: list[tuple[int, LogJob, str]] = []  # (line, job, its PBS id)
    deleted: dict[str, float] = {}  # PBS job id -> time of its first D record
    subjobs: list[int] = []  # indices into ended of array subjobs (123[4]): numbered later
    other: Counter[str] = Counter()
    use_account = False
    groups: dict[int, str | None] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            stamp, kind, pbs_id, message = _record(line)
            if kind == "D":
                deleted.setdefault(pbs_id, _stamp(stamp, tz))
            if kind != "E":
                other[kind] += 1
                continue
            m = _JOB_ID.fullmatch(pbs_id)
            if m is None:
                raise FieldError(f"expected a job id (123.server, 123[4].server) in the "
                                 f"third field, found {show(pbs_id)}")
            if m.group(2) is not None and m.group(3) == "":
                counts.drop("E records of job arrays as a whole (123[]); their subjobs "
                            "are jobs")
                continue
            values = _values(message)
            job, group = _job(values, lineno, int(m.group(1)))
        except FieldError as e:
            if not lenient:
                raise LogError.at(path, lineno, str(e)) from None
            counts.malformed += 1
            continue
        when = deleted.get(pbs_id)  # a qdel before this E record: a cancellation
        if when is not None:
            job.cancelled, job.state, job.cancel_time = True, "CANCELLED", when
            if job.end is None:
                job.end = when
        use_account |= job.account is not None
        groups[len(ended)] = group
        if m.group(2) is not None:
            subjobs.append(len(ended))
        ended.append((lineno, job, pbs_id))
    jobs = [job for _, job, _ in ended]
    if not use_account:  # no account= in the whole log: the group stands for it
        for index, job in enumerate(jobs):
            job.account = groups[index]
    if not use_account and ended:
        counts.note("with their group as account (no account= in the log)", len(ended))
    ended_ids = {pbs_id for _, _, pbs_id in ended}
    never = sum(1 for pbs_id in deleted if pbs_id not in ended_ids)
    if never:
        counts.drop("jobs deleted with no E record (never ran)", never)
    _number_subjobs(jobs, subjobs, counts)
    for kind, n in sorted(other.items()):
        counts.other_records[f"{kind} records (not job ends)"] += n
    return jobs


def _stamp(text: str, tz: dt.tzinfo) -> float:
    try:
        return fields.pbs_stamp(text, tz)
    except FieldError:
        raise FieldError(f"expected a record time MM/DD/YYYY HH:MM:SS on a real date, found "
                         f"{show(text)}") from None


def _record(line: str) -> tuple[str, str, str, str]:
    m = _RECORD.fullmatch(line)
    if m is None:
        raise FieldError("expected a record MM/DD/YYYY HH:MM:SS;TYPE;JOBID;MESSAGE, found "
                         f"{show(line)}")
    return m.group(1), m.group(2), m.group(3), m.group(4)


def _values(message: str) -> dict[str, str]:
    """key -> value of an E record's message. A word without '=' continues the value
    before it (a job name with blanks); double quotes around a value are removed."""
    out: dict[str, str] = {}
    key = None
    for word in message.split(" "):
        name, eq, value = word.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_][\w.]*", name):
            key = name
            out[key] = value
        elif key is not None:
            out[key] += " " + word
    return {k: v[1:-1] if len(v) > 1 and v[0] == v[-1] == '"' else v
            for k, v in out.items()}


def _job(values: dict[str, str], lineno: int, job_id: int) -> tuple[LogJob, str | None]:
    submit = _epoch(values, "ctime") or _epoch(values, "qtime")
    if submit is None:
        raise FieldError("expected a submit time ctime= (or qtime=) in this E record, found "
                         "none")
    job = LogJob(line=lineno, job_id=job_id, submit=submit, end=_epoch(values, "end"))
    job.start = _epoch(values, "start")
    job.eligible = _epoch(values, "etime")
    used = _duration(values, "resources_used.walltime")
    if job.start is not None and job.end is None and used is not None:
        job.end = job.start + used
    job.limit = _duration(values, "Resource_List.walltime")
    nodes, per_node = _nodes(values.get("Resource_List.nodes", ""))
    job.req_nodes = _whole(values, "Resource_List.nodect") or nodes
    ncpus = _whole(values, "Resource_List.ncpus") or None
    job.req_procs = ncpus or per_node or _whole(values, "Resource_List.procs") or None
    job.procs = ncpus or _exec_host_cpus(values.get("exec_host", "")) or job.req_procs
    job.user = values.get("user") or None
    job.queue = values.get("queue") or None
    job.account = values.get("account") or None
    job.state = _state(values, job)
    return job, values.get("group") or None


def _state(values: dict[str, str], job: LogJob) -> str:
    text = values.get("Exit_status")
    if text is None:
        return "UNKNOWN"
    if not re.fullmatch(r"-?\d+", text):
        raise FieldError(f"expected a whole number in Exit_status, found {show(text)}")
    status = int(text)
    if status in WALLTIME_EXIT:
        return "TIMEOUT"
    if status == 0:
        return "COMPLETED"
    if status < 0:
        return "FAILED"  # the job could not be started or run (JOB_EXEC_* codes)
    if status > SIGNAL_BASE:
        used = _duration(values, "resources_used.walltime")
        limit = job.limit if isinstance(job.limit, float) else None
        if used is not None and limit is not None and used >= limit:
            return "TIMEOUT"  # killed by a signal at its walltime (e.g. 265, 271)
        return "KILLED"
    return "FAILED"


def _epoch(values: dict[str, str], key: str) -> float | None:
    text = values.get(key)
    if text is None or text == "":
        return None
    if not text.isdigit():
        raise FieldError(f"expected a Unix time in {key}=, found {show(text)}")
    value = int(text)
    return float(value) if value > 0 else None


def _duration(values: dict[str, str], key: str) -> float | None:
    text = values.get(key)
    if text is None or text == "":
        return None
    try:
        return fields.pbs_duration(text)
    except FieldError as e:
        raise FieldError(f"expected {e} in {key}=, found {show(text)}") from None


def _whole(values: dict[str, str], key: str) -> int:
    text = values.get(key, "")
    if text == "":
        return 0
    if not text.isdigit():
        raise FieldError(f"expected a whole number in {key}=, found {show(text)}")
    return int(text)


def _nodes(spec: str) -> tuple[int | None, int | None]:
    """(nodes, CPUs) of a Torque nodes spec: `2:ppn=8+1:ppn=4` -> (3, 20); a host name
    (`n001+n002`) counts one node; ppn absent means 1 per node."""
    if not spec:
        return None, None
    nodes = cpus = 0
    for part in spec.split("+"):
        head, *props = part.split(":")
        count = int(head) if head.isdigit() else 1
        ppn = 1
        for prop in props:
            key, _, value = prop.partition("=")
            if key == "ppn" and value.isdigit():
                ppn = int(value)
        nodes += count
        cpus += count * ppn
    return nodes, cpus


def _exec_host_cpus(text: str) -> int | None:
    """CPUs in exec_host: Torque `n1/0-3+n2/0,2` (cores listed), PBS Pro `n1/0*8+n2/0*8`."""
    if not text:
        return None
    total = 0
    for part in text.split("+"):
        _, slash, slots = part.partition("/")
        if not slash:
            return None
        if "*" in slots:
            n = slots.split("*", 1)[1]
            total += int(n) if n.isdigit() else 1
            continue
        for item in slots.split(","):
            lo, dash, hi = item.partition("-")
            if dash and lo.isdigit() and hi.isdigit():
                total += int(hi) - int(lo) + 1
            else:
                total += 1
    return total or None


def _number_subjobs(jobs: list[LogJob], subjobs: list[int], counts: Counts) -> None:
    """Array subjobs (123[4]) share their array's number: they get the next numbers above
    every other id, in the order of their E records."""
    if not subjobs:
        return
    top = max(j.job_id for j in jobs)
    for k, index in enumerate(subjobs, start=1):
        jobs[index].job_id = top + k
    counts.note(f"array subjobs (123[4]: numbered from {top + 1})", len(subjobs))
