"""`sacct --parsable2` output (with its header) -> LogJobs.

Columns may come in any order and any subset that holds a job id (JobIDRaw, else JobID),
Submit, Start, End or Elapsed (ElapsedRaw), Timelimit (or TimelimitRaw), and NNodes or
NCPUS; User, Account, Partition, QOS, Eligible, State, Priority, ReqNodes, ReqCPUS, Flags
and SubmitLine are used when present. Values are read as Slurm 22.05's sacct prints them
(src/sacct/print.c); docs/import.md has the details and what each becomes.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from . import fields
from .build import DEP_KINDS, STARTED_BY, Counts, LogJob
from .fields import FieldError, LogError, show
from .submit_line import MODELLED, submit_options

# The columns a job needs: each entry lists the names that can give it, preferred first.
REQUIRED = (("JobIDRaw", "JobID"), ("Submit",), ("Start",), ("End", "ElapsedRaw", "Elapsed"),
            ("Timelimit", "TimelimitRaw"), ("NNodes", "NCPUS", "AllocCPUS"))
_FREE_TEXT = ("SubmitLine", "JobName")  # columns whose text may hold a '|' (rejoined)
_JOB_ID = re.compile(r"(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(\.\S+)?")
_STATE = re.compile(r"([A-Z][A-Z_]*)\+?(?: by (\d+))?")
_NOT_A_TIME = ("Unknown", "None", "")
_NEVER_RAN_NODES = ("None assigned",)


@dataclass
class _Columns:
    """Column name (as sacct spells it) -> index, for the names in the header."""

    index: dict[str, int]
    count: int

    def get(self, row: list[str], *names: str) -> tuple[str, str] | None:
        """(name, text) of the first of `names` the header has, or None."""
        for name in names:
            i = self.index.get(name.lower())
            if i is not None:
                return name, row[i]
        return None

    def has(self, *names: str) -> bool:
        return any(name.lower() in self.index for name in names)


def read_sacct(path: str, text: str, *, tz: dt.tzinfo, lenient: bool,
               counts: Counts) -> list[LogJob]:
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise LogError.at(path, None, "expected sacct --parsable2 output with its header "
                          "line, found an empty file")
    header_text = lines[first].rstrip("\r")
    trailing = header_text.endswith("|")  # --parsable (not 2) ends every line with '|'
    names = (header_text[:-1] if trailing else header_text).split("|")
    cols = _header(path, first + 1, names)
    reader = _Rows(path, tz, cols, trailing)
    jobs: list[LogJob] = []
    targets: dict[int, list[tuple[str, str]]] = {}  # job index -> its dependencies
    no_raw: list[int] = []  # indices of jobs whose id is not a plain number (no JobIDRaw)
    job_ids: dict[str, int] = {}  # JobID text -> job id, to resolve dependency targets
    i = first + 1
    while i < len(lines):
        lineno = i + 1
        row, i, why = reader.row(lines, i)
        try:
            if why is not None:
                raise _BadField(why)
            if row is None:
                continue
            got = reader.job(row, lineno, counts)
        except _BadField as e:
            if not lenient:
                raise LogError.at(path, lineno, str(e)) from None
            counts.malformed += 1
            continue
        if got is None:
            continue
        job, jobid_text, plain, deps = got
        if not plain:
            no_raw.append(len(jobs))
        elif jobid_text:
            job_ids[jobid_text] = job.job_id
        if deps:
            targets[len(jobs)] = deps
        jobs.append(job)
    _number_unplain(jobs, no_raw, counts)
    _resolve_dependencies(jobs, targets, job_ids, counts)
    return jobs


def _header(path: str, lineno: int, names: list[str]) -> _Columns:
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        index.setdefault(name.strip().lower(), i)
    cols = _Columns(index, len(names))
    if not cols.has("JobIDRaw", "JobID", "Submit", "Start"):
        raise LogError.at(path, lineno, "expected a header line of column names (sacct "
                          "--parsable2 prints one unless --noheader), found "
                          f"{show('|'.join(names))}")
    for choice in REQUIRED:
        if not cols.has(*choice):
            raise LogError.at(path, lineno, "expected a column " + " or ".join(choice) +
                              " in the header (a job id, Submit, Start, End or Elapsed, "
                              "Timelimit and NNodes or NCPUS), found none")
    return cols


class _BadField(Exception):
    """One field of a row could not be read; the message is the 'expected ...' sentence."""


class _Rows:
    def __init__(self, path: str, tz: dt.tzinfo, cols: _Columns, trailing: bool):
        self.path, self.tz, self.cols, self.trailing = path, tz, cols, trailing
        self.free = next((cols.index[n.lower()] for n in _FREE_TEXT if cols.has(n)), None)

    def row(self, lines: list[str], i: int) -> tuple[list[str] | None, int, str | None]:
        """(the fields of the record starting at line i, where the next one starts, why
        it cannot be read). A '|' inside SubmitLine (or JobName) makes too many fields:
        they are joined back; a line break inside one makes too few: the next lines are
        joined on."""
        text = lines[i].rstrip("\r")
        i += 1
        if not text.strip():
            return None, i, None
        parts = self._split(text)
        while len(parts) < self.cols.count and self.free is not None and i < len(lines):
            more = self._split(lines[i].rstrip("\r"))
            if len(parts) + len(more) - 1 > self.cols.count:
                break
            parts[-1] += "\n" + more[0]
            parts.extend(more[1:])
            i += 1
        extra = len(parts) - self.cols.count
        if extra > 0 and self.free is not None:
            f = self.free
            parts[f:f + extra + 1] = ["|".join(parts[f:f + extra + 1])]
        if len(parts) != self.cols.count:
            return None, i, (f"expected {self.cols.count} '|'-separated fields as in the "
                             f"header, found {len(parts)}")
        return parts, i, None

    def _split(self, text: str) -> list[str]:
        if self.trailing and text.endswith("|"):
            text = text[:-1]
        return text.split("|")

    def job(self, row: list[str], lineno: int, counts: Counts
            ) -> tuple[LogJob, str, bool, list[tuple[str, str]]] | None:
        """(the job, its JobID text, whether its id is a plain number, its dependencies),
        or None for a row that is not a job (a step, an array of tasks that never ran)."""
        cols = self.cols
        id_col, id_text = cols.get(row, "JobIDRaw", "JobID")  # type: ignore[misc]
        jobid = cols.get(row, "JobID")
        jobid_text = jobid[1].strip() if jobid else id_text.strip()
        m = _JOB_ID.fullmatch(id_text.strip())
        if m is None:
            raise _BadField(f"expected a job id in column {id_col} (123, 123_4, 123+1, or "
                            f"123.batch for a step), found {show(id_text)}")
        shown = _JOB_ID.fullmatch(jobid_text) or m  # JobID tells steps and arrays apart
        if m.group(4) or shown.group(4):
            counts.drop("job steps (123.batch, 123.extern, 123.0, ...)")
            return None
        if (shown.group(2) or "").startswith("["):
            counts.drop("records of array tasks that never started (123_[5-10])")
            return None
        plain = m.group(2) is None and m.group(3) is None
        submit = self._time(row, "Submit", required=True)
        assert submit is not None  # required: a row without one is refused
        job = LogJob(line=lineno, job_id=int(m.group(1)) if plain else -1, submit=submit,
                     end=None)
        job.start = self._time(row, "Start")
        job.eligible = self._time(row, "Eligible")
        job.end = self._end(row, job.start)
        self._sizes(row, job)
        self._words(row, job)
        job.limit = self._limit(row)
        nodes = cols.get(row, "NodeList")
        if job.start is not None and nodes and nodes[1].strip() in _NEVER_RAN_NODES:
            job.start = None  # cancelled in the second it would have started
        deps: list[tuple[str, str]] = []
        line = cols.get(row, "SubmitLine")
        if line and line[1].strip():
            options = submit_options(line[1])
            job.exclusive = options.exclusive
            if options.exclusive is None and "--exclus" not in line[1] and not (
                    job.procs and job.req_procs and job.procs > job.req_procs):
                # No --exclusive on the command line, and no more CPUs than it asked for:
                # it shared nodes. (More CPUs than asked may be `#SBATCH --exclusive` in
                # its script, which SubmitLine does not show: unknown. --exclusive=user or
                # mcs shares nodes among some jobs: unknown too.)
                job.exclusive = 0
            deps = options.dependencies
            if options.bad_dependency is not None:
                counts.note("with a --dependency that could not be read (ignored)")
        return job, jobid_text, plain, deps

    def _time(self, row: list[str], name: str, required: bool = False) -> float | None:
        got = self.cols.get(row, name)
        if got is None:
            return None
        text = got[1].strip()
        if text in _NOT_A_TIME and not required:
            return None
        if text.isdigit():
            return float(text)  # SLURM_TIME_FORMAT=%s: Unix seconds, no zone to apply
        try:
            return fields.iso_time(text, self.tz)
        except FieldError:
            accepted = "YYYY-MM-DDTHH:MM:SS or Unix seconds" if required else \
                "YYYY-MM-DDTHH:MM:SS, Unix seconds, Unknown or None"
            raise _BadField(f"expected a time in column {name} ({accepted}), found "
                            f"{show(text)}") from None

    def _end(self, row: list[str], start: float | None) -> float | None:
        if self.cols.has("End"):
            return self._time(row, "End")
        if start is None:
            return None
        got = self.cols.get(row, "ElapsedRaw", "Elapsed")
        assert got is not None
        name, text = got
        try:
            seconds = fields.whole(text) if name == "ElapsedRaw" else \
                fields.slurm_duration(text, bare_minutes=False)
        except FieldError as e:
            raise _BadField(f"expected {e} in column {name}, found {show(text)}") from None
        return start + seconds

    def _limit(self, row: list[str]) -> float | str | None:
        got = self.cols.get(row, "Timelimit", "TimelimitRaw")
        assert got is not None
        name, text = got
        if not text.strip():
            return None
        try:
            return (fields.slurm_limit if name == "Timelimit" else
                    fields.slurm_limit_minutes)(text)
        except FieldError as e:
            raise _BadField(f"expected {e} in column {name}, found {show(text)}") from None

    def _sizes(self, row: list[str], job: LogJob) -> None:
        for attr, names in (("req_nodes", ("NNodes", "ReqNodes")),
                            ("procs", ("NCPUS", "AllocCPUS")), ("req_procs", ("ReqCPUS",))):
            got = self.cols.get(row, *names)
            if got is None or not got[1].strip():
                continue
            try:
                value = fields.count(got[1].strip())
            except FieldError as e:
                raise _BadField(f"expected {e} in column {got[0]}, found "
                                f"{show(got[1])}") from None
            setattr(job, attr, value if value > 0 else None)

    def _words(self, row: list[str], job: LogJob) -> None:
        for attr, name in (("user", "User"), ("account", "Account"),
                           ("partition", "Partition"), ("qos", "QOS")):
            got = self.cols.get(row, name)
            if got is not None and got[1].strip():
                setattr(job, attr, got[1].strip())
        state = self.cols.get(row, "State")
        if state is not None and state[1].strip():
            m = _STATE.fullmatch(state[1].strip())
            if m is None:
                raise _BadField("expected a job state in column State (COMPLETED, TIMEOUT, "
                                f"CANCELLED by 1000, ...), found {show(state[1])}")
            job.state = m.group(1)
            job.cancelled = job.state == "CANCELLED"
        priority = self.cols.get(row, "Priority")
        if priority is not None and priority[1].strip():
            try:
                job.priority = fields.number(priority[1].strip())
            except FieldError as e:
                raise _BadField(f"expected {e} in column Priority, found "
                                f"{show(priority[1])}") from None
        flags = self.cols.get(row, "Flags")
        if flags is not None:
            for flag in flags[1].split(","):
                if flag.strip() in STARTED_BY:
                    job.started_by = STARTED_BY[flag.strip()]


def _number_unplain(jobs: list[LogJob], no_raw: list[int], counts: Counts) -> None:
    """Array tasks (123_4) and heterogeneous components (123+1) read without a JobIDRaw
    column have no number of their own: they get the next numbers above every other id."""
    if not no_raw:
        return
    top = max((j.job_id for j in jobs), default=0)
    for k, index in enumerate(no_raw, start=1):
        jobs[index].job_id = top + k
    counts.note(f"array tasks or heterogeneous-job components without a JobIDRaw column "
                f"(numbered from {top + 1})", len(no_raw))


def _resolve_dependencies(jobs: list[LogJob], targets: dict[int, list[tuple[str, str]]],
                          job_ids: dict[str, int], counts: Counts) -> None:
    """Field 17 and 37 from the first dependency of a kind the trace has (afterok,
    afterany, afternotok); the target is the JobIDRaw of the JobID written."""
    known = {j.job_id for j in jobs}
    for index, deps in targets.items():
        job = jobs[index]
        usable = [(kind, target) for kind, target in deps if kind in MODELLED]
        if not usable:
            counts.note("with only dependencies of kinds not kept (after, aftercorr, "
                        "afterburstbuffer, singleton): none kept")
            continue
        if len(deps) > 1:
            counts.note("with more than one dependency (the first afterok, afterany or "
                        "afternotok kept)")
        kind, target = usable[0]
        resolved = job_ids.get(target)
        if resolved is None:
            digits = re.match(r"\d+", target)
            if digits is None:
                counts.note("with a dependency on a job id that could not be read (none "
                            "kept)")
                continue
            resolved = int(digits.group())
        if resolved not in known:
            counts.note("depending on a job not in the log (kept)")
        job.dep_job, job.dep_kind = resolved, DEP_KINDS[kind]
