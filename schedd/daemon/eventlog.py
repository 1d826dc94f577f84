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
        self._listeners: list[tuple[frozenset[str] | None, Callable[[Event], None]]] = []
        self.dropped_watchers = 0

    @property
    def last_seq(self) -> int:
        return self._seq

    def add_listener(self, listener: Callable[[Event], None],
                     kinds: frozenset[str] | None = None) -> None:
        """Called synchronously for each event (the MQTT bus and the metrics use this), or
        only for events of `kinds` when given: an event nobody listens to or watches is
        only put in the ring, without building its dict (a stream of 20,000 submissions
        makes 20,000 "submitted" events the metrics do not count)."""
        self._listeners.append((kinds, listener))

    def emit(self, time: float, kind: str, job_id: int = 0, state: str = "", cause: str = "",
             nodes: int = 0) -> None:
        self._seq = seq = self._seq + 1
        self._ring.append((seq, time, kind, job_id, state, cause, nodes))
        event: Event | None = None
        for kinds, listener in self._listeners:
            if kinds is None or kind in kinds:
                if event is None:
                    event = self._event((seq, time, kind, job_id, state, cause, nodes))
                listener(event)
        if not self._watchers:
            return
        if event is None:
            event = self._event((seq, time, kind, job_id, state, cause, nodes))
        for queue in list(self._watchers):
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:  # a watcher that cannot keep up is cut off
                self._watchers.discard(queue)
                self.dropped_watchers += 1
                _replace_last(queue)  # the end marker tells it to resume from a seq

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
