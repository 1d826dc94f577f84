"""The daemon's event stream: numbered events in a bounded ring, fanned out to watchers.

Sequence numbers start at 1 in each daemon lifetime (`epoch` names the lifetime); a
watcher resumes by asking for the events from a sequence number on, as long as they are
still in the ring. The ring keeps plain tuples (a dict per event would cost about four
times the memory at the ring's 200,000 events).

Every event is emitted after the state change it announces is in the journal (the engine
host journals an iteration's progress before it emits the iteration's events), so an
event a watcher has seen is never taken back by a restart.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

Event = dict[str, Any]


class EventLog:
    def __init__(self, cluster: str, capacity: int = 200_000):
        self.cluster = cluster
        self.epoch = uuid.uuid4().hex[:8]
        self._ring: deque[tuple[int, float, str, int, str, str, int]] = deque(maxlen=capacity)
        self._seq = 0
        self._watchers: set[asyncio.Queue[Event | None]] = set()
        self._listeners: list[Callable[[Event], None]] = []
        self.dropped_watchers = 0

    @property
    def last_seq(self) -> int:
        return self._seq

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Called synchronously for each event (the MQTT bus and the metrics use this)."""
        self._listeners.append(listener)

    def emit(self, time: float, kind: str, job_id: int = 0, state: str = "", cause: str = "",
             nodes: int = 0) -> Event:
        self._seq += 1
        event = {"seq": self._seq, "time": time, "kind": kind, "job_id": job_id,
                 "state": state, "cause": cause, "nodes": nodes, "cluster": self.cluster,
                 "epoch": self.epoch}
        self._ring.append((self._seq, time, kind, job_id, state, cause, nodes))
        for listener in self._listeners:
            listener(event)
        for queue in list(self._watchers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # a watcher that cannot keep up is cut off
                self._watchers.discard(queue)
                self.dropped_watchers += 1
                _replace_last(queue)  # the end marker tells it to resume from a seq
        return event

    def since(self, seq: int) -> list[Event]:
        """Events with sequence number >= seq still in the ring."""
        if not self._ring or seq > self._seq:
            return []
        first = self._ring[0][0]
        start = max(0, seq - first)
        return [self._event(self._ring[i]) for i in range(start, len(self._ring))]

    def _event(self, row: tuple[int, float, str, int, str, str, int]) -> Event:
        seq, time, kind, job_id, state, cause, nodes = row
        return {"seq": seq, "time": time, "kind": kind, "job_id": job_id, "state": state,
                "cause": cause, "nodes": nodes, "cluster": self.cluster, "epoch": self.epoch}

    @property
    def oldest_seq(self) -> int:
        return self._ring[0][0] if self._ring else self._seq + 1

    def watch(self, maxsize: int = 50_000) -> asyncio.Queue[Event | None]:
        queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize)
        self._watchers.add(queue)
        return queue

    def unwatch(self, queue: asyncio.Queue[Event | None]) -> None:
        self._watchers.discard(queue)

    def close(self) -> None:
        for queue in list(self._watchers):
            if queue.full():
                _replace_last(queue)
            else:
                queue.put_nowait(None)
        self._watchers.clear()


def _replace_last(queue: asyncio.Queue[Event | None]) -> None:
    """Make room for the end marker in a full queue."""
    queue.get_nowait()
    queue.put_nowait(None)
