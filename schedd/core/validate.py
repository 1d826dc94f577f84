"""Invariant checks over the whole engine state; run after every event in tests and with
`schedd simulate --validate`."""

from __future__ import annotations

from .engine import Engine
from .job import JobState


class InvariantError(AssertionError):
    pass


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def problems(e: Engine) -> list[str]:
    out: list[str] = []
    out += [f"machine: {p}" for p in e.state.problems()]
    for key, res in e.reservations.items():
        out += [f"reservation {key}: {p}" for p in res.sub.problems()]

    # Each live job in exactly one place, consistent with its state.
    queued = [j.id for j in e.queue]
    if len(set(queued)) != len(queued):
        out.append("a job is queued twice")
    keys = [(j.submit, j.id) for j in e.queue]
    if keys != sorted(keys):
        out.append("the queue is not in (submit, id) order")
    for job_id, job in e.jobs.items():
        in_queue = job_id in set(queued)
        in_running = job_id in e.running
        if in_queue == in_running:
            out.append(f"job {job_id} ({job.state.value}) is in {'both' if in_queue else 'neither'}"
                       " of queue and running")
        if job.state.waiting != in_queue or job.state.holds_nodes != in_running:
            out.append(f"job {job_id} state {job.state.value} disagrees with its place")
        if job.state.terminal:
            out.append(f"finished job {job_id} is still live")
    if set(queued) - set(e.jobs) or set(e.running) - set(e.jobs):
        out.append("queue or running refers to unknown jobs")
    expected_ends = sorted((j.predicted_end, j.id) for j in e.running.values()
                           if j.state is JobState.RUNNING)
    if expected_ends != list(e._by_end):
        out.append("running-by-end index is stale")

    # Capacity: every node is free, down, held by a job, or held by a reservation.
    total = e.cluster.total_nodes
    held_outside = sum(j.alloc_nodes for j in e.running.values()
                       if e.exec_record(j.id).res_key is None)
    reserved = sum(r.nodes for r in e.reservations.values())
    down = e._down_nodes()
    if e.state.free_nodes + held_outside + reserved + down != total:
        out.append(f"capacity: free {e.state.free_nodes} + held {held_outside} + reserved "
                   f"{reserved} + down {down} != {total}")
    for key, res in e.reservations.items():
        inside = sum(j.alloc_nodes for j in e.running.values()
                     if e.exec_record(j.id).res_key == key)
        if inside + res.sub.free_nodes != res.nodes:
            out.append(f"reservation {key}: {inside} held + {res.sub.free_nodes} free "
                       f"!= {res.nodes}")
    # No two allocations overlap (Blue Gene/Q partitions share no midplane or switch).
    masks = [j.allocation.mask for j in e.running.values()
             if j.allocation is not None and e.exec_record(j.id).res_key is None]
    masks += [r.alloc.mask for r in e.reservations.values()]
    seen = 0
    for mask in masks:
        if seen & mask:
            out.append("two allocations overlap")
            break
        seen |= mask

    # Node-seconds: what the clock integrated equals what the jobs account.
    live = 0.0
    for job in e.jobs.values():
        x = e.exec_record(job.id)
        live += x.busy_ns
        if job.state is JobState.RUNNING:
            live += job.alloc_nodes * (e.now - x.seg_start)
        elif job.state is JobState.CHECKPOINTING:
            live += job.alloc_nodes * (e.now - x.ckpt_start)
        parts = x.since_zero_ns + x.lost_ns + x.ckpt_ns + x.restart_ns + x.setup_ns
        if not _close(x.busy_ns, parts):
            out.append(f"job {job.id}: busy {x.busy_ns} != parts {parts}")
    results = e.results
    cols = {name: results.column(name) for name in ("id", "busy_node_s", "useful_node_s",
            "lost_node_s", "ckpt_node_s", "restart_node_s", "setup_node_s")}
    finished = float(cols["busy_node_s"].sum())
    if not _close(e.busy_integral(), finished + live):
        out.append(f"node-seconds: clock {e.busy_integral()} != jobs {finished + live}")
    if len(cols["id"]):
        i = len(cols["id"]) - 1
        parts = (cols["useful_node_s"][i] + cols["lost_node_s"][i] + cols["ckpt_node_s"][i]
                 + cols["restart_node_s"][i] + cols["setup_node_s"][i])
        if not _close(cols["busy_node_s"][i], parts):
            out.append(f"job {cols['id'][i]}: busy {cols['busy_node_s'][i]} != parts {parts}")
    return out


def validate(e: Engine) -> None:
    found = problems(e)
    if found:
        raise InvariantError(f"t={e.now:g}: " + "; ".join(found))
