"""Slurm's jobcomp/filetxt log (JobCompType=jobcomp/filetxt) -> LogJobs.

One line per finished job, written by jobcomp_p_log_record() in
src/plugins/jobcomp/filetxt/jobcomp_filetxt.c (Slurm 22.05):

    JobId=%lu UserId=%s(%lu) GroupId=%s(%lu) Name=%s JobState=%s Partition=%s
    TimeLimit=%s StartTime=%s EndTime=%s NodeList=%s NodeCnt=%u ProcCnt=%u WorkDir=%s
    ReservationName=%s Tres=%s Account=%s QOS=%s WcKey=%s Cluster=%s SubmitTime=%s
    EligibleTime=%s[ ArrayJobId=%u ArrayTaskId=%u][ HetJobId=%u HetJobOffset=%u]
    DerivedExitCode=%s ExitCode=%s %s

Values are not quoted: a job name or directory may hold blanks, Tres holds '='. A value
runs up to the next ` Key=` of a key the format has (Slurm's own reader cuts at the first
blank instead, which loses such names). Tres is what the job requested (cpu=, node=:
req_procs and, for a job that never got nodes, req_nodes). TimeLimit is in minutes (or
UNLIMITED; NO_VAL when the job took its partition's and the partition was gone), times
are `%FT%T` local time or Unknown (StartTime of a job cancelled before it started) and
`unknown` (SubmitTime, EligibleTime not set).
"""

from __future__ import annotations

import datetime as dt
import re

from . import fields
from .build import Counts, LogJob
from .fields import FieldError, LogError, show

KEYS = ("JobId", "UserId", "GroupId", "Name", "JobState", "Partition", "TimeLimit",
        "StartTime", "EndTime", "NodeList", "NodeCnt", "ProcCnt", "WorkDir",
        "ReservationName", "Tres", "Account", "QOS", "WcKey", "Cluster", "SubmitTime",
        "EligibleTime", "ArrayJobId", "ArrayTaskId", "HetJobId", "HetJobOffset",
        "DerivedExitCode", "ExitCode")
REQUIRED = ("JobId", "JobState", "TimeLimit", "StartTime", "EndTime", "NodeCnt",
            "ProcCnt", "SubmitTime")
_KEY = re.compile(r"(?:^|(?<= ))(" + "|".join(KEYS) + r")=")
_OWNER = re.compile(r"(.*)\((\d+)\)")
_NO_NODES = ("(null)", "", "None assigned")


def read_jobcomp(path: str, text: str, *, tz: dt.tzinfo, lenient: bool,
                 counts: Counts) -> list[LogJob]:
    jobs: list[LogJob] = []
    any_account = False
    groups: list[tuple[LogJob, str | None]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            values = _values(line)
            job, group = _job(values, lineno, tz)
        except FieldError as e:
            if not lenient:
                raise LogError.at(path, lineno, str(e)) from None
            counts.malformed += 1
            continue
        any_account |= job.account is not None
        groups.append((job, group))
        jobs.append(job)
    if not any_account:  # no Account in the whole log: the group stands for it
        for job, group in groups:
            job.account = group
        if groups:
            counts.note("with their group as account (no Account in the log)", len(groups))
    return jobs


def _values(line: str) -> dict[str, str]:
    """Key -> value text of one line (values run to the next known ` Key=`)."""
    found = list(_KEY.finditer(line))
    if not found or found[0].start() != 0 or found[0].group(1) != "JobId":
        raise FieldError(f"expected a line of Key=value fields starting with JobId=, found "
                         f"{show(line)}")
    out: dict[str, str] = {}
    for k, m in enumerate(found):
        end = found[k + 1].start() - 1 if k + 1 < len(found) else len(line)
        out.setdefault(m.group(1), line[m.end():end])
    missing = [key for key in REQUIRED if key not in out]
    if missing:
        raise FieldError(f"expected the field {missing[0]}= on every line, found none")
    out["ExitCode"] = out.get("ExitCode", "").split(" ", 1)[0]  # then the select plugin's
    return out


def _job(values: dict[str, str], lineno: int, tz: dt.tzinfo) -> tuple[LogJob, str | None]:
    job_id = _number(values, "JobId")
    submit = _time(values, "SubmitTime", tz)
    if submit is None:
        raise FieldError(f"expected a time in field SubmitTime (YYYY-MM-DDTHH:MM:SS), found "
                         f"{show(values['SubmitTime'])}")
    job = LogJob(line=lineno, job_id=job_id, submit=submit, end=_time(values, "EndTime", tz))
    job.start = _time(values, "StartTime", tz)
    if values.get("NodeList", "").strip() in _NO_NODES:
        job.start = None  # never got nodes: cancelled (or failed) before it started
    job.eligible = _time(values, "EligibleTime", tz)
    try:
        job.limit = fields.slurm_limit_minutes(values["TimeLimit"])
    except FieldError as e:
        raise FieldError(f"expected {e} in field TimeLimit, found "
                         f"{show(values['TimeLimit'])}") from None
    nodes, cpus = _number(values, "NodeCnt"), _number(values, "ProcCnt")
    asked = _tres(values.get("Tres", ""))  # what was requested (a job that never ran too)
    job.req_nodes = nodes or asked.get("node")
    job.procs = cpus or None
    job.req_procs = asked.get("cpu")
    state = values["JobState"].strip()
    if not re.fullmatch(r"[A-Z][A-Z_]*", state):
        raise FieldError(f"expected a job state in field JobState (COMPLETED, CANCELLED, "
                         f"TIMEOUT, ...), found {show(state)}")
    job.state = state
    job.cancelled = state == "CANCELLED"
    job.user = _owner(values.get("UserId", ""))
    job.partition = values.get("Partition", "").strip() or None
    job.account = values.get("Account", "").strip() or None
    job.qos = values.get("QOS", "").strip() or None
    return job, _owner(values.get("GroupId", ""))


def _tres(text: str) -> dict[str, int]:
    """Whole-number counts of a TRES string `cpu=4,mem=8G,node=1,billing=4` (mem and the
    like, with units, are left out)."""
    out: dict[str, int] = {}
    for item in text.strip().split(","):
        name, eq, value = item.partition("=")
        if eq and value.isdigit() and int(value) > 0:
            out[name] = int(value)
    return out


def _owner(text: str) -> str | None:
    """`alice(1000)` -> alice (the number when the name could not be looked up)."""
    m = _OWNER.fullmatch(text.strip())
    name = m.group(1) if m else text.strip()
    return name or (m.group(2) if m else None)


def _number(values: dict[str, str], key: str) -> int:
    text = values[key].strip()
    if not text.isdigit():
        raise FieldError(f"expected a whole number in field {key}, found {show(text)}")
    return int(text)


def _time(values: dict[str, str], key: str, tz: dt.tzinfo) -> float | None:
    text = values.get(key, "").strip()
    if text in ("Unknown", "unknown", "None", ""):
        return None
    try:
        return fields.iso_time(text, tz)
    except FieldError:
        raise FieldError(f"expected a time in field {key} (YYYY-MM-DDTHH:MM:SS or Unknown), "
                         f"found {show(text)}") from None
