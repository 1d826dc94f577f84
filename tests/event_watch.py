"""Watchers that record every event a daemon publishes, across its restarts: over
WatchEvents (gRPC) and over MQTT. Used by the crash test and bench/chaos.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid

import grpc

from schedd.v1 import scheduler_pb2 as pb
from schedd.v1 import scheduler_pb2_grpc as pb_grpc

FINAL_KINDS = {"completed", "killed", "cancelled", "failed"}
Seen = tuple[str, int, float, str, int]  # (epoch, seq, time, kind, job_id)


class Watcher(threading.Thread):
    """Follows WatchEvents across restarts (each daemon lifetime from its first event)
    and keeps every event it saw, in order."""

    def __init__(self, address: str):
        super().__init__(daemon=True)
        self.address = address
        self.events: list[Seen] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self._last: dict[str, int] = {}  # epoch -> last sequence number seen

    def run(self) -> None:
        while not self.done.is_set():
            with grpc.insecure_channel(self.address) as ch:
                stub = pb_grpc.SchedulerStub(ch)
                # From the first event still in the ring: after a cut the daemon may be
                # a new lifetime whose numbers start again (what was seen is skipped).
                call = stub.WatchEvents(pb.WatchEventsRequest(from_seq=1))
                try:
                    for e in call:
                        if self._last.get(e.epoch, 0) >= e.seq:
                            continue
                        self._last[e.epoch] = e.seq
                        with self.lock:
                            self.events.append((e.epoch, e.seq, e.time, e.kind, e.job_id))
                        if self.done.is_set():
                            call.cancel()
                            return
                except grpc.RpcError:
                    pass
            time.sleep(0.02)

    def seen(self) -> list[Seen]:
        with self.lock:
            return list(self.events)

    def drain(self, quiet: float = 1.0, limit: float = 60.0) -> None:
        """Wait until no event has come for `quiet` seconds (a loaded machine can leave
        the watcher thousands of events behind the daemon), then stop."""
        deadline = time.monotonic() + limit
        count = -1
        while count != len(self.events) and time.monotonic() < deadline:
            count = len(self.events)
            time.sleep(quiet)
        self.done.set()


class MqttWatcher(threading.Thread):
    """Subscribes to a daemon's event topics and keeps every event received (events are
    QoS 0: one published while the broker is down is simply not seen)."""

    def __init__(self, host: str, port: int, cluster: str):
        super().__init__(daemon=True)
        self.host, self.port, self.topic = host, port, f"schedd/{cluster}/events/#"
        self.events: list[Seen] = []
        self.lock = threading.Lock()
        self.done = threading.Event()

    def run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        import aiomqtt

        while not self.done.is_set():
            try:
                async with aiomqtt.Client(self.host, self.port,
                                          identifier=f"watch-{uuid.uuid4().hex[:8]}") as c:
                    await c.subscribe(self.topic, qos=0)
                    async for m in c.messages:
                        e = json.loads(m.payload)
                        with self.lock:
                            self.events.append((e["epoch"], e["seq"], e["time"], e["kind"],
                                                e["job_id"]))
                        if self.done.is_set():
                            return
            except aiomqtt.MqttError:
                await asyncio.sleep(0.2)
            except Exception:  # noqa: BLE001 - a bad payload must not stop the watcher
                with contextlib.suppress(Exception):
                    await asyncio.sleep(0.2)

    def seen(self) -> list[Seen]:
        with self.lock:
            return list(self.events)


def final_seen(events: list[Seen]) -> set[int]:
    return {job for _, _, _, kind, job in events if kind in FINAL_KINDS}


def announced_twice(events: list[Seen]) -> list[int]:
    """Jobs announced finished more than once (the same event seen twice is once)."""
    counts: dict[int, int] = {}
    for _, _, _, kind, job in set(events):
        if kind in FINAL_KINDS:
            counts[job] = counts.get(job, 0) + 1
    return sorted(j for j, n in counts.items() if n > 1)


def after_final(events: list[Seen]) -> list[int]:
    """Jobs with an event (other than a refusal) after they were announced finished."""
    first: dict[int, int] = {}
    for i, (_, _, _, kind, job) in enumerate(events):
        if kind in FINAL_KINDS:
            first.setdefault(job, i)
    return sorted({job for i, (_, _, _, kind, job) in enumerate(events)
                   if job in first and i > first[job] and kind != "refused"})


def all_jobs(stub: pb_grpc.SchedulerStub) -> dict[int, int]:
    jobs, token = {}, ""
    while True:
        page = stub.ListJobs(pb.ListJobsRequest(page_size=1000, page_token=token), timeout=30)
        jobs.update({j.job_id: j.state for j in page.jobs})
        token = page.next_page_token
        if not token:
            return jobs


FINAL_STATES = {pb.JOB_STATE_COMPLETED, pb.JOB_STATE_KILLED, pb.JOB_STATE_CANCELLED,
                pb.JOB_STATE_FAILED}


def regressions(stub: pb_grpc.SchedulerStub, seen: list[Seen],
                clock_seen: float) -> tuple[list[int], float | None]:
    """Right after a restart: jobs seen final that are not final now, and the clock if it
    is behind the latest reading or event time seen (else None)."""
    jobs = all_jobs(stub)
    back = sorted(j for j in final_seen(seen) if jobs.get(j) not in FINAL_STATES)
    latest = max([clock_seen, *(t for _, _, t, _, _ in seen)])
    now = stub.GetClock(pb.GetClockRequest(), timeout=10).now
    return back, (now if now < latest else None)
