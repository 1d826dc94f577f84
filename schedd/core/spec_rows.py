"""JobSpecs from a block of trace columns, and a JobSpec as plain values; compiled by
mypyc (setup.py).

`NormalizedTrace.specs()` converts the trace's columns to plain Python values a block of
rows at a time and builds one `JobSpec` per row here: interpreted, the per-row call with
nineteen arguments was about 5% of a KTH simulation (issue 21); compiled, the row is read
by index and the spec built by the compiled constructor. Values pass through as they are,
so the constructor checks their types exactly as before.
"""

from __future__ import annotations

from typing import Any, Final

from .job import JobClass, JobSpec, Notice

_CLASSES: Final[dict[str, JobClass]] = {c.value: c for c in JobClass}

# The columns `specs_of_columns` takes, in this order (schedd/traces/normalize.py).
SPEC_COLUMNS = ("job_id", "submit", "runtime", "nodes", "walltime", "user", "group",
                "job_class", "min_nodes", "checkpointable", "ckpt_gb", "setup", "req_start",
                "notice_time", "est_arrival", "est_nodes", "est_runtime", "queue",
                "ckpt_interval")


def specs_of_columns(cols: list[list[Any]]) -> list[JobSpec]:
    """One JobSpec per row of `cols` (SPEC_COLUMNS, equal lengths). An absent estimate of
    a notice defaults to the job's actual value; -1 checkpointable (absent) means yes; a
    negative setup is none."""
    (job_id, submit, runtime, nodes, walltime, user, group, job_class, min_nodes,
     checkpointable, ckpt_gb, setup, req_start, notice_time, est_arrival, est_nodes,
     est_runtime, queue, ckpt_interval) = cols
    out: list[JobSpec] = []
    for i in range(len(job_id)):
        notice = None
        told = notice_time[i]
        if told >= 0:
            arrival, n, wall = est_arrival[i], est_nodes[i], est_runtime[i]
            notice = Notice(told, arrival if arrival >= 0 else submit[i],
                            n if n > 0 else nodes[i], wall if wall > 0 else walltime[i])
        s = setup[i]
        # Positional, in JobSpec's field order: a third cheaper than keywords.
        out.append(JobSpec(job_id[i], submit[i], runtime[i], nodes[i], walltime[i], user[i],
                           group[i], _CLASSES[job_class[i]], min_nodes[i],
                           checkpointable[i] != 0, ckpt_gb[i], s if s > 0.0 else 0.0,
                           req_start[i], notice, queue[i], ckpt_interval[i]))
    return out


def plain_spec(spec: JobSpec) -> dict[str, Any]:
    """A JobSpec's fields as plain values, in field order without the notice, then the
    class as its letter: the daemon journals a submission in this form (`spec_body`) and
    builds one per job it accepts, so it is compiled (interpreted, reading sixteen
    attributes of the compiled spec was about a tenth of a SubmitJobs stream; issue 21)."""
    return {"id": spec.id, "submit": spec.submit, "runtime": spec.runtime,
            "nodes": spec.nodes, "walltime": spec.walltime, "user": spec.user,
            "project": spec.project, "min_nodes": spec.min_nodes,
            "checkpointable": spec.checkpointable, "ckpt_gb_per_node": spec.ckpt_gb_per_node,
            "setup": spec.setup, "requested_start": spec.requested_start,
            "queue": spec.queue, "ckpt_interval": spec.ckpt_interval,
            "job_class": spec.job_class.value}
